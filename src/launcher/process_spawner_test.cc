#include "launcher/process_spawner.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

extern char** environ;

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

// Collects on_exit calls; waits for one with a deadline.
class ExitRecorder {
 public:
  ProcessSpawner::ExitCallback callback() {
    return [this](pid_t pid, int status) {
      absl::MutexLock lock(&mu_);
      exits_[pid] = status;
      ++calls_[pid];
    };
  }
  std::optional<int> wait_for(pid_t pid, absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    auto exited = [this, pid]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return exits_.contains(pid); };
    if (!mu_.AwaitWithTimeout(absl::Condition(&exited), timeout)) return std::nullopt;
    return exits_[pid];
  }
  int calls(pid_t pid) {
    absl::MutexLock lock(&mu_);
    return calls_[pid];
  }

 private:
  absl::Mutex mu_;
  std::map<pid_t, int> exits_ ABSL_GUARDED_BY(mu_);
  std::map<pid_t, int> calls_ ABSL_GUARDED_BY(mu_);
};

std::vector<std::string> environment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::string_view(*e).starts_with("TF_CONFIG=")) continue;
    env.emplace_back(*e);
  }
  return env;
}

SpawnRequest psflow_request(std::vector<std::string> args) {
  SpawnRequest request;
  request.binary = PSFLOW_BINARY_PATH;
  request.argv = {PSFLOW_BINARY_PATH};
  request.argv.insert(request.argv.end(), args.begin(), args.end());
  request.env = environment();
  return request;
}

// A `psflow server` that runs until signalled.
SpawnRequest long_running_request() {
  return psflow_request({"server", "--job", "ps", "--task", "0", "--cluster-json",
                         R"({"ps": ["127.0.0.1:0"], "worker": ["127.0.0.1:0"]})"});
}

TEST(ProcessSpawnerTest, RunsAChildAndReportsItsExit) {
  ExitRecorder recorder;
  absl::StatusOr<std::unique_ptr<ProcessSpawner>> spawner =
      ProcessSpawner::create(recorder.callback());
  ASSERT_TRUE(spawner.ok());
  SpawnRequest request = psflow_request({"version"});
  request.log_path = ::testing::TempDir() + "/spawner_version.log";
  ::unlink(request.log_path.c_str());
  absl::StatusOr<pid_t> pid = (*spawner)->spawn(request);
  ASSERT_TRUE(pid.ok()) << pid.status();
  std::optional<int> status = recorder.wait_for(*pid, absl::Seconds(30));
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << describe_wait_status(*status);
  std::ifstream log(request.log_path);
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("psflow "));
  // Exited children can no longer be signalled.
  EXPECT_EQ((*spawner)->signal(*pid, SIGTERM).code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ProcessSpawnerTest, MissingBinaryIsNotFoundNamingIt) {
  ExitRecorder recorder;
  absl::StatusOr<std::unique_ptr<ProcessSpawner>> spawner =
      ProcessSpawner::create(recorder.callback());
  ASSERT_TRUE(spawner.ok());
  SpawnRequest request = psflow_request({"version"});
  request.binary = ::testing::TempDir() + "/no-such-psflow";
  absl::StatusOr<pid_t> pid = (*spawner)->spawn(request);
  EXPECT_EQ(pid.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(pid.status().message()), HasSubstr("no-such-psflow"));
}

TEST(ProcessSpawnerTest, SignalsAChild) {
  ExitRecorder recorder;
  absl::StatusOr<std::unique_ptr<ProcessSpawner>> spawner =
      ProcessSpawner::create(recorder.callback());
  ASSERT_TRUE(spawner.ok());
  absl::StatusOr<pid_t> pid = (*spawner)->spawn(long_running_request());
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_FALSE(recorder.wait_for(*pid, absl::ZeroDuration()).has_value());
  ASSERT_TRUE((*spawner)->signal(*pid, SIGKILL).ok());
  std::optional<int> status = recorder.wait_for(*pid, absl::Seconds(30));
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL);
  EXPECT_EQ(describe_wait_status(*status), "was killed by SIGKILL");
  EXPECT_EQ(recorder.calls(*pid), 1);
}

TEST(ProcessSpawnerTest, UnknownPidIsNotFound) {
  ExitRecorder recorder;
  absl::StatusOr<std::unique_ptr<ProcessSpawner>> spawner =
      ProcessSpawner::create(recorder.callback());
  ASSERT_TRUE(spawner.ok());
  EXPECT_EQ((*spawner)->signal(::getpid(), 0).code(), absl::StatusCode::kNotFound);
}

TEST(ProcessSpawnerTest, ShutdownKillsAndReapsRunningChildren) {
  ExitRecorder recorder;
  absl::StatusOr<std::unique_ptr<ProcessSpawner>> spawner =
      ProcessSpawner::create(recorder.callback());
  ASSERT_TRUE(spawner.ok());
  absl::StatusOr<pid_t> a = (*spawner)->spawn(long_running_request());
  absl::StatusOr<pid_t> b = (*spawner)->spawn(long_running_request());
  ASSERT_TRUE(a.ok() && b.ok());
  (*spawner)->shutdown();
  // shutdown() returns after reaping, so both exits are recorded already.
  EXPECT_TRUE(recorder.wait_for(*a, absl::ZeroDuration()).has_value());
  EXPECT_TRUE(recorder.wait_for(*b, absl::ZeroDuration()).has_value());
  EXPECT_EQ((*spawner)->spawn(long_running_request()).status().code(),
            absl::StatusCode::kFailedPrecondition);
  (*spawner)->shutdown();  // Idempotent.
}

TEST(ProcessSpawnerTest, DescribesExitCodes) {
  EXPECT_EQ(describe_wait_status(3 << 8), "exited with code 3");
}

}  // namespace
}  // namespace psflow::internal

// `psflow local-cluster` as a real process: its tasks must never outlive it.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "psflow/tls_options.h"
#include "rpc/channel.h"
#include "rpc/transport_credentials.h"
#include "security/cluster_certificates.h"
#include "security/private_file.h"
#include "test_process.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::TestProcess;

struct TaskLine {
  std::string job;
  int index = -1;
  std::string address;
  pid_t pid = -1;
};

// Parses "<job> <index> <address> pid=<pid>".
bool parse_task_line(const std::string& line, TaskLine& task) {
  std::vector<std::string> parts = absl::StrSplit(line, ' ');
  if (parts.size() != 4 || parts[3].rfind("pid=", 0) != 0) return false;
  task.job = parts[0];
  task.address = parts[2];
  int pid = 0;
  if (!absl::SimpleAtoi(parts[1], &task.index) || !absl::SimpleAtoi(parts[3].substr(4), &pid)) {
    return false;
  }
  task.pid = pid;
  return pid > 0;
}

// Starts `psflow local-cluster` and reads its task lines up to "ready".
std::vector<TaskLine> start_launcher(TestProcess& launcher, size_t expected_tasks) {
  std::vector<TaskLine> tasks;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  // Bounded: the task lines, "ready", and a little slack.
  for (size_t i = 0; i < expected_tasks + 4; ++i) {
    std::optional<std::string> line = launcher.read_line(deadline);
    if (!line.has_value()) {
      ADD_FAILURE() << "launcher gave no 'ready' line; stderr:\n"
                    << launcher.read_stderr(absl::Now() + absl::Seconds(1));
      return tasks;
    }
    if (*line == "ready") return tasks;
    TaskLine task;
    if (!parse_task_line(*line, task)) {
      ADD_FAILURE() << "unexpected launcher line: '" << *line << "'";
      continue;
    }
    tasks.push_back(task);
  }
  ADD_FAILURE() << "no 'ready' after " << expected_tasks + 4 << " lines";
  return tasks;
}

// Pidfds opened before the launcher dies, so a reused pid cannot fool us.
std::vector<int> open_pidfds(const std::vector<TaskLine>& tasks) {
  std::vector<int> fds;
  for (const TaskLine& task : tasks) {
    const int fd = ::psflow::internal::testing::pidfd_open(task.pid);
    EXPECT_GE(fd, 0) << task.job << " " << task.index << " pid " << task.pid << " is not running";
    fds.push_back(fd);
  }
  return fds;
}

// Waits until every pidfd reports its process exited, up to `deadline`;
// returns the indices still running.
std::vector<size_t> still_running(const std::vector<int>& fds, absl::Time deadline) {
  std::vector<size_t> running;
  for (size_t i = 0; i < fds.size(); ++i) {
    if (fds[i] < 0) continue;
    if (!::psflow::internal::testing::wait_readable(fds[i], deadline)) running.push_back(i);
  }
  return running;
}

void close_all(const std::vector<int>& fds) {
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
}

// Certificates for the launcher's tasks (its own fresh CA is private to
// it), made here so that this process can talk to the tasks as their chief;
// removed at the end of the test.
// Thread-safety: owned by one test.
class TestCredentials {
 public:
  TestCredentials() : dir_(make_private_temp_directory("psflow-cli-tls-").value_or("")) {
    std::vector<CertifiedTask> tasks = {{"chief", 0, "127.0.0.1"}};
    for (int i = 0; i < 2; ++i) tasks.push_back({"ps", i, "127.0.0.1"});
    for (int i = 0; i < 3; ++i) tasks.push_back({"worker", i, "127.0.0.1"});
    EXPECT_TRUE(write_cluster_certificates(tasks, dir_).ok());
    EXPECT_TRUE(set_process_tls(TlsOptions{.dir = dir_}, "chief", 0).ok());
  }
  ~TestCredentials() {
    set_default_tls(nullptr);
    std::error_code error;
    std::filesystem::remove_all(dir_, error);
  }
  TestCredentials(const TestCredentials&) = delete;
  TestCredentials& operator=(const TestCredentials&) = delete;
  [[nodiscard]] const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

// Without `credentials`, the launcher makes a fresh CA of its own.
TestProcess launch_local_cluster(const TestCredentials* credentials = nullptr) {
  std::vector<std::string> argv = {
      PSFLOW_BINARY_PATH, "local-cluster", "--num-ps", "2", "--num-workers", "3"};
  if (credentials != nullptr) argv.insert(argv.end(), {"--tls-dir", credentials->dir()});
  return TestProcess(std::move(argv), ::psflow::internal::testing::test_environment());
}

TEST(LocalClusterCliTest, TasksDieWhenLauncherIsKilledWithSigkill) {
  const TestCredentials credentials;
  TestProcess launcher = launch_local_cluster(&credentials);
  ASSERT_GT(launcher.pid(), 0);
  std::vector<TaskLine> tasks = start_launcher(launcher, 5);
  ASSERT_EQ(tasks.size(), 5u);
  int ps = 0;
  int workers = 0;
  for (const TaskLine& task : tasks) {
    // Each line names a live task that answers as itself.
    absl::StatusOr<v1::GetStatusResponse> status =
        get_status(task.address, task.job, task.index, absl::Now() + absl::Seconds(10));
    ASSERT_TRUE(status.ok()) << status.status();
    // Over mutual TLS only.
    ChannelOptions plaintext;
    plaintext.plaintext = true;
    EXPECT_FALSE(get_status(create_channel(task.address, plaintext), task.address, task.job,
                            task.index, absl::Now() + absl::Seconds(10))
                     .ok());
    EXPECT_EQ(status->job_name(), task.job);
    EXPECT_EQ(status->task_index(), task.index);
    EXPECT_EQ(status->pid(), task.pid);
    (task.job == "ps" ? ps : workers)++;
  }
  EXPECT_EQ(ps, 2);
  EXPECT_EQ(workers, 3);
  const std::vector<int> fds = open_pidfds(tasks);

  ASSERT_TRUE(launcher.signal(SIGKILL));
  std::optional<int> launcher_status = launcher.wait(absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(launcher_status.has_value());
  EXPECT_TRUE(WIFSIGNALED(*launcher_status) && WTERMSIG(*launcher_status) == SIGKILL);

  const std::vector<size_t> running = still_running(fds, absl::Now() + absl::Seconds(10));
  for (size_t i : running) {
    ADD_FAILURE() << tasks[i].job << " " << tasks[i].index << " (pid " << tasks[i].pid
                  << ") outlived its SIGKILLed launcher";
    ::kill(tasks[i].pid, SIGKILL);  // Do not leak it past the test.
  }
  close_all(fds);
}

TEST(LocalClusterCliTest, SigtermStopsTasksAndExits143) {
  TestProcess launcher = launch_local_cluster();
  ASSERT_GT(launcher.pid(), 0);
  std::vector<TaskLine> tasks = start_launcher(launcher, 5);
  ASSERT_EQ(tasks.size(), 5u);
  const std::vector<int> fds = open_pidfds(tasks);

  ASSERT_TRUE(launcher.signal(SIGTERM));
  EXPECT_EQ(launcher.wait_exit_code(absl::Now() + absl::Seconds(10)), 143);
  // The launcher reaps its tasks before exiting, so they are gone already.
  const std::vector<size_t> running = still_running(fds, absl::Now());
  EXPECT_TRUE(running.empty()) << running.size() << " tasks still running";
  for (size_t i : running) ::kill(tasks[i].pid, SIGKILL);
  close_all(fds);
}

// The fresh credentials directories of launcher `pid` in the temporary
// directory (scan bounded like the launcher's own).
std::vector<std::string> credentials_dirs_of(pid_t pid) {
  const std::string prefix = absl::StrCat("psflow-tls-", pid, "-");
  std::vector<std::string> found;
  std::error_code error;
  int scanned = 0;
  for (const auto& entry : std::filesystem::directory_iterator(temp_directory_root(), error)) {
    if (++scanned > 100000) break;
    if (entry.path().filename().string().rfind(prefix, 0) == 0) {
      found.push_back(entry.path().string());
    }
  }
  return found;
}

// A SIGKILLed launcher cannot remove its fresh credentials; the next local
// cluster of the same user does.
TEST(LocalClusterCliTest, TheNextLauncherRemovesTheCredentialsOfAKilledOne) {
  TestProcess first = launch_local_cluster();
  ASSERT_GT(first.pid(), 0);
  const pid_t first_pid = first.pid();
  std::vector<TaskLine> tasks = start_launcher(first, 5);
  ASSERT_EQ(tasks.size(), 5u);
  const std::vector<int> fds = open_pidfds(tasks);
  EXPECT_EQ(credentials_dirs_of(first_pid).size(), 1u);
  ASSERT_TRUE(first.signal(SIGKILL));
  ASSERT_TRUE(first.wait(absl::Now() + absl::Seconds(10)).has_value());
  EXPECT_TRUE(still_running(fds, absl::Now() + absl::Seconds(10)).empty());
  close_all(fds);
  const std::vector<std::string> left = credentials_dirs_of(first_pid);
  ASSERT_EQ(left.size(), 1u) << "the killed launcher's directory should still be there";

  TestProcess second = launch_local_cluster();
  ASSERT_GT(second.pid(), 0);
  EXPECT_EQ(start_launcher(second, 5).size(), 5u);
  EXPECT_FALSE(std::filesystem::exists(left[0])) << left[0];
  EXPECT_EQ(credentials_dirs_of(second.pid()).size(), 1u);
  ASSERT_TRUE(second.signal(SIGTERM));
  EXPECT_EQ(second.wait_exit_code(absl::Now() + absl::Seconds(10)), 143);
  EXPECT_TRUE(credentials_dirs_of(second.pid()).empty());
}

}  // namespace
}  // namespace psflow::internal

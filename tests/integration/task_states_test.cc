// Cluster task states (ClusterCoordinator::get_task_states, TF's
// coordination-service get_task_states) and the watchdog's thread-stack
// dump, against real ps and worker processes (LocalCluster): a paused
// worker misses its heartbeats and is reported unavailable by name, then
// healthy again; a restarted ps is counted; a worker down for good stays
// unavailable; `psflow status` reads the states from a chief's status
// service; a stalled coordinator's watchdog writes every thread's stack to
// the run directory.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/test_util.h"
#include "coordinator/coordinator_test_util.h"
#include "coordinator/status_server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/strategy.h"
#include "test_process.h"
#include "train/status_endpoint.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::kTestTimeout;
using ::psflow::internal::testing::test_environment;
using ::psflow::internal::testing::TestProcess;
using ::testing::HasSubstr;

constexpr char kWorker0[] = "/job:worker/replica:0/task:0";
constexpr char kWorker1[] = "/job:worker/replica:0/task:1";
constexpr char kPs0[] = "/job:ps/replica:0/task:0";

TaskState state_of(const ClusterCoordinator& coordinator, const std::string& task) {
  for (TaskState& s : coordinator.get_task_states()) {
    if (s.task == task) return s;
  }
  return TaskState{task, absl::NotFoundError("no such task in get_task_states"), 0};
}

// Polls get_task_states (it never blocks: heartbeats update it in the
// background) until `task`'s state satisfies `want`, for at most
// kTestTimeout; the last state seen. The short pause between polls only
// spares the shared CPU; nothing is synchronised by it.
TaskState await_state(const ClusterCoordinator& coordinator, const std::string& task,
                      const std::function<bool(const TaskState&)>& want) {
  const absl::Time deadline = absl::Now() + kTestTimeout;
  TaskState state = state_of(coordinator, task);
  while (!want(state) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
    state = state_of(coordinator, task);
  }
  return state;
}

bool healthy(const TaskState& s) { return s.healthy(); }
bool unhealthy(const TaskState& s) { return !s.healthy(); }

class TaskStatesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LocalClusterOptions options;
    options.num_ps = 1;
    options.num_workers = 2;
    options.max_restarts = 1;
    options.binary_path = PSFLOW_TESTING_BINARY_PATH;
    cluster_ = ok_value(LocalCluster::start(options));
    strategy_ = ok_value(ParameterServerStrategy::create(
        SimpleClusterResolver(cluster_->cluster_spec(), "chief", 0)));
  }
  void TearDown() override {
    // A paused task would hold up the cluster's stop.
    for (int i = 0; i < 2; ++i) (void)cluster_->signal_task("worker", i, SIGCONT);
  }

  std::unique_ptr<ClusterCoordinator> coordinator(ClusterCoordinatorOptions options = {}) {
    options.heartbeat_interval = absl::Milliseconds(100);
    options.heartbeat_timeout = absl::Seconds(1);
    return ok_value(ClusterCoordinator::create(*strategy_, options));
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<ParameterServerStrategy> strategy_;
};

TEST_F(TaskStatesTest, EveryTaskInOrderHealthyAtFirst) {
  auto c = coordinator();
  const std::vector<TaskState> states = c->get_task_states();
  ASSERT_EQ(states.size(), 3u);
  EXPECT_EQ(states[0].task, kWorker0);
  EXPECT_EQ(states[1].task, kWorker1);
  EXPECT_EQ(states[2].task, kPs0);
  for (const TaskState& s : states) {
    EXPECT_TRUE(s.healthy()) << s.error;
    EXPECT_EQ(s.restarts, 0);
  }
}

TEST_F(TaskStatesTest, APausedWorkerIsUnavailableByNameThenHealthyAgain) {
  auto c = coordinator();
  ASSERT_TRUE(cluster_->signal_task("worker", 1, SIGSTOP).ok());
  const TaskState paused = await_state(*c, kWorker1, unhealthy);
  EXPECT_EQ(paused.error.code(), absl::StatusCode::kUnavailable) << paused.error;
  EXPECT_THAT(paused.error.message(),
              HasSubstr(absl::StrCat("Task ", kWorker1, " heartbeat timeout")));
  // The others stay healthy meanwhile.
  EXPECT_TRUE(state_of(*c, kWorker0).healthy());
  EXPECT_TRUE(state_of(*c, kPs0).healthy());

  ASSERT_TRUE(cluster_->signal_task("worker", 1, SIGCONT).ok());
  const TaskState resumed = await_state(*c, kWorker1, healthy);
  EXPECT_TRUE(resumed.healthy()) << resumed.error;
  EXPECT_EQ(resumed.restarts, 0);  // the same process
}

TEST_F(TaskStatesTest, ARestartedPsIsCountedAndAWorkerDownForGoodStaysUnavailable) {
  auto c = coordinator();
  // The first heartbeat records the ps's incarnation.
  const uint64_t first =
      await_state(*c, kPs0, [](const TaskState& s) { return s.incarnation != 0; }).incarnation;
  ASSERT_NE(first, 0u);
  ASSERT_TRUE(cluster_->signal_task("ps", 0, SIGKILL).ok());
  ASSERT_TRUE(cluster_->wait_for_restart("ps", 0, 1, kTestTimeout).ok());
  const TaskState ps = await_state(*c, kPs0, [](const TaskState& s) { return s.restarts == 1; });
  EXPECT_EQ(ps.restarts, 1) << ps.error;
  EXPECT_TRUE(ps.healthy()) << ps.error;
  EXPECT_NE(ps.incarnation, first);

  // max_restarts = 1: the second kill leaves worker 0 down.
  ASSERT_TRUE(cluster_->signal_task("worker", 0, SIGKILL).ok());
  ASSERT_TRUE(cluster_->wait_for_restart("worker", 0, 1, kTestTimeout).ok());
  ASSERT_TRUE(cluster_->signal_task("worker", 0, SIGKILL).ok());
  const TaskState down = await_state(*c, kWorker0, unhealthy);
  EXPECT_EQ(down.error.code(), absl::StatusCode::kUnavailable) << down.error;
  EXPECT_THAT(down.error.message(),
              HasSubstr(absl::StrCat("Task ", kWorker0, " heartbeat timeout")));
  EXPECT_THAT(down.error.message(), HasSubstr("last error"));
  EXPECT_TRUE(state_of(*c, kWorker1).healthy());
}

// `psflow status` against a chief's status endpoint (what `psflow train
// --run-dir` starts), over a run directory and over an address.
TEST_F(TaskStatesTest, StatusCommandReadsTheStatesOfARunningChief) {
  auto c = coordinator();
  const std::string run_dir = ::testing::TempDir() + "/task_states_status_run";
  std::filesystem::remove_all(run_dir);
  std::filesystem::create_directories(run_dir);
  auto endpoint = ok_value(StatusEndpoint::start(*c, run_dir));
  const auto status = [&](std::vector<std::string> flags, std::string* out, std::string* err) {
    std::vector<std::string> argv = {PSFLOW_BINARY_PATH, "status"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    TestProcess p(argv, test_environment());
    const absl::Time deadline = absl::Now() + kTestTimeout;
    *out = p.read_stdout(deadline);
    *err = p.read_stderr(deadline);
    return p.wait_exit_code(deadline);
  };
  std::string out, err;
  EXPECT_EQ(status({"--run-dir", run_dir}, &out, &err), 0) << err;
  EXPECT_THAT(out, HasSubstr(absl::StrCat(kWorker0, " healthy\n")));
  EXPECT_THAT(out, HasSubstr(absl::StrCat(kWorker1, " healthy\n")));
  EXPECT_THAT(out, HasSubstr(absl::StrCat(kPs0, " healthy\n")));

  ASSERT_TRUE(cluster_->signal_task("worker", 1, SIGSTOP).ok());
  ASSERT_FALSE(await_state(*c, kWorker1, unhealthy).healthy());
  EXPECT_EQ(status({"--address", endpoint->address()}, &out, &err), 1) << err;
  EXPECT_THAT(out, HasSubstr(absl::StrCat(kWorker1, " UNAVAILABLE: Task ", kWorker1,
                                          " heartbeat timeout")));
  EXPECT_THAT(out, HasSubstr(absl::StrCat(kWorker0, " healthy\n")));
  EXPECT_EQ(status({"--address", endpoint->address(), "--task", kPs0}, &out, &err), 0) << err;
  EXPECT_EQ(out, absl::StrCat(kPs0, " healthy\n"));

  // Bad requests are refused, and the service stays up.
  EXPECT_EQ(status({"--run-dir", run_dir, "--task", "/job:worker/replica:0/task:7"}, &out, &err),
            2);
  EXPECT_THAT(err, HasSubstr("unknown task '/job:worker/replica:0/task:7'"));
  absl::StatusOr<std::vector<TaskState>> twice =
      fetch_task_states(endpoint->address(), absl::Now() + kTestTimeout, {kPs0, kPs0});
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::vector<TaskState>> long_name =
      fetch_task_states(endpoint->address(), absl::Now() + kTestTimeout, {std::string(1000, 'x')});
  EXPECT_EQ(long_name.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ok_value(fetch_task_states(endpoint->address(), absl::Now() + kTestTimeout)).size(),
            3u);

  // A chief that stopped serving leaves no address behind.
  endpoint.reset();
  EXPECT_FALSE(std::filesystem::exists(run_dir + "/" + kStatusAddressFile));
  EXPECT_EQ(status({"--run-dir", run_dir}, &out, &err), 1);
  EXPECT_THAT(err, HasSubstr("status_address does not exist"));
  EXPECT_EQ(status({}, &out, &err), 2);
}

// End to end: `psflow train --run-dir D` serves its task states while it
// trains, `psflow status --run-dir D` prints them, and the address file
// goes when the chief stops.
TEST(TaskStatesCliTest, StatusReadsTheTaskStatesOfARunningPsflowTrain) {
  const std::string run_dir = ::testing::TempDir() + "/task_states_train_run";
  std::filesystem::remove_all(run_dir);
  TestProcess train({PSFLOW_BINARY_PATH, "train", "--num-ps", "1", "--num-workers", "2", "--epochs",
                     "20", "--batch-size", "128", "--run-dir", run_dir},
                    test_environment());
  ASSERT_GT(train.pid(), 0);
  // The first progress line comes after the coordinator (and its status
  // service) started. Bounded by the deadline (read_line returns nullopt).
  const absl::Time started = absl::Now() + absl::Seconds(120);
  std::string out;
  for (std::optional<std::string> line; (line = train.read_line(started)).has_value();) {
    out += *line + "\n";
    if (line->starts_with("epoch 1/20 [")) break;
  }
  ASSERT_THAT(out, HasSubstr("epoch 1/20 [")) << train.read_stderr(absl::Now());
  ASSERT_TRUE(std::filesystem::exists(run_dir + "/" + kStatusAddressFile));

  TestProcess status({PSFLOW_BINARY_PATH, "status", "--run-dir", run_dir}, test_environment());
  const absl::Time deadline = absl::Now() + kTestTimeout;
  const std::string printed = status.read_stdout(deadline);
  EXPECT_EQ(status.wait_exit_code(deadline), 0) << printed << status.read_stderr(deadline);
  EXPECT_EQ(printed,
            absl::StrCat(kWorker0, " healthy\n", kWorker1, " healthy\n", kPs0, " healthy\n"));

  EXPECT_TRUE(train.signal(SIGTERM));
  EXPECT_EQ(train.wait_exit_code(absl::Now() + kTestTimeout), 143);
  EXPECT_FALSE(std::filesystem::exists(run_dir + "/" + kStatusAddressFile));
}

TEST_F(TaskStatesTest, AStalledWatchdogWritesEveryThreadStackToTheRunDirectory) {
  const std::string run_dir = ::testing::TempDir() + "/task_states_watchdog_run";
  std::filesystem::remove_all(run_dir);
  std::filesystem::create_directories(run_dir);
  ClusterCoordinatorOptions options;
  options.watchdog_timeout = absl::Milliseconds(300);
  options.stack_dump_dir = run_dir;
  auto c = coordinator(options);
  // Both workers paused: the closure cannot finish, so the watchdog fires.
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(cluster_->signal_task("worker", i, SIGSTOP).ok());
  RemoteValue echo = ok_value(c->schedule("testing/echo", RemoteStructure(Structure(int64_t{7}))));
  std::string dump;
  const absl::Time deadline = absl::Now() + kTestTimeout;
  while (dump.empty() && absl::Now() < deadline) {
    for (const auto& entry : std::filesystem::directory_iterator(run_dir)) {
      if (entry.path().filename().string().starts_with("watchdog-stacks-")) {
        dump = entry.path().string();
      }
    }
    if (dump.empty()) absl::SleepFor(absl::Milliseconds(10));  // spares the CPU only
  }
  ASSERT_FALSE(dump.empty()) << "no watchdog-stacks-* file in " << run_dir;
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(cluster_->signal_task("worker", i, SIGCONT).ok());
  EXPECT_TRUE(c->join().ok());
  EXPECT_EQ(ok_value(echo.fetch()), Structure(int64_t{7}));

  // The file may still be being written when it appears: read it once the
  // watchdog has moved on (join returned, the closure finished).
  c.reset();
  std::ifstream in(dump);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("(this thread):"));
  EXPECT_THAT(text.str(), HasSubstr("CoordinatorWatchdog"));
  EXPECT_THAT(text.str(), HasSubstr("WorkerDispatcher"));
  EXPECT_THAT(text.str(), HasSubstr("==== End of stack traces ===="));
}

}  // namespace
}  // namespace psflow::internal

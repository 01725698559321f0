// Every command stops on the first SIGTERM or SIGINT within the stop bound
// (10 s), with status 128+signal; `psflow train` cancels its closures and
// saves a checkpoint a rerun resumes from (docs/fault_tolerance.md,
// "Stopping"). Real processes; no sleeps: the tests wait for output lines
// and process exits, each with a deadline.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test_process.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::pidfd_open;
using ::psflow::internal::testing::test_environment;
using ::psflow::internal::testing::TestProcess;
using ::psflow::internal::testing::wait_readable;
using ::testing::HasSubstr;

// The documented bound (kDefaultStopTimeout, psflow train --stop-timeout).
constexpr absl::Duration kStopBound = absl::Seconds(10);
// Room for a loaded machine (the test suite runs two tests at a time on
// 2 cores) on top of a stop that should take a moment.
constexpr absl::Duration kSlack = absl::Seconds(5);
// Start-up and training up to the first progress line.
constexpr absl::Duration kStartTimeout = absl::Seconds(120);
// Training steps of one epoch of Fashion-MNIST at batch 128.
constexpr int64_t kStepsPerEpoch = 60000 / 128;

// What a `psflow train` run printed up to a line, and its tasks' pids.
struct Progress {
  std::string out;
  std::vector<pid_t> ps;
  std::vector<pid_t> workers;
};

// Reads stdout lines up to the first that starts with `prefix`, noting
// the "<job> <index> <address> pid=<pid>" lines on the way. False at EOF
// or the deadline.
bool read_until(TestProcess& process, std::string_view prefix, Progress& progress,
                absl::Duration timeout = kStartTimeout) {
  const absl::Time deadline = absl::Now() + timeout;
  // Bounded by the deadline (read_line returns nullopt past it).
  for (;;) {
    std::optional<std::string> line = process.read_line(deadline);
    if (!line.has_value()) return false;
    progress.out += *line + "\n";
    std::vector<std::string> parts = absl::StrSplit(*line, ' ');
    int pid = 0;
    if (parts.size() == 4 && (parts[0] == "ps" || parts[0] == "worker") &&
        parts[3].rfind("pid=", 0) == 0 && absl::SimpleAtoi(parts[3].substr(4), &pid)) {
      (parts[0] == "ps" ? progress.ps : progress.workers).push_back(pid);
    }
    if (line->rfind(prefix, 0) == 0) return true;
  }
}

// Sends `signo` and waits for the exit: the exit code (-1 when killed or
// still running after `bound` plus slack) and the time it took.
struct Stopped {
  int code = -1;
  absl::Duration took;
};
Stopped signal_and_wait(TestProcess& process, int signo, absl::Duration bound = kStopBound) {
  const absl::Time sent = absl::Now();
  EXPECT_TRUE(process.signal(signo));
  // Slack past the bound only so that a failure reports the code.
  const int code = process.wait_exit_code(sent + bound + absl::Seconds(5));
  const Stopped stopped{code, absl::Now() - sent};
  std::printf("[ measured ] stopped with %d in %s\n", code,
              absl::FormatDuration(stopped.took).c_str());
  return stopped;
}

std::vector<std::string> train_argv(const std::string& run_dir, int num_ps, int num_workers,
                                    int epochs = 1) {
  return {PSFLOW_BINARY_PATH, "train",
          "--num-ps",         absl::StrCat(num_ps),
          "--num-workers",    absl::StrCat(num_workers),
          "--epochs",         absl::StrCat(epochs),
          "--batch-size",     "128",
          "--run-dir",        run_dir};
}

// For the tests that pause the worker: the stop must find a closure in
// flight on it. Enough epochs that training is still under way when the
// signal comes, and a first closure long enough (400 of the epoch's 468
// steps, seconds of work) that the pause, sent as soon as the chief says it
// sent that closure, lands inside it.
constexpr int kLongRunEpochs = 20;
constexpr char kLongClosureSteps[] = "400";

// The environment of a run whose closures the test must catch in flight:
// the chief logs, at debug level, each closure it sends.
std::vector<std::string> debug_log_environment() {
  return test_environment({{"PSFLOW_LOG_LEVEL", "debug"}});
}

// Reads the chief's stderr until it has sent the first training closure
// to a worker: a pause of that worker from then on finds the closure in
// flight (it runs kLongClosureSteps steps), and the stop has one to wait
// for. Called before any progress line is read: the first one is printed
// when the first closure is back, and a pause then could land between two
// closures, with nothing in flight.
bool read_until_a_training_closure_is_sent(TestProcess& process, std::string& err) {
  const absl::Time deadline = absl::Now() + kStartTimeout;
  // Bounded by the deadline (read_stderr_line returns nullopt past it).
  for (;;) {
    std::optional<std::string> line = process.read_stderr_line(deadline);
    if (!line.has_value()) return false;
    err += *line + "\n";
    if (line->find("sent closure") != std::string::npos &&
        line->find("(train/classifier_steps) to /job:worker") != std::string::npos) {
      return true;
    }
  }
}

std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

// Starts a long run of one worker whose closures run kLongClosureSteps
// steps (with `extra` flags) and pauses the worker once the chief has sent
// it a training closure: a stop then has a closure in flight that never
// comes back. Appends the chief's stderr read so far to `err`.
void start_and_pause_the_worker(const std::string& dir, const std::vector<std::string>& extra,
                                std::unique_ptr<TestProcess>& train, std::string& err) {
  std::vector<std::string> argv = train_argv(fresh_dir(dir), 1, 1, kLongRunEpochs);
  argv.insert(argv.end(), {"--steps-per-execution", kLongClosureSteps});
  argv.insert(argv.end(), extra.begin(), extra.end());
  train = std::make_unique<TestProcess>(argv, debug_log_environment());
  ASSERT_GT(train->pid(), 0);
  Progress progress;
  // The placement line comes after the tasks' pid lines and before any
  // closure is sent.
  ASSERT_TRUE(read_until(*train, "ps bytes:", progress)) << progress.out;
  ASSERT_EQ(progress.workers.size(), 1u) << progress.out;
  ASSERT_TRUE(read_until_a_training_closure_is_sent(*train, err)) << err;
  // Dies with the chief (PR_SET_PDEATHSIG's SIGKILL ends stopped tasks too).
  ASSERT_EQ(::kill(progress.workers[0], SIGSTOP), 0);
}

// SIGTERM in the middle of the epoch: the closures in flight are cancelled
// and come back, a checkpoint of the steps done is saved, the exit status
// is 143 within the bound. A rerun resumes in the middle of the epoch and
// ends with the optimizer's iterations equal to the steps it counts.
TEST(StopSignalCliTest, SigtermMidEpochSavesACheckpointThatARerunResumesFrom) {
  const std::string run_dir = fresh_dir("psflow-stop-sigterm");
  const std::vector<std::string> argv = train_argv(run_dir, 2, 2);
  std::string checkpoint;
  int64_t saved_steps = 0;
  {
    TestProcess first(argv, test_environment());
    ASSERT_GT(first.pid(), 0);
    Progress progress;
    ASSERT_TRUE(read_until(first, "epoch 1/1 [", progress))
        << progress.out << first.read_stderr(absl::Now() + absl::Seconds(1));
    const Stopped stopped = signal_and_wait(first, SIGTERM);
    const std::string out = progress.out + first.read_stdout(absl::Now() + absl::Seconds(5));
    ASSERT_EQ(stopped.code, 143) << out << first.read_stderr(absl::Now() + absl::Seconds(1));
    EXPECT_LE(stopped.took, kStopBound);
    const std::string saved = "interrupted by SIGTERM during epoch 1/1: saved ";
    const size_t at = out.find(saved);
    ASSERT_NE(at, std::string::npos) << out;
    checkpoint = out.substr(at + saved.size());
    checkpoint = checkpoint.substr(0, checkpoint.find(';'));
    const size_t number = checkpoint.rfind("ckpt-");
    ASSERT_NE(number, std::string::npos) << checkpoint;
    ASSERT_TRUE(absl::SimpleAtoi(checkpoint.substr(number + 5), &saved_steps)) << checkpoint;
  }
  EXPECT_TRUE(std::filesystem::is_directory(checkpoint)) << checkpoint;
  // Mid-epoch: part of it trained, not all.
  EXPECT_GT(saved_steps, 0);
  EXPECT_LT(saved_steps, kStepsPerEpoch);
  // An interrupted run writes no summary (the evaluator's sign of the end),
  // but its record says how this invocation ended.
  EXPECT_FALSE(std::filesystem::exists(run_dir + "/summary.json"));
  {
    std::ifstream file(run_dir + "/run_record.json");
    ASSERT_TRUE(file.good()) << "no run_record.json";
    const nlohmann::json record = nlohmann::json::parse(file);
    ASSERT_EQ(record["invocations"].size(), 1u) << record.dump(2);
    EXPECT_EQ(record["invocations"][0]["ended"], "stopped");
    EXPECT_EQ(record["invocations"][0]["reason"], "interrupted by SIGTERM");
    EXPECT_GT(record["invocations"][0]["steps"].get<int64_t>(), 0);
    EXPECT_TRUE(record["history"].empty());  // no epoch ended
  }

  TestProcess second(argv, test_environment());
  ASSERT_GT(second.pid(), 0);
  const std::string out = second.read_stdout(absl::Now() + absl::Seconds(300));
  ASSERT_EQ(second.wait_exit_code(absl::Now() + absl::Seconds(30)), 0)
      << out << second.read_stderr(absl::Now() + absl::Seconds(1));
  EXPECT_THAT(out, HasSubstr(absl::StrCat("resuming from ", checkpoint, ": ", saved_steps,
                                          " steps done, starting at epoch 1 at step ",
                                          saved_steps + 1, " of ", kStepsPerEpoch)));
  std::ifstream file(run_dir + "/summary.json");
  ASSERT_TRUE(file.good());
  const nlohmann::json summary = nlohmann::json::parse(file);
  EXPECT_EQ(summary["restored_steps"], saved_steps);
  EXPECT_EQ(summary["steps"], kStepsPerEpoch);
  EXPECT_EQ(summary["optimizer_iterations"], summary["steps"]) << summary.dump(2);
  EXPECT_EQ(summary["history"][0]["steps"], kStepsPerEpoch - saved_steps);
  ASSERT_EQ(summary["invocations"].size(), 2u) << summary.dump(2);
  EXPECT_EQ(summary["invocations"][0]["ended"], "stopped");
  EXPECT_EQ(summary["invocations"][1]["ended"], "complete");
  EXPECT_EQ(summary["invocations"][1]["first_step"], saved_steps);
  // One epoch's accuracy (about 0.83): the two halves made one model.
  EXPECT_GT(summary["test_accuracy"].get<double>(), 0.78) << summary.dump(2);
}

// SIGINT (Ctrl-C) the same way: 130, and the local cluster's tasks are
// gone when it exits.
TEST(StopSignalCliTest, SigintExits130AndStopsTheLocalCluster) {
  TestProcess train(train_argv(fresh_dir("psflow-stop-sigint"), 1, 1), test_environment());
  ASSERT_GT(train.pid(), 0);
  Progress progress;
  ASSERT_TRUE(read_until(train, "epoch 1/1 [", progress)) << progress.out;
  std::vector<int> tasks;
  for (pid_t pid : progress.ps) tasks.push_back(pidfd_open(pid));
  for (pid_t pid : progress.workers) tasks.push_back(pidfd_open(pid));
  ASSERT_EQ(tasks.size(), 2u) << progress.out;
  const Stopped stopped = signal_and_wait(train, SIGINT);
  const std::string out = progress.out + train.read_stdout(absl::Now() + absl::Seconds(5));
  EXPECT_EQ(stopped.code, 130) << out << train.read_stderr(absl::Now() + absl::Seconds(1));
  EXPECT_LE(stopped.took, kStopBound);
  EXPECT_THAT(out, HasSubstr("interrupted by SIGINT during epoch 1/1: "));
  for (int fd : tasks) {
    ASSERT_GE(fd, 0);
    EXPECT_TRUE(wait_readable(fd, absl::Now())) << "a task outlived its stopped chief";
    ::close(fd);
  }
}

// Every worker killed: nothing can run, yet the first SIGTERM stops the
// run within the bound (the queued closures are cancelled; nothing waits
// for the lost workers).
TEST(StopSignalCliTest, SigtermStopsWithinTheBoundWhenEveryWorkerIsGone) {
  TestProcess train(train_argv(fresh_dir("psflow-stop-no-workers"), 1, 2), test_environment());
  ASSERT_GT(train.pid(), 0);
  Progress progress;
  ASSERT_TRUE(read_until(train, "epoch 1/1 [", progress)) << progress.out;
  ASSERT_EQ(progress.workers.size(), 2u) << progress.out;
  for (pid_t worker : progress.workers) {
    const int fd = pidfd_open(worker);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::kill(worker, SIGKILL), 0);
    EXPECT_TRUE(wait_readable(fd, absl::Now() + absl::Seconds(10)));
    ::close(fd);
  }
  const Stopped stopped = signal_and_wait(train, SIGTERM);
  const std::string out = progress.out + train.read_stdout(absl::Now() + absl::Seconds(5));
  EXPECT_EQ(stopped.code, 143) << out << train.read_stderr(absl::Now() + absl::Seconds(1));
  EXPECT_LE(stopped.took, kStopBound);
  EXPECT_THAT(out, HasSubstr("interrupted by SIGTERM during epoch 1/1: "));
  std::printf("[ measured ] %s", out.substr(out.find("interrupted by")).c_str());
}

// A closure that never comes back (its worker paused) holds the stop up to
// --stop-timeout, no longer: then the process exits, 143, saving nothing.
TEST(StopSignalCliTest, AStopThatCannotFinishEndsAtTheStopTimeout) {
  std::unique_ptr<TestProcess> process;
  std::string err;
  ASSERT_NO_FATAL_FAILURE(
      start_and_pause_the_worker("psflow-stop-timeout", {"--stop-timeout", "2"}, process, err));
  TestProcess& train = *process;
  const Stopped stopped = signal_and_wait(train, SIGTERM, absl::Seconds(2) + kSlack);
  err += train.read_stderr(absl::Now() + absl::Seconds(5));
  EXPECT_EQ(stopped.code, 143) << err;
  EXPECT_GE(stopped.took, absl::Seconds(2));
  // The 2 s stop timeout, with room for a loaded machine.
  EXPECT_LE(stopped.took, absl::Seconds(2) + kSlack);
  EXPECT_THAT(err, HasSubstr("waiting for the closures running on workers to come back"));
  EXPECT_THAT(err, HasSubstr("2s after SIGTERM: exiting now"));
}

// While the first signal's stop waits, a second one exits at once.
TEST(StopSignalCliTest, ASecondSignalExitsAtOnce) {
  std::unique_ptr<TestProcess> process;
  std::string sent;
  ASSERT_NO_FATAL_FAILURE(start_and_pause_the_worker("psflow-stop-twice", {}, process, sent));
  TestProcess& train = *process;  // The stop now waits for its worker.
  ASSERT_TRUE(train.signal(SIGTERM));
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  bool stopping = false;
  // Bounded by the deadline.
  while (!stopping) {
    std::optional<std::string> line = train.read_stderr_line(deadline);
    ASSERT_TRUE(line.has_value()) << "no 'received SIGTERM' line";
    stopping = line->find("received SIGTERM: stopping") != std::string::npos;
  }
  const Stopped stopped = signal_and_wait(train, SIGINT, kSlack);
  EXPECT_EQ(stopped.code, 130);
  // At once: far below the 10 s the first signal's stop may take.
  EXPECT_LE(stopped.took, kSlack);
  EXPECT_THAT(train.read_stderr(absl::Now() + absl::Seconds(5)),
              HasSubstr("received SIGINT again: exiting at once"));
}

// The sidecar evaluator used to block both signals for good.
TEST(StopSignalCliTest, EvalStopsOnSigterm) {
  TestProcess eval({PSFLOW_BINARY_PATH, "eval", "--run-dir", fresh_dir("psflow-stop-eval")},
                   test_environment());
  ASSERT_GT(eval.pid(), 0);
  Progress progress;
  ASSERT_TRUE(read_until(eval, "eval: waiting for ", progress, absl::Seconds(60))) << progress.out;
  const Stopped stopped = signal_and_wait(eval, SIGTERM);
  EXPECT_EQ(stopped.code, 143) << eval.read_stderr(absl::Now() + absl::Seconds(1));
  EXPECT_LE(stopped.took, kStopBound);
  EXPECT_THAT(eval.read_stdout(absl::Now() + absl::Seconds(5)),
              HasSubstr("eval: interrupted by SIGTERM"));
}

// A TF_CONFIG chief interrupted while it waits for the cluster's tasks says
// which task it was waiting for (not "the local cluster was starting").
TEST(StopSignalCliTest, AChiefInterruptedWhileWaitingForTasksNamesTheTask) {
  TestProcess train(
      {PSFLOW_BINARY_PATH, "train", "--startup-timeout", "120"},
      test_environment({{"TF_CONFIG",
                         R"({"cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"],
                                         "ps": ["127.0.0.1:3"]},
                             "task": {"type": "chief", "index": 0}})"}}));
  ASSERT_GT(train.pid(), 0);
  Progress progress;
  ASSERT_TRUE(
      read_until(train, "waiting for the 2 ps and worker tasks", progress, absl::Seconds(60)))
      << progress.out << train.read_stderr(absl::Now() + absl::Seconds(1));
  const Stopped stopped = signal_and_wait(train, SIGTERM);
  const std::string err = train.read_stderr(absl::Now() + absl::Seconds(5));
  EXPECT_EQ(stopped.code, 143) << err;
  EXPECT_LE(stopped.took, kStopBound);
  EXPECT_THAT(err, HasSubstr("interrupted by SIGTERM while waiting for /job:ps/replica:0/task:0 "
                             "at 127.0.0.1:3 to answer"));
  EXPECT_THAT(err, ::testing::Not(HasSubstr("local cluster")));
}

}  // namespace
}  // namespace psflow::internal

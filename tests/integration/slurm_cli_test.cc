// `psflow server` and `psflow train` with --cluster-resolver slurm, run as
// real processes with the variables srun would set (there is no Slurm here):
// one node, 127.0.0.1, running the chief, a ps and a worker.
#include <signal.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/port_reservation.h"
#include "rpc/channel.h"
#include "test_process.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::test_environment;
using ::psflow::internal::testing::TestProcess;
using ::testing::HasSubstr;

constexpr char kJobs[] = "chief:1,ps:1,worker:1";

// The test environment without TF_CONFIG or any SLURM_* variable of the
// machine running the tests, plus `extra`.
std::vector<std::string> slurm_environment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (std::string& item : test_environment(extra)) {
    const std::string key = item.substr(0, item.find('='));
    if (absl::StartsWith(key, "SLURM_") && !extra.contains(key)) continue;
    env.push_back(std::move(item));
  }
  return env;
}

// One srun task of a three-task step on 127.0.0.1.
std::map<std::string, std::string> step_of_rank(int rank) {
  return {{"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_STEP_NODELIST", "127.0.0.1"},
          {"SLURM_STEP_TASKS_PER_NODE", "3"},
          {"SLURM_STEP_NUM_TASKS", "3"}};
}

struct Exit {
  int code = -1;
  std::string err;
};

Exit run_to_exit(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  TestProcess process(argv, env);
  if (process.pid() <= 0) return {};
  Exit exit;
  exit.err = process.read_stderr(absl::Now() + absl::Seconds(60));
  exit.code = process.wait_exit_code(absl::Now() + absl::Seconds(30));
  return exit;
}

TEST(SlurmCliTest, ServerPlaysTheTaskOfItsRank) {
  // Rank 1 is ps 0, on the node's second port: port base + 1.
  absl::StatusOr<PortReservation> ps = PortReservation::reserve("127.0.0.1");
  ASSERT_TRUE(ps.ok()) << ps.status();
  const int port_base = ps->port() - 1;
  TestProcess server({PSFLOW_BINARY_PATH, "server", "--reuse-port", "--cluster-resolver", "slurm",
                      "--slurm-jobs", kJobs, "--slurm-port-base", std::to_string(port_base)},
                     slurm_environment(step_of_rank(1)));
  ASSERT_GT(server.pid(), 0);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  ASSERT_TRUE(wait_for_healthy(ps->address(), "/job:ps/replica:0/task:0", deadline).ok());
  absl::StatusOr<v1::GetStatusResponse> status = get_status(ps->address(), "ps", 0, deadline);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->job_name(), "ps");
  EXPECT_EQ(status->task_index(), 0);
  EXPECT_EQ(status->pid(), server.pid());

  ASSERT_TRUE(server.signal(SIGTERM));
  EXPECT_EQ(server.wait_exit_code(absl::Now() + absl::Seconds(30)), 128 + SIGTERM);
  EXPECT_THAT(server.read_stderr(absl::Now() + absl::Seconds(5)),
              HasSubstr(absl::StrCat("serving /job:ps/replica:0/task:0 at ", ps->address())));
}

TEST(SlurmCliTest, ServerOnTheChiefRankIsAUsageError) {
  const Exit exit = run_to_exit(
      {PSFLOW_BINARY_PATH, "server", "--cluster-resolver", "slurm", "--slurm-jobs", kJobs},
      slurm_environment(step_of_rank(0)));
  EXPECT_EQ(exit.code, 2);
  EXPECT_THAT(exit.err, HasSubstr("Slurm rank 0 is task 0 of job 'chief'"));
  EXPECT_THAT(exit.err, HasSubstr("psflow train --cluster-resolver slurm"));
}

TEST(SlurmCliTest, ServerOutsideASlurmStepIsAUsageError) {
  const Exit exit = run_to_exit(
      {PSFLOW_BINARY_PATH, "server", "--cluster-resolver", "slurm", "--slurm-jobs", kJobs},
      slurm_environment({}));
  EXPECT_EQ(exit.code, 2);
  EXPECT_THAT(exit.err, HasSubstr("SLURM_PROCID not found in environment"));
}

TEST(SlurmCliTest, ServerRefusesRoleFlagsWithSlurm) {
  const Exit exit = run_to_exit({PSFLOW_BINARY_PATH, "server", "--cluster-resolver", "slurm",
                                 "--slurm-jobs", kJobs, "--job", "worker", "--task", "0"},
                                slurm_environment(step_of_rank(1)));
  EXPECT_EQ(exit.code, 2);
  EXPECT_THAT(exit.err, HasSubstr("do not combine with --cluster-resolver slurm"));
}

TEST(SlurmCliTest, ServerWithoutTheFlagStillReadsTfConfig) {
  // Inside a Slurm step but without --cluster-resolver slurm: as before.
  const Exit exit = run_to_exit({PSFLOW_BINARY_PATH, "server"}, slurm_environment(step_of_rank(1)));
  EXPECT_EQ(exit.code, 2);
  EXPECT_THAT(exit.err, HasSubstr("no cluster: set TF_CONFIG"));
}

TEST(SlurmCliTest, SlurmWithTfConfigIsAUsageError) {
  std::map<std::string, std::string> env = step_of_rank(1);
  env["TF_CONFIG"] = R"({"cluster": {"ps": ["127.0.0.1:1"]}})";
  const Exit exit = run_to_exit(
      {PSFLOW_BINARY_PATH, "server", "--cluster-resolver", "slurm", "--slurm-jobs", kJobs},
      slurm_environment(env));
  EXPECT_EQ(exit.code, 2);
  EXPECT_THAT(exit.err, HasSubstr("TF_CONFIG is set too"));
}

TEST(SlurmCliTest, TrainAsChiefNamesTasksThatNeverStarted) {
  // Port base 1: the ps (port 2) and the worker (port 3) never answer.
  const Exit exit =
      run_to_exit({PSFLOW_BINARY_PATH, "train", "--startup-timeout", "1", "--cluster-resolver",
                   "slurm", "--slurm-jobs", kJobs, "--slurm-port-base", "1"},
                  slurm_environment(step_of_rank(0)));
  EXPECT_EQ(exit.code, 1);
  EXPECT_THAT(exit.err, HasSubstr("2 task(s) of the Slurm cluster did not answer"));
  EXPECT_THAT(exit.err, HasSubstr("/job:ps/replica:0/task:0"));
  EXPECT_THAT(exit.err, HasSubstr("/job:worker/replica:0/task:0"));
}

TEST(SlurmCliTest, TrainOnAPsRankIsAUsageError) {
  const Exit exit = run_to_exit(
      {PSFLOW_BINARY_PATH, "train", "--cluster-resolver", "slurm", "--slurm-jobs", kJobs},
      slurm_environment(step_of_rank(1)));
  EXPECT_EQ(exit.code, 2);
  EXPECT_THAT(exit.err, HasSubstr("Slurm names this task 'ps'"));
}

TEST(SlurmCliTest, TrainWithJobsThatDoNotAddUpIsAUsageError) {
  const Exit exit = run_to_exit({PSFLOW_BINARY_PATH, "train", "--cluster-resolver", "slurm",
                                 "--slurm-jobs", "chief:1,ps:2,worker:2"},
                                slurm_environment(step_of_rank(0)));
  EXPECT_EQ(exit.code, 2);
  EXPECT_THAT(exit.err, HasSubstr("Requested 5 tasks but only 3 were assigned"));
}

}  // namespace
}  // namespace psflow::internal

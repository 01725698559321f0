#include "psflow/local_cluster.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/channel.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// True once the pidfd reports its process exited, false at the timeout.
bool wait_exited(int pidfd, absl::Duration timeout) {
  pollfd p{pidfd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout))) == 1;
}

LocalClusterOptions options(int num_ps, int num_workers) {
  LocalClusterOptions o;
  o.num_ps = num_ps;
  o.num_workers = num_workers;
  o.binary_path = PSFLOW_BINARY_PATH;
  o.startup_timeout = absl::Seconds(60);
  return o;
}

// Writes an executable shell script standing in for the psflow binary.
std::string write_script(const std::string& name, const std::string& body) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

TEST(LocalClusterTest, TwoPsThreeWorkersComeUpAnswerAndGoAway) {
  const absl::Time begin = absl::Now();
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(options(2, 3));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EXPECT_LT(absl::Now() - begin, absl::Seconds(30));

  const ClusterSpec& spec = (*cluster)->cluster_spec();
  EXPECT_EQ(spec.num_tasks("ps"), 2);
  EXPECT_EQ(spec.num_tasks("worker"), 3);
  EXPECT_EQ(spec.num_tasks("chief"), 1);
  const std::vector<pid_t> pids = (*cluster)->pids();
  EXPECT_EQ(pids.size(), 5u);
  EXPECT_EQ(std::set<pid_t>(pids.begin(), pids.end()).size(), 5u);

  std::vector<int> pidfds;
  for (const char* job : {"ps", "worker"}) {
    for (int index : spec.task_indices(job)) {
      absl::StatusOr<std::string> address = spec.task_address(job, index);
      ASSERT_TRUE(address.ok());
      absl::StatusOr<v1::GetStatusResponse> status =
          get_status(*address, job, index, absl::Now() + absl::Seconds(30));
      ASSERT_TRUE(status.ok()) << status.status();
      EXPECT_EQ(status->job_name(), job);
      EXPECT_EQ(status->task_index(), index);
      absl::StatusOr<pid_t> pid = (*cluster)->pid(job, index);
      ASSERT_TRUE(pid.ok());
      EXPECT_EQ(status->pid(), *pid);
      pidfds.push_back(pidfd_open(*pid));
      ASSERT_GE(pidfds.back(), 0);
    }
  }
  EXPECT_EQ((*cluster)->pid("ps", 7).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*cluster)->pid("chief", 0).status().code(), absl::StatusCode::kNotFound);

  (*cluster)->stop();
  // stop() reaps every task before returning.
  for (int fd : pidfds) {
    EXPECT_TRUE(wait_exited(fd, absl::ZeroDuration()));
    ::close(fd);
  }
  (*cluster)->stop();  // Idempotent.
  EXPECT_EQ((*cluster)->signal_task("ps", 0, SIGTERM).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(LocalClusterTest, KillingOneTaskLeavesTheOthersServing) {
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(options(1, 2));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  absl::StatusOr<pid_t> victim = (*cluster)->pid("worker", 1);
  ASSERT_TRUE(victim.ok());
  const int fd = pidfd_open(*victim);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE((*cluster)->signal_task("worker", 1, SIGKILL).ok());
  EXPECT_TRUE(wait_exited(fd, absl::Seconds(10)));
  ::close(fd);

  const ClusterSpec& spec = (*cluster)->cluster_spec();
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  EXPECT_EQ(get_status(*spec.task_address("worker", 1), "worker", 1, deadline).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_TRUE(get_status(*spec.task_address("worker", 0), "worker", 0, deadline).ok());
  EXPECT_TRUE(get_status(*spec.task_address("ps", 0), "ps", 0, deadline).ok());
  EXPECT_EQ((*cluster)->signal_task("worker", 5, SIGKILL).code(), absl::StatusCode::kNotFound);
}

// As Kubernetes restarts a pod: a killed task comes back on the same address
// (a new process and incarnation), up to max_restarts times.
TEST(LocalClusterTest, DeadTasksAreRestartedOnTheirAddressUpToTheLimit) {
  LocalClusterOptions o = options(1, 1);
  o.max_restarts = 1;
  o.restart_backoff = absl::Milliseconds(10);
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(o);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const ClusterSpec& spec = (*cluster)->cluster_spec();
  const std::string address = *spec.task_address("ps", 0);
  absl::StatusOr<v1::GetStatusResponse> before =
      get_status(address, "ps", 0, absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(before.ok()) << before.status();
  const pid_t first = *(*cluster)->pid("ps", 0);

  ASSERT_TRUE((*cluster)->signal_task("ps", 0, SIGKILL).ok());
  absl::StatusOr<pid_t> second = (*cluster)->wait_for_restart("ps", 0, 1, absl::Seconds(30));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_NE(*second, first);
  EXPECT_EQ(*(*cluster)->restart_count("ps", 0), 1);
  ASSERT_TRUE(wait_for_healthy(address, "ps 0", absl::Now() + absl::Seconds(30)).ok());
  absl::StatusOr<v1::GetStatusResponse> after =
      get_status(address, "ps", 0, absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->pid(), *second);
  EXPECT_NE(after->incarnation(), before->incarnation());

  // The limit is used up: a second death is final.
  const int fd = pidfd_open(*second);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE((*cluster)->signal_task("ps", 0, SIGKILL).ok());
  EXPECT_TRUE(wait_exited(fd, absl::Seconds(10)));
  ::close(fd);
  absl::StatusOr<pid_t> third = (*cluster)->wait_for_restart("ps", 0, 2, absl::Seconds(30));
  EXPECT_EQ(third.status().code(), absl::StatusCode::kFailedPrecondition) << third.status();
  EXPECT_EQ(*(*cluster)->restart_count("ps", 0), 1);
  // The worker was never touched.
  EXPECT_EQ(*(*cluster)->restart_count("worker", 0), 0);
}

TEST(LocalClusterTest, StopEndsAPausedTaskWithinTheGrace) {
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(options(1, 1));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  ASSERT_TRUE((*cluster)->signal_task("ps", 0, SIGSTOP).ok());
  const absl::Time begin = absl::Now();
  // SIGTERM alone would stay pending in a stopped task until SIGKILL; stop()
  // also sends SIGCONT, so the task shuts down cleanly well before.
  (*cluster)->stop(absl::Seconds(20));
  EXPECT_LT(absl::Now() - begin, absl::Seconds(10));
}

TEST(LocalClusterTest, TaskLogsGoToLogDir) {
  LocalClusterOptions o = options(1, 1);
  o.include_chief = false;
  o.log_dir = ::testing::TempDir() + "/local_cluster_logs";
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(o);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  EXPECT_FALSE((*cluster)->cluster_spec().has_job("chief"));
  (*cluster)->stop();
  std::ifstream log(o.log_dir + "/ps-0.log");
  std::stringstream text;
  text << log.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("serving /job:ps/replica:0/task:0"));
}

TEST(LocalClusterTest, TaskExitingDuringStartupFailsFastNamingIt) {
  LocalClusterOptions o = options(1, 1);
  o.binary_path = write_script("exits_at_once.sh", "exit 3");
  const absl::Time begin = absl::Now();
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(o);
  EXPECT_EQ(cluster.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(cluster.status().message()), HasSubstr("/job:ps/replica:0/task:0"));
  EXPECT_THAT(std::string(cluster.status().message()), HasSubstr("exited with code 3"));
  // Well before the 60 s start-up timeout.
  EXPECT_LT(absl::Now() - begin, absl::Seconds(20));
}

TEST(LocalClusterTest, UnhealthyTasksTimeOutAndAreKilled) {
  LocalClusterOptions o = options(1, 1);
  // A stand-in task that runs but never serves (the sleep is the fake
  // task's whole life, not a synchronisation); stop() ends it.
  o.binary_path = write_script("never_serves.sh", "exec sleep 600");
  o.startup_timeout = absl::Seconds(1);
  const absl::Time begin = absl::Now();
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(o);
  EXPECT_EQ(cluster.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(std::string(cluster.status().message()), HasSubstr("/job:ps/replica:0/task:0"));
  EXPECT_THAT(std::string(cluster.status().message()), HasSubstr("/job:worker/replica:0/task:0"));
  // Timeout plus stop()'s one-second grace and the kill.
  EXPECT_LT(absl::Now() - begin, absl::Seconds(15));
}

TEST(LocalClusterTest, RejectsBadOptions) {
  LocalClusterOptions o = options(-1, 2);
  EXPECT_EQ(LocalCluster::start(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = options(1, 1);
  o.host = "10.1.2.3";
  EXPECT_EQ(LocalCluster::start(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = options(1, 1);
  o.binary_path = ::testing::TempDir() + "/no-such-psflow";
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(o);
  EXPECT_EQ(cluster.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(cluster.status().message()), HasSubstr("no-such-psflow"));
}

}  // namespace
}  // namespace psflow::internal

// The put-back path for worker failures, driven by a connection whose
// transport fails on demand. Worker-failure handling proper (marking a
// worker lost, waiting for recovery) is the gRPC round's; this checks the
// classification by status code and the queue behaviour.
#include <atomic>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "coordinator/cluster_coordinator_internal.h"
#include "coordinator/coordinator_test_util.h"
#include "coordinator/in_process_worker.h"
#include "coordinator/worker_connection.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/cluster_coordinator.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::Gate;
using ::psflow::internal::testing::kTestTimeout;
using ::testing::HasSubstr;

// Decides, per run, the transport error to fake (OK: run normally). May
// block: it runs on the connection's own thread.
using TransportPolicy = std::function<absl::Status(int worker_index, const RunRequest& request)>;

// Thread-safety: as WorkerConnection; one run at a time.
class FlakyConnection final : public WorkerConnection {
 public:
  FlakyConnection(int worker_index, std::shared_ptr<TransportPolicy> policy)
      : worker_index_(worker_index),
        policy_(std::move(policy)),
        inner_(worker_index, FunctionRegistry::global()) {}
  ~FlakyConnection() override {
    if (helper_.joinable()) helper_.join();
  }

  std::string task_name() const override { return inner_.task_name(); }

  void run_async(RunRequest request, Done done) override {
    if (helper_.joinable()) helper_.join();  // The previous run has ended.
    helper_ = std::thread([this, request = std::move(request), done = std::move(done)]() mutable {
      const absl::Status transport = (*policy_)(worker_index_, request);
      if (!transport.ok()) {
        std::move(done)(RunResult{transport, absl::UnknownError("not run")});
        return;
      }
      inner_.run_async(std::move(request), std::move(done));
    });
  }

  void cancel(uint64_t closure_id) override { inner_.cancel(closure_id); }

  absl::Status probe(absl::Time) override {
    return probe_ ? probe_(worker_index_) : absl::OkStatus();
  }
  std::function<absl::Status(int)> probe_;

 private:
  const int worker_index_;
  std::shared_ptr<TransportPolicy> policy_;
  InProcessWorker inner_;
  std::thread helper_;
};

std::unique_ptr<ClusterCoordinator> flaky_coordinator(
    int num_workers, TransportPolicy policy, ClusterCoordinatorOptions options = {},
    std::function<absl::Status(int)> probe = nullptr) {
  auto shared = std::make_shared<TransportPolicy>(std::move(policy));
  std::vector<std::unique_ptr<WorkerConnection>> workers;
  for (int i = 0; i < num_workers; ++i) {
    auto connection = std::make_unique<FlakyConnection>(i, shared);
    connection->probe_ = probe;
    workers.push_back(std::move(connection));
  }
  absl::StatusOr<std::unique_ptr<ClusterCoordinator>> c =
      internal::create_coordinator(std::move(workers), options);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

std::atomic<int> g_runs{0};
Gate g_transport_gate;

PSFLOW_FUNCTION(wf_test_index, ctx, args) {
  ++g_runs;
  return Structure(ctx.worker_index());
}

PSFLOW_FUNCTION(wf_test_fail, ctx, args) { return absl::InvalidArgumentError("app failure"); }

// An application error with a code that would be retryable as a transport
// error: it must still count as the function's own failure.
PSFLOW_FUNCTION(wf_test_unavailable, ctx, args) {
  ++g_runs;
  return absl::UnavailableError("parameter server unreachable");
}

PSFLOW_FUNCTION(wf_test_poison, ctx, args) { return Structure(1); }

class WorkerFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_runs = 0;
    g_transport_gate.reset();
  }
};

TEST_F(WorkerFailureTest, RetryableTransportErrorsPutTheClosureBack) {
  for (absl::StatusCode code : {absl::StatusCode::kUnavailable, absl::StatusCode::kDeadlineExceeded,
                                absl::StatusCode::kAborted}) {
    SCOPED_TRACE(absl::StatusCodeToString(code));
    g_runs = 0;
    std::atomic<int> failures_left{2};
    auto c = flaky_coordinator(1, [&](int, const RunRequest&) {
      return failures_left-- > 0 ? absl::Status(code, "Socket closed") : absl::OkStatus();
    });
    ASSERT_NE(c, nullptr);
    PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue r, c->schedule("wf_test_index"));
    ASSERT_TRUE(c->join().ok());  // A worker failure is never reported.
    EXPECT_EQ(*r.fetch(), Structure(0));
    EXPECT_EQ(g_runs.load(), 1);
  }
}

TEST_F(WorkerFailureTest, ClosuresOfAFailingWorkerRunElsewhere) {
  auto c = flaky_coordinator(2, [](int worker, const RunRequest&) {
    return worker == 0 ? absl::UnavailableError("failed to connect to all addresses")
                       : absl::OkStatus();
  });
  ASSERT_NE(c, nullptr);
  std::vector<RemoteValue> results;
  for (int i = 0; i < 20; ++i) {
    PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue r, c->schedule("wf_test_index"));
    results.push_back(r);
  }
  ASSERT_TRUE(c->join().ok());
  for (const RemoteValue& r : results) EXPECT_EQ(*r.fetch(), Structure(1));
  EXPECT_EQ(g_runs.load(), 20);
}

TEST_F(WorkerFailureTest, OtherTransportErrorsAreFinal) {
  auto c = flaky_coordinator(
      1, [](int, const RunRequest&) { return absl::UnauthenticatedError("bad token"); });
  ASSERT_NE(c, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue r, c->schedule("wf_test_index"));
  const absl::Status joined = c->join();
  EXPECT_EQ(joined.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(r.fetch().status(), joined);
  EXPECT_EQ(g_runs.load(), 0);
}

TEST_F(WorkerFailureTest, RetryableCodesFromTheFunctionItselfAreApplicationErrors) {
  auto c = flaky_coordinator(1, [](int, const RunRequest&) { return absl::OkStatus(); });
  ASSERT_NE(c, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue r, c->schedule("wf_test_unavailable"));
  const absl::Status joined = c->join();
  EXPECT_EQ(joined.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(g_runs.load(), 1);  // Not retried.
}

TEST_F(WorkerFailureTest, ClosurePutBackAfterAnErrorIsCancelled) {
  auto c = flaky_coordinator(2, [](int, const RunRequest& request) {
    if (request.function_name != "wf_test_index") return absl::OkStatus();
    g_transport_gate.pass();
    return absl::UnavailableError("Connection reset by peer");
  });
  ASSERT_NE(c, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue lost, c->schedule("wf_test_index"));
  ASSERT_TRUE(g_transport_gate.await_arrivals(1));  // One worker is stuck on it.
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue failing, c->schedule("wf_test_fail"));
  failing.wait();           // The error is recorded.
  g_transport_gate.open();  // Now the stuck worker fails: put_back cancels.
  const absl::Status joined = c->join();
  EXPECT_EQ(joined.message(), "app failure");
  EXPECT_EQ(lost.fetch().status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(lost.fetch().status().message(),
            "The corresponding function is cancelled. Please reschedule the function.");
  EXPECT_EQ(g_runs.load(), 0);
  EXPECT_TRUE(c->join().ok());
}

TEST_F(WorkerFailureTest, PoisonClosureFailsAfterTheBoundOfWorkerFailures) {
  std::atomic<int> poison_runs{0};
  ClusterCoordinatorOptions options;
  options.max_worker_failures_per_closure = 3;
  auto c = flaky_coordinator(
      2,
      [&](int, const RunRequest& request) {
        if (request.function_name != "wf_test_poison") return absl::OkStatus();
        ++poison_runs;
        return absl::UnavailableError("Socket closed");  // The worker "died".
      },
      options);
  ASSERT_NE(c, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue poison, c->schedule("wf_test_poison"));
  const absl::Status joined = c->join();
  EXPECT_EQ(joined.code(), absl::StatusCode::kUnavailable) << joined;
  EXPECT_NE(joined.message().find("presumed to crash workers"), std::string_view::npos) << joined;
  EXPECT_EQ(poison_runs.load(), 3);
  EXPECT_EQ(poison.fetch().status(), joined);
  EXPECT_EQ(c->closures_in_doubt(), 1);  // Its last run may have done part.
  // The workers are fine: ordinary closures run.
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue ok, c->schedule("wf_test_index"));
  EXPECT_TRUE(c->join().ok());
  EXPECT_TRUE(ok.fetch().ok());
}

TEST_F(WorkerFailureTest, ALostWorkerGetsNoClosureUntilItAnswersAProbe) {
  absl::Mutex mu;
  int probes = 0;
  bool worker0_back = false;
  std::atomic<int> worker0_runs{0};
  bool first_failure_done = false;
  auto c = flaky_coordinator(
      2,
      [&](int worker, const RunRequest&) {
        if (worker != 0) return absl::OkStatus();
        absl::MutexLock lock(&mu);
        if (!first_failure_done) {
          first_failure_done = true;
          return absl::UnavailableError("Connection reset by peer");
        }
        ++worker0_runs;
        return absl::OkStatus();
      },
      {},
      [&](int worker) {
        absl::MutexLock lock(&mu);
        if (worker == 0) ++probes;
        return worker0_back || worker != 0 ? absl::OkStatus()
                                           : absl::UnavailableError("still down");
      });
  ASSERT_NE(c, nullptr);
  std::vector<RemoteValue> results;
  for (int i = 0; i < 30; ++i) {
    PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue r, c->schedule("wf_test_index"));
    results.push_back(r);
  }
  ASSERT_TRUE(c->join().ok());
  {
    absl::MutexLock lock(&mu);
    // Worker 0 failed once; until it answers a probe, worker 1 does all.
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(
                                        +[](int* n) { return *n >= 1; }, &probes),
                                    kTestTimeout));
    EXPECT_TRUE(first_failure_done);
    EXPECT_EQ(worker0_runs.load(), 0);
    // Without heartbeats (not a gRPC cluster) the task states are the
    // dispatchers' view: worker 0 lost, naming it and its last error.
    const std::vector<TaskState> states = c->get_task_states();
    EXPECT_EQ(states.size(), 2u);
    EXPECT_EQ(states[0].error.code(), absl::StatusCode::kUnavailable);
    EXPECT_THAT(states[0].error.message(),
                HasSubstr("Task /job:worker/replica:0/task:0 is not answering"));
    EXPECT_THAT(states[0].error.message(), HasSubstr("last error: UNAVAILABLE"));
    EXPECT_TRUE(states[1].healthy()) << states[1].error;
    worker0_back = true;
    // The next probe (within the 5 s backoff bound) finds it back.
    const int probes_before = probes;
    const auto probed_again = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      return probes > probes_before;
    };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&probed_again), kTestTimeout));
  }
  // Once it answers, it takes closures again (bounded: it must happen
  // within a few rounds of 20 closures).
  for (int round = 0; round < 50 && worker0_runs.load() == 0; ++round) {
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(c->schedule("wf_test_index").ok());
    ASSERT_TRUE(c->join().ok());
  }
  EXPECT_GT(worker0_runs.load(), 0);
  EXPECT_TRUE(c->get_task_states()[0].healthy());
}

// Nothing waits forever: when every worker is lost (runs fail, probes
// fail) for all_workers_lost_timeout, the queued closures fail with
// UNAVAILABLE naming the workers, join reports it once, and once a worker
// answers again the coordinator works.
TEST_F(WorkerFailureTest, QueuedClosuresFailWhenEveryWorkerIsLostForTheBound) {
  std::atomic<bool> down{true};
  ClusterCoordinatorOptions options;
  options.all_workers_lost_timeout = absl::Milliseconds(300);
  auto c = flaky_coordinator(
      2,
      [&](int, const RunRequest&) {
        return down ? absl::UnavailableError("Connection refused") : absl::OkStatus();
      },
      options,
      [&](int) { return down ? absl::UnavailableError("Connection refused") : absl::OkStatus(); });
  ASSERT_NE(c, nullptr);
  std::vector<RemoteValue> results;
  for (int i = 0; i < 5; ++i) {
    PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue r, c->schedule("wf_test_index"));
    results.push_back(r);
  }
  const absl::Status joined = c->join();  // Returns: the watchdog gave up.
  EXPECT_TRUE(absl::IsUnavailable(joined)) << joined;
  EXPECT_THAT(joined.message(), ::testing::HasSubstr("no worker has answered"));
  EXPECT_THAT(joined.message(), ::testing::HasSubstr("/job:worker/replica:0/task:1"));
  EXPECT_THAT(joined.message(), ::testing::HasSubstr("Connection refused"));
  for (const RemoteValue& r : results) EXPECT_EQ(r.fetch().status(), joined);
  EXPECT_TRUE(c->join().ok());  // Reported once.
  down = false;
  // A closure scheduled now gets the whole bound again; whether the lost
  // workers' next probes come within it depends on their backoff, so a
  // user retries until they do (bounded here).
  bool ran = false;
  for (int attempt = 0; attempt < 100 && !ran; ++attempt) {
    PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue again, c->schedule("wf_test_index"));
    const absl::Status status = c->join();
    ran = status.ok() && again.fetch().ok();
    if (!status.ok()) {
      EXPECT_TRUE(absl::IsUnavailable(status)) << status;
    }
  }
  EXPECT_TRUE(ran);
}

// Runs until cancelled (bounded): a step loop that notices cancellation.
Gate g_started;
PSFLOW_FUNCTION(wf_test_until_cancelled, ctx, args) {
  g_started.pass();
  const absl::Time end = absl::Now() + absl::Seconds(60);
  while (!ctx.is_cancelled() && absl::Now() < end) absl::SleepFor(absl::Milliseconds(1));
  return ctx.is_cancelled() ? absl::CancelledError("stopped between steps")
                            : absl::DeadlineExceededError("never cancelled");
}

// cancel() (what `psflow train` does on SIGTERM): queued closures fail with
// the reason, the running one is asked to stop, join() reports the reason
// once it is back, and the coordinator is usable again.
TEST_F(WorkerFailureTest, CancelFailsQueuedClosuresStopsRunningOnesAndReportsOnce) {
  g_started.reset();
  g_started.open();  // Counts arrivals without holding them.
  auto c = flaky_coordinator(1, [](int, const RunRequest&) { return absl::OkStatus(); });
  ASSERT_NE(c, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue running, c->schedule("wf_test_until_cancelled"));
  std::vector<RemoteValue> queued;
  for (int i = 0; i < 3; ++i) {
    PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue r, c->schedule("wf_test_index"));
    queued.push_back(r);
  }
  ASSERT_TRUE(g_started.await_arrivals(1));
  const absl::Status reason = absl::CancelledError("interrupted by SIGTERM");
  c->cancel(reason);
  for (const RemoteValue& r : queued) EXPECT_EQ(r.fetch().status(), reason);
  EXPECT_EQ(c->join(), reason);
  EXPECT_THAT(running.fetch().status().message(), ::testing::HasSubstr("stopped between steps"));
  EXPECT_EQ(g_runs, 0);
  EXPECT_EQ(c->closures_in_doubt(), 0);  // Every closure sent came back.
  EXPECT_TRUE(c->join().ok());           // Reported once.
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue again, c->schedule("wf_test_index"));
  EXPECT_TRUE(c->join().ok());
  EXPECT_TRUE(again.fetch().ok());
}

// A closure whose worker failed mid-call and that is cancelled before
// another worker runs it may have applied part of its updates: in doubt.
// One never sent to a worker is not.
TEST_F(WorkerFailureTest, ClosuresCancelledAfterTheirWorkerFailedAreInDoubt) {
  absl::Notification failed_once;
  auto c = flaky_coordinator(
      1,
      [&](int, const RunRequest&) {
        if (!failed_once.HasBeenNotified()) failed_once.Notify();
        return absl::UnavailableError("Socket closed");
      },
      {}, [](int) { return absl::UnavailableError("Connection refused"); });
  ASSERT_NE(c, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue sent, c->schedule("wf_test_index"));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue never_sent, c->schedule("wf_test_index"));
  ASSERT_TRUE(failed_once.WaitForNotificationWithTimeout(kTestTimeout));
  // The only worker is lost: nothing runs until cancel() ends the wait.
  const absl::Status reason = absl::CancelledError("interrupted by SIGTERM");
  c->cancel(reason);
  EXPECT_EQ(c->join(), reason);
  EXPECT_FALSE(sent.fetch().ok());
  EXPECT_EQ(never_sent.fetch().status(), reason);
  EXPECT_EQ(c->closures_in_doubt(), 1);
}

}  // namespace
}  // namespace psflow::internal

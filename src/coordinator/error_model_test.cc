// The application-error model (TF's ClusterCoordinator docstrings and
// cluster_coordinator_test.py), run with the default queue bound and with a
// bound of 2, as TF runs its suite to show nothing deadlocks.
#include <atomic>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "coordinator/coordinator_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/cluster_coordinator.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::Gate;
using ::psflow::internal::testing::kNegativeCheck;
using ::psflow::internal::testing::kTestTimeout;
using ::psflow::internal::testing::make_coordinator;
using ::testing::HasSubstr;

constexpr absl::string_view kCancelled =
    "The corresponding function is cancelled. Please reschedule the function.";

Gate g_long_gate;
Gate g_fail_gate;
std::atomic<int> g_steps{0};
std::atomic<bool> g_saw_cancellation{false};

PSFLOW_FUNCTION(em_test_long, ctx, args) {
  g_long_gate.pass();
  g_saw_cancellation = ctx.is_cancelled();
  return Structure(1);
}

PSFLOW_FUNCTION(em_test_gated_fail, ctx, args) {
  g_fail_gate.pass();
  return absl::InvalidArgumentError("step failed: loss is NaN");
}

PSFLOW_FUNCTION(em_test_fail, ctx, args) { return absl::InvalidArgumentError("first failure"); }

PSFLOW_FUNCTION(em_test_long_then_fail, ctx, args) {
  g_long_gate.pass();
  g_saw_cancellation = ctx.is_cancelled();
  return absl::InternalError("late failure");
}

PSFLOW_FUNCTION(em_test_step, ctx, args) { return Structure(static_cast<int64_t>(++g_steps)); }

class ErrorModelTest : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override {
    g_long_gate.reset();
    g_fail_gate.reset();
    g_steps = 0;
    g_saw_cancellation = false;
  }
  std::unique_ptr<ClusterCoordinator> coordinator(int num_workers) {
    return make_coordinator(num_workers, GetParam());
  }
};

TEST_P(ErrorModelTest, JoinReportsTheFirstErrorOnceAfterRunningClosuresFinish) {
  auto c = coordinator(2);
  ASSERT_NE(c, nullptr);
  // Worker A: a long step; worker B: a step that fails; two steps queued.
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue long_step, c->schedule("em_test_long"));
  ASSERT_TRUE(g_long_gate.await_arrivals(1));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue failing, c->schedule("em_test_gated_fail"));
  ASSERT_TRUE(g_fail_gate.await_arrivals(1));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue queued1, c->schedule("em_test_step"));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue queued2, c->schedule("em_test_step"));

  g_fail_gate.open();
  // The failure cancels the queued closures at once.
  ASSERT_TRUE(queued1.wait(kTestTimeout));
  ASSERT_TRUE(queued2.wait(kTestTimeout));
  for (const RemoteValue& q : {queued1, queued2}) {
    EXPECT_EQ(q.fetch().status().code(), absl::StatusCode::kCancelled);
    EXPECT_EQ(q.fetch().status().message(), kCancelled);
  }
  EXPECT_FALSE(long_step.is_ready());

  // join() reports only once nothing runs: it stays blocked on the long step.
  absl::Notification join_returned;
  absl::Status join_status;
  bool long_step_ready_at_join = false;
  std::thread joiner([&] {
    join_status = c->join();
    long_step_ready_at_join = long_step.is_ready();
    join_returned.Notify();
  });
  EXPECT_FALSE(join_returned.WaitForNotificationWithTimeout(kNegativeCheck));
  g_long_gate.open();
  ASSERT_TRUE(join_returned.WaitForNotificationWithTimeout(kTestTimeout));
  joiner.join();
  EXPECT_EQ(join_status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(join_status.message(), "step failed: loss is NaN");
  EXPECT_TRUE(long_step_ready_at_join);

  // The long step finished (it was asked to stop, and ignored it).
  EXPECT_EQ(*long_step.fetch(), Structure(1));
  EXPECT_TRUE(g_saw_cancellation);
  // The failing closure's own value is its error.
  EXPECT_EQ(failing.fetch().status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(g_steps.load(), 0);

  // Reported once; then the coordinator works again.
  EXPECT_TRUE(c->join().ok());
  EXPECT_TRUE(*c->done());
  std::vector<RemoteValue> steps;
  for (int i = 0; i < 3; ++i) {
    PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue r, c->schedule("em_test_step"));
    steps.push_back(r);
  }
  EXPECT_TRUE(c->join().ok());
  EXPECT_EQ(g_steps.load(), 3);
  for (const RemoteValue& r : steps) EXPECT_TRUE(r.fetch().ok());
}

TEST_P(ErrorModelTest, ScheduleReportsThePendingErrorAndQueuesNothing) {
  auto c = coordinator(1);
  ASSERT_NE(c, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue failing, c->schedule("em_test_fail"));
  failing.wait();
  const absl::StatusOr<RemoteValue> rejected = c->schedule("em_test_step");
  EXPECT_EQ(rejected.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(rejected.status().message(), "first failure");
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue accepted, c->schedule("em_test_step"));
  EXPECT_TRUE(c->join().ok());
  EXPECT_EQ(*accepted.fetch(), Structure(int64_t{1}));
  EXPECT_EQ(g_steps.load(), 1);
}

TEST_P(ErrorModelTest, DoneReportsThePendingErrorOnce) {
  auto c = coordinator(2);
  ASSERT_NE(c, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue failing, c->schedule("em_test_fail"));
  failing.wait();
  EXPECT_EQ(c->done().status().code(), absl::StatusCode::kInvalidArgument);
  const absl::StatusOr<bool> done = c->done();
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(*done);
  EXPECT_TRUE(c->join().ok());
}

TEST_P(ErrorModelTest, ErrorsOfClosuresInFlightDuringCancellationAreAbsorbed) {
  auto c = coordinator(2);
  ASSERT_NE(c, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue late, c->schedule("em_test_long_then_fail"));
  ASSERT_TRUE(g_long_gate.await_arrivals(1));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue first, c->schedule("em_test_fail"));
  first.wait();
  g_long_gate.open();
  const absl::Status joined = c->join();
  EXPECT_EQ(joined.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(joined.message(), "first failure");
  // The second failure stays on its own RemoteValue and is never reported.
  EXPECT_EQ(late.fetch().status().code(), absl::StatusCode::kInternal);
  EXPECT_TRUE(g_saw_cancellation);
  EXPECT_TRUE(c->join().ok());
  EXPECT_TRUE(*c->done());
}

TEST_P(ErrorModelTest, ConcurrentSchedulersSeeEachErrorExactlyOnce) {
  auto c = coordinator(2);
  ASSERT_NE(c, nullptr);
  constexpr int kThreads = 3;
  constexpr int kPerThread = 200;
  std::atomic<int> errors_reported{0};
  std::vector<std::vector<RemoteValue>> accepted(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const bool fail = t == 0 && i == kPerThread / 2;
        absl::StatusOr<RemoteValue> r = c->schedule(fail ? "em_test_fail" : "em_test_step");
        if (r.ok()) {
          accepted[t].push_back(*r);
        } else {
          EXPECT_EQ(r.status().message(), "first failure");
          ++errors_reported;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  const absl::Status joined = c->join();
  if (!joined.ok()) {
    EXPECT_EQ(joined.message(), "first failure");
    ++errors_reported;
  }
  EXPECT_EQ(errors_reported.load(), 1);

  int ran = 0, cancelled = 0, failed = 0;
  for (const auto& values : accepted) {
    for (const RemoteValue& r : values) {
      ASSERT_TRUE(r.is_ready());
      const absl::StatusOr<Structure> v = r.fetch();
      if (v.ok()) {
        ++ran;
      } else if (v.status().message() == kCancelled) {
        ++cancelled;
      } else {
        ++failed;
      }
    }
  }
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(ran, g_steps.load());
  EXPECT_EQ(ran + cancelled + failed,
            static_cast<int>(accepted[0].size() + accepted[1].size() + accepted[2].size()));
}

INSTANTIATE_TEST_SUITE_P(QueueBounds, ErrorModelTest, ::testing::Values(0, 2),
                         [](const ::testing::TestParamInfo<int64_t>& info) {
                           return info.param == 0 ? std::string("DefaultBound")
                                                  : "Bound" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace psflow::internal

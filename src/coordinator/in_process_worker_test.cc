#include "coordinator/in_process_worker.h"

#include <atomic>

#include "absl/synchronization/notification.h"
#include "coordinator/coordinator_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::Gate;
using ::psflow::internal::testing::kTestTimeout;
using ::testing::HasSubstr;

Gate g_gate;
std::atomic<bool> g_cancelled_seen{false};

PSFLOW_FUNCTION(ipw_test_echo, ctx, args) {
  return Structure::tuple({ctx.worker_index(), static_cast<int64_t>(ctx.closure_id()), args});
}

PSFLOW_FUNCTION(ipw_test_until_cancelled, ctx, args) {
  g_gate.pass();
  g_cancelled_seen = ctx.is_cancelled();
  return absl::CancelledError("stopped early");
}

// Runs one call and waits for its outcome.
RunResult run(InProcessWorker& worker, RunRequest request) {
  absl::Notification done;
  RunResult out;
  worker.run_async(std::move(request), [&](RunResult result) {
    out = std::move(result);
    done.Notify();
  });
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(kTestTimeout));
  return out;
}

TEST(InProcessWorkerTest, RunsRegisteredFunctionsWithItsIndex) {
  InProcessWorker worker(4, FunctionRegistry::global());
  EXPECT_EQ(worker.task_name(), "/job:worker/replica:0/task:4");
  const RunResult result = run(worker, {17, "ipw_test_echo", Structure("x")});
  ASSERT_TRUE(result.transport.ok());
  ASSERT_TRUE(result.output.ok()) << result.output.status();
  EXPECT_EQ(*result.output, Structure::tuple({4, int64_t{17}, "x"}));
}

TEST(InProcessWorkerTest, UnknownFunctionIsNotFoundWithATransportThatWorked) {
  InProcessWorker worker(0, FunctionRegistry::global());
  const RunResult result = run(worker, {1, "ipw_test_ehco", {}});
  EXPECT_TRUE(result.transport.ok());
  EXPECT_EQ(result.output.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(result.output.status().message(), HasSubstr("Did you mean 'ipw_test_echo'"));
}

TEST(InProcessWorkerTest, CancelReachesOnlyTheNamedRunningClosure) {
  g_gate.reset();
  g_cancelled_seen = false;
  InProcessWorker worker(0, FunctionRegistry::global());
  absl::Notification done;
  RunResult out;
  worker.run_async({5, "ipw_test_until_cancelled", {}}, [&](RunResult result) {
    out = std::move(result);
    done.Notify();
  });
  ASSERT_TRUE(g_gate.await_arrivals(1));
  worker.cancel(4);  // Another closure: ignored.
  worker.cancel(5);
  g_gate.open();
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(kTestTimeout));
  EXPECT_TRUE(g_cancelled_seen);
  EXPECT_EQ(out.output.status().code(), absl::StatusCode::kCancelled);

  // The next run starts uncancelled.
  g_gate.reset();
  g_gate.open();
  (void)run(worker, {6, "ipw_test_until_cancelled", {}});
  EXPECT_FALSE(g_cancelled_seen);
}

TEST(InProcessWorkerTest, ResourcesPersistAcrossRuns) {
  InProcessWorker worker(0, FunctionRegistry::global());
  worker.resources().get_or_create<int>("calls") = 41;
  EXPECT_EQ(++worker.resources().get_or_create<int>("calls"), 42);
}

}  // namespace
}  // namespace psflow::internal

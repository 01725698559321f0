#include "psflow/cluster_coordinator.h"

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "coordinator/cluster_coordinator_internal.h"
#include "coordinator/coordinator_test_util.h"
#include "coordinator/worker_connection.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::Gate;
using ::psflow::internal::testing::kNegativeCheck;
using ::psflow::internal::testing::kTestTimeout;
using ::psflow::internal::testing::make_coordinator;
using ::testing::HasSubstr;

// The seed example (TF's RemoteValue docstring) with worker-local state in
// place of variables: v1 += 0.1; v2 -= 0.2; return v1 / v2.
struct SeedVariables {
  double v1 = 0.0;
  double v2 = 1.0;
};
std::atomic<int> g_seed_calls{0};

PSFLOW_FUNCTION(cc_test_worker_fn, ctx, args) {
  auto& v = ctx.resources().get_or_create<SeedVariables>("seed_variables");
  v.v1 += 0.1;
  v.v2 -= 0.2;
  ++g_seed_calls;
  return Structure(v.v1 / v.v2);
}

// The same with the variables shared by all workers, as parameter-server
// variables are (a stand-in until the variables API lands).
struct FakeParameterServer {
  absl::Mutex mu;
  double v1 ABSL_GUARDED_BY(mu) = 0.0;
  double v2 ABSL_GUARDED_BY(mu) = 1.0;
};
FakeParameterServer g_ps;

PSFLOW_FUNCTION(cc_test_shared_worker_fn, ctx, args) {
  absl::MutexLock lock(&g_ps.mu);
  g_ps.v1 += 0.1;
  g_ps.v2 -= 0.2;
  return Structure(g_ps.v1 / g_ps.v2);
}

std::atomic<int> g_counter{0};
PSFLOW_FUNCTION(cc_test_increment, ctx, args) {
  return Structure(static_cast<int64_t>(++g_counter));
}

Gate g_gate;
PSFLOW_FUNCTION(cc_test_gated, ctx, args) {
  g_gate.pass();
  return Structure(ctx.worker_index());
}

PSFLOW_FUNCTION(cc_test_nested, ctx, args) {
  return Structure::dict({{"loss", args.float_value() * 2},
                          {"metrics", Structure::tuple({1, Structure::list({"a", true})})}});
}

PSFLOW_FUNCTION(cc_test_returns_none, ctx, args) { return Structure::none(); }

class ClusterCoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_seed_calls = 0;
    g_counter = 0;
    g_gate.reset();
  }
};

TEST_F(ClusterCoordinatorTest, SeedExampleWithWorkerLocalState) {
  auto coordinator = make_coordinator(2);
  ASSERT_NE(coordinator, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue result, coordinator->schedule("cc_test_worker_fn"));
  const absl::StatusOr<Structure> first = result.fetch();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_DOUBLE_EQ(first->float_value(), 0.125);

  for (int i = 0; i < 10; ++i) {
    // Runs on whichever worker is free; the value is available later.
    PSFLOW_ASSERT_OK_AND_ASSIGN(result, coordinator->schedule("cc_test_worker_fn"));
  }
  ASSERT_TRUE(coordinator->join().ok());
  EXPECT_EQ(g_seed_calls.load(), 11);
  // The last call was some worker's k-th, 1 <= k <= 11 (the same float
  // operations in the same order give the same bits).
  const absl::StatusOr<Structure> last = result.fetch();
  ASSERT_TRUE(last.ok()) << last.status();
  bool matches_some_k = false;
  SeedVariables replay;
  for (int k = 1; k <= 11; ++k) {
    replay.v1 += 0.1;
    replay.v2 -= 0.2;
    matches_some_k |= last->float_value() == replay.v1 / replay.v2;
  }
  EXPECT_TRUE(matches_some_k) << last->float_value();
}

TEST_F(ClusterCoordinatorTest, SeedExampleWithSharedVariables) {
  {
    absl::MutexLock lock(&g_ps.mu);
    g_ps.v1 = 0.0;
    g_ps.v2 = 1.0;
  }
  auto coordinator = make_coordinator(2);
  ASSERT_NE(coordinator, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue result,
                              coordinator->schedule("cc_test_shared_worker_fn"));
  EXPECT_DOUBLE_EQ(result.fetch()->float_value(), 0.125);
  for (int i = 0; i < 10; ++i) {
    PSFLOW_ASSERT_OK_AND_ASSIGN(result, coordinator->schedule("cc_test_shared_worker_fn"));
  }
  ASSERT_TRUE(coordinator->join().ok());
  absl::MutexLock lock(&g_ps.mu);
  EXPECT_NEAR(g_ps.v1, 1.1, 1e-9);
  EXPECT_NEAR(g_ps.v2, -1.2, 1e-9);
}

TEST_F(ClusterCoordinatorTest, FetchesNestedStructuresOfRemoteValues) {
  auto coordinator = make_coordinator(2);
  ASSERT_NE(coordinator, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue a, coordinator->schedule("cc_test_nested", 1.5));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue b, coordinator->schedule("cc_test_increment"));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue none, coordinator->schedule("cc_test_returns_none"));

  const absl::StatusOr<Structure> fetched = coordinator->fetch(RemoteStructure::dict(
      {{"a", a}, {"rest", RemoteStructure::tuple({b, 7, Structure::list({"plain"}), none})}}));
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  const Structure expected = Structure::dict(
      {{"a", Structure::dict({{"loss", 3.0},
                              {"metrics", Structure::tuple({1, Structure::list({"a", true})})}})},
       {"rest", Structure::tuple({int64_t{1}, 7, Structure::list({"plain"}), Structure::none()})}});
  EXPECT_EQ(*fetched, expected) << fetched->debug_string();

  // A plain structure passes through; a single RemoteValue is its value.
  EXPECT_EQ(*coordinator->fetch(Structure::tuple({1, 2})), Structure::tuple({1, 2}));
  EXPECT_EQ(*coordinator->fetch(b), Structure(int64_t{1}));
  const absl::StatusOr<std::vector<Structure>> listed = coordinator->fetch({b, none});
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->at(0), Structure(int64_t{1}));
  EXPECT_TRUE(listed->at(1).is_none());
}

TEST_F(ClusterCoordinatorTest, JoinAndDoneOnAnEmptyQueue) {
  auto coordinator = make_coordinator(1);
  ASSERT_NE(coordinator, nullptr);
  EXPECT_TRUE(coordinator->join().ok());
  EXPECT_TRUE(coordinator->join().ok());
  const absl::StatusOr<bool> done = coordinator->done();
  ASSERT_TRUE(done.ok());
  EXPECT_TRUE(*done);
}

TEST_F(ClusterCoordinatorTest, ScheduledIncrementsAllRunExactlyOnce) {
  auto coordinator = make_coordinator(2);
  ASSERT_NE(coordinator, nullptr);
  for (int round = 1; round <= 2; ++round) {
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(coordinator->schedule("cc_test_increment").ok());
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(coordinator->schedule("cc_test_increment").ok());
    ASSERT_TRUE(coordinator->join().ok());
    EXPECT_EQ(g_counter.load(), 10 * round);
    EXPECT_TRUE(*coordinator->done());
  }
}

TEST_F(ClusterCoordinatorTest, DoneIsFalseWhileAClosureRuns) {
  auto coordinator = make_coordinator(1);
  ASSERT_NE(coordinator, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue gated, coordinator->schedule("cc_test_gated"));
  ASSERT_TRUE(g_gate.await_arrivals(1));
  EXPECT_FALSE(*coordinator->done());
  EXPECT_FALSE(gated.is_ready());
  g_gate.open();
  ASSERT_TRUE(coordinator->join().ok());
  EXPECT_TRUE(*coordinator->done());
}

TEST_F(ClusterCoordinatorTest, EveryWorkerTakesWorkAndSeesItsIndex) {
  auto coordinator = make_coordinator(3);
  ASSERT_NE(coordinator, nullptr);
  std::vector<RemoteValue> results;
  for (int i = 0; i < 3; ++i) {
    PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue r, coordinator->schedule("cc_test_gated"));
    results.push_back(r);
  }
  // Three closures can only be inside the gate together on three workers.
  ASSERT_TRUE(g_gate.await_arrivals(3));
  g_gate.open();
  std::set<int64_t> indices;
  for (const RemoteValue& r : results) indices.insert(r.fetch()->int_value());
  EXPECT_EQ(indices, (std::set<int64_t>{0, 1, 2}));
}

TEST_F(ClusterCoordinatorTest, ScheduleBlocksOnlyWhileTheQueueIsFull) {
  auto coordinator = make_coordinator(1, /*max_queued=*/2);
  ASSERT_NE(coordinator, nullptr);
  ASSERT_TRUE(coordinator->schedule("cc_test_gated").ok());
  ASSERT_TRUE(g_gate.await_arrivals(1));  // In flight: not counted as queued.
  ASSERT_TRUE(coordinator->schedule("cc_test_gated").ok());
  ASSERT_TRUE(coordinator->schedule("cc_test_gated").ok());

  absl::Notification third_returned;
  std::thread scheduler([&] {
    EXPECT_TRUE(coordinator->schedule("cc_test_gated").ok());
    third_returned.Notify();
  });
  EXPECT_FALSE(third_returned.WaitForNotificationWithTimeout(kNegativeCheck));
  g_gate.open();
  EXPECT_TRUE(third_returned.WaitForNotificationWithTimeout(kTestTimeout));
  scheduler.join();
  ASSERT_TRUE(coordinator->join().ok());
  EXPECT_EQ(g_gate.arrived(), 4);
}

TEST_F(ClusterCoordinatorTest, SmallQueueBoundManySchedulersDoNotDeadlock) {
  auto coordinator = make_coordinator(2, /*max_queued=*/2);
  ASSERT_NE(coordinator, nullptr);
  constexpr int kThreads = 3;
  constexpr int kPerThread = 300;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        EXPECT_TRUE(coordinator->schedule("cc_test_increment").ok());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(coordinator->join().ok());
  EXPECT_EQ(g_counter.load(), kThreads * kPerThread);
}

TEST_F(ClusterCoordinatorTest, UnregisteredFunctionFailsAtScheduleWithCloseNames) {
  auto coordinator = make_coordinator(1);
  ASSERT_NE(coordinator, nullptr);
  const absl::StatusOr<RemoteValue> typo = coordinator->schedule("cc_test_incremnet");
  ASSERT_EQ(typo.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(typo.status().message(), HasSubstr("'cc_test_incremnet'"));
  EXPECT_THAT(typo.status().message(), HasSubstr("Did you mean 'cc_test_increment'"));
  // Nothing was queued and nothing is pending.
  EXPECT_TRUE(coordinator->join().ok());
  EXPECT_EQ(g_counter.load(), 0);
}

TEST_F(ClusterCoordinatorTest, EmptyRemoteValueArgumentIsRejected) {
  auto coordinator = make_coordinator(1);
  ASSERT_NE(coordinator, nullptr);
  const absl::StatusOr<RemoteValue> bad =
      coordinator->schedule("cc_test_nested", RemoteStructure::tuple({1, RemoteValue()}));
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("args[1]"));
  EXPECT_EQ(RemoteValue().fetch().status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(ClusterCoordinatorTest, WaitWithTimeoutAndStates) {
  auto coordinator = make_coordinator(1);
  ASSERT_NE(coordinator, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue gated, coordinator->schedule("cc_test_gated"));
  EXPECT_FALSE(gated.wait(absl::Milliseconds(20)));
  EXPECT_FALSE(gated.is_ready());
  EXPECT_EQ(gated.status(), RemoteValueStatus::kNotReady);
  EXPECT_THAT(gated.debug_string(), HasSubstr("'cc_test_gated': NOT_READY"));
  g_gate.open();
  EXPECT_TRUE(gated.wait(kTestTimeout));
  EXPECT_TRUE(gated.is_ready());
  EXPECT_EQ(gated.status(), RemoteValueStatus::kReady);
  EXPECT_EQ(*gated.get(), Structure(0));
  EXPECT_GT(gated.closure_id(), 0u);
  EXPECT_EQ(gated.function_name(), "cc_test_gated");
}

TEST_F(ClusterCoordinatorTest, DestroyingCancelsQueuedClosuresAndFinishesRunningOnes) {
  auto coordinator = make_coordinator(1);
  ASSERT_NE(coordinator, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue running, coordinator->schedule("cc_test_gated"));
  ASSERT_TRUE(g_gate.await_arrivals(1));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue queued, coordinator->schedule("cc_test_increment"));
  // The destructor cancels `queued` first, then waits for `running`, which
  // this thread releases once it sees the cancellation.
  std::thread releaser([&] {
    EXPECT_TRUE(queued.wait(kTestTimeout));
    g_gate.open();
  });
  coordinator.reset();
  releaser.join();
  EXPECT_EQ(queued.fetch().status().code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(queued.fetch().status().message(), HasSubstr("destroyed"));
  EXPECT_EQ(*running.fetch(), Structure(0));
  EXPECT_EQ(g_counter.load(), 0);
}

TEST(ClusterCoordinatorCreateTest, RejectsNoWorkers) {
  EXPECT_EQ(ClusterCoordinator::create_in_process(0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(internal::create_coordinator(std::vector<std::unique_ptr<WorkerConnection>>{})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ClusterCoordinatorCreateTest, RejectsHeartbeatsWithoutATimeout) {
  ClusterCoordinatorOptions options;
  options.heartbeat_timeout = absl::ZeroDuration();
  const absl::Status refused = ClusterCoordinator::create_in_process(1, options).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("heartbeat_timeout must be > 0"));
  options.heartbeat_interval = absl::ZeroDuration();  // heartbeats off: fine
  EXPECT_TRUE(ClusterCoordinator::create_in_process(1, options).ok());
}

// In-process workers have no heartbeats: each is healthy while its
// dispatcher has not lost it, in worker order.
TEST(ClusterCoordinatorTaskStatesTest, InProcessWorkersAreHealthyInOrder) {
  auto coordinator = ClusterCoordinator::create_in_process(2);
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  const std::vector<TaskState> states = (*coordinator)->get_task_states();
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states[0].task, "/job:worker/replica:0/task:0");
  EXPECT_EQ(states[1].task, "/job:worker/replica:0/task:1");
  for (const TaskState& s : states) EXPECT_TRUE(s.healthy()) << s.error;
}

}  // namespace
}  // namespace psflow::internal

// ClusterCoordinator against real worker and ps processes (LocalCluster,
// 2 ps + 3 workers): the reference's worker_fn, exact counts of scheduled
// updates, the error model over gRPC, and work moving off a killed worker.
#include <signal.h>

#include <memory>
#include <set>
#include <vector>

#include "absl/time/clock.h"
#include "base/test_util.h"
#include "gtest/gtest.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/per_worker.h"
#include "psflow/per_worker_resource.h"
#include "psflow/strategy.h"
#include "psflow/variable.h"

namespace psflow::internal {
namespace {

class CoordinatorIntegrationTest : public ::testing::Test {
 protected:
  static constexpr int kWorkers = 3;

  static void SetUpTestSuite() {
    LocalClusterOptions options;
    options.num_ps = 2;
    options.num_workers = kWorkers;
    options.binary_path = PSFLOW_TESTING_BINARY_PATH;
    auto cluster = LocalCluster::start(options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = cluster->release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(cluster_, nullptr);
    strategy_ = ok_value(ParameterServerStrategy::create(
        SimpleClusterResolver(cluster_->cluster_spec(), "chief", 0)));
    coordinator_ = ok_value(ClusterCoordinator::create(*strategy_));
  }

  static LocalCluster* cluster_;
  std::unique_ptr<ParameterServerStrategy> strategy_;
  std::unique_ptr<ClusterCoordinator> coordinator_;
};

LocalCluster* CoordinatorIntegrationTest::cluster_ = nullptr;

TEST_F(CoordinatorIntegrationTest, ReferenceWorkerFn) {
  ShardedVariable v1, v2;
  {
    StrategyScope scope = strategy_->scope();
    v1 = ok_value(create_variable(Tensor::scalar(0.0f), {.name = "v1"}));
    v2 = ok_value(create_variable(Tensor::scalar(1.0f), {.name = "v2"}));
  }
  const RemoteStructure args =
      RemoteStructure::tuple({v1.handle().to_structure(), v2.handle().to_structure()});
  RemoteValue result = ok_value(coordinator_->schedule("examples/worker_fn", args));
  Structure value = ok_value(result.fetch());
  ASSERT_TRUE(value.is_tensor()) << value;
  EXPECT_FLOAT_EQ(value.tensor().scalar_value<float>(), 0.125f);

  for (int i = 0; i < 10; ++i) {
    result = ok_value(coordinator_->schedule("examples/worker_fn", args));
  }
  ASSERT_TRUE(coordinator_->join().ok());
  // 11 runs in all: v1 = 1.1, v2 = 1 - 2.2 = -1.2 (float32 rounding).
  EXPECT_NEAR(ok_value(v1.read_value()).scalar_value<float>(), 1.1f, 1e-5);
  EXPECT_NEAR(ok_value(v2.read_value()).scalar_value<float>(), -1.2f, 1e-5);
  // (The last result's value depends on how the 3 workers interleaved.)
  EXPECT_TRUE(ok_value(result.fetch()).is_tensor());
}

TEST_F(CoordinatorIntegrationTest, ScheduledIncrementsAreExact) {
  ShardedVariable counter;
  {
    StrategyScope scope = strategy_->scope();
    counter = ok_value(create_variable(Tensor::scalar<int64_t>(0), {.name = "counter"}));
  }
  const RemoteStructure args = RemoteStructure::tuple({counter.handle().to_structure()});
  std::set<int64_t> workers_used;
  for (int round = 1; round <= 2; ++round) {
    std::vector<RemoteValue> results;
    for (int i = 0; i < 5; ++i) {
      results.push_back(ok_value(coordinator_->schedule("examples/increment", args)));
    }
    ASSERT_TRUE(coordinator_->join().ok());
    EXPECT_EQ(ok_value(counter.read_value()).scalar_value<int64_t>(), 5 * round);
    for (const RemoteValue& r : results) workers_used.insert(ok_value(r.fetch()).int_value());
  }
  for (int64_t w : workers_used) EXPECT_TRUE(w >= 0 && w < kWorkers) << w;
}

TEST_F(CoordinatorIntegrationTest, NestedStructuresRoundTrip) {
  Structure nested = Structure::tuple({2, Structure::tuple({3, 4}), Structure::list({5}),
                                       Structure::dict({{"v", 1}}),
                                       Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2})});
  RemoteValue echoed = ok_value(coordinator_->schedule("testing/echo", nested));
  EXPECT_EQ(ok_value(echoed.fetch()), nested);
  Structure fetched = ok_value(
      coordinator_->fetch(RemoteStructure::tuple({echoed, RemoteStructure::list({echoed, 7})})));
  EXPECT_EQ(fetched, Structure::tuple({nested, Structure::list({nested, 7})}));
}

TEST_F(CoordinatorIntegrationTest, WorkersKnowTheirIndex) {
  std::vector<RemoteValue> results;
  for (int i = 0; i < 30; ++i) {
    results.push_back(ok_value(coordinator_->schedule("testing/worker_index")));
  }
  ASSERT_TRUE(coordinator_->join().ok());
  for (const RemoteValue& r : results) {
    Structure v = ok_value(r.fetch());
    EXPECT_GE(v[0].int_value(), 0);
    EXPECT_LT(v[0].int_value(), kWorkers);
    EXPECT_EQ(v[1].int_value(), kWorkers);
  }
}

TEST_F(CoordinatorIntegrationTest, FunctionErrorIsReportedOnceThenUsable) {
  RemoteValue failing = ok_value(coordinator_->schedule("testing/fail", "bad step"));
  absl::Status joined = coordinator_->join();
  EXPECT_TRUE(absl::IsInvalidArgument(joined)) << joined;
  EXPECT_NE(joined.message().find("bad step"), std::string_view::npos) << joined;
  EXPECT_TRUE(absl::IsInvalidArgument(failing.fetch().status()));
  // Reported once: the coordinator is usable again.
  RemoteValue ok = ok_value(coordinator_->schedule("testing/echo", 3));
  EXPECT_TRUE(coordinator_->join().ok());
  EXPECT_EQ(ok_value(ok.fetch()), Structure(3));
}

// Each worker runs R synchronous replicas inside one scheduled function and
// reduces their results (TF's strategy.run / reduce on a worker).
TEST_F(CoordinatorIntegrationTest, ScheduledFunctionRunsReplicasAndReduces) {
  std::vector<float> values(100);
  for (int i = 0; i < 100; ++i) values[i] = static_cast<float>(i);  // Sum 4950.
  for (int64_t replicas : {int64_t{2}, int64_t{4}}) {
    RemoteValue r = ok_value(
        coordinator_->schedule("examples/replicated_sum",
                               Structure::tuple({replicas, Tensor::from_vector<float>(values)})));
    Structure v = ok_value(r.fetch());
    EXPECT_EQ(v[0].int_value(), replicas);
    EXPECT_FLOAT_EQ(v[1].tensor().scalar_value<float>(), 4950.0f);
    EXPECT_FLOAT_EQ(v[2].tensor().scalar_value<float>(), 4950.0f);
  }
}

TEST_F(CoordinatorIntegrationTest, UnknownFunctionFailsAtSchedule) {
  absl::StatusOr<RemoteValue> r = coordinator_->schedule("examples/worker_fun");
  EXPECT_TRUE(absl::IsNotFound(r.status())) << r.status();
  EXPECT_NE(r.status().message().find("examples/worker_fn"), std::string_view::npos) << r.status();
}

// Several closures in flight per worker (pipelined dispatch): every update
// still lands exactly once, and the error model holds.
TEST_F(CoordinatorIntegrationTest, PipelinedDispatchIsExactAndKeepsTheErrorModel) {
  ClusterCoordinatorOptions options;
  options.max_in_flight_per_worker = 8;
  // One coordinator per strategy: the fixture's goes first.
  coordinator_.reset();
  std::unique_ptr<ClusterCoordinator> pipelined =
      ok_value(ClusterCoordinator::create(*strategy_, options));
  ShardedVariable counter;
  {
    StrategyScope scope = strategy_->scope();
    counter = ok_value(create_variable(Tensor::scalar<int64_t>(0), {.name = "pipelined"}));
  }
  const RemoteStructure args = RemoteStructure::tuple({counter.handle().to_structure()});
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(pipelined->schedule("examples/increment", args).ok());
  ASSERT_TRUE(pipelined->join().ok());
  EXPECT_EQ(ok_value(counter.read_value()).scalar_value<int64_t>(), 300);

  RemoteValue failing = ok_value(pipelined->schedule("testing/fail", "pipelined failure"));
  std::vector<RemoteValue> after;
  // The error is reported once: by a later schedule() when the failure
  // has been seen by then (TF's model), else by join().
  absl::Status reported;
  for (int i = 0; i < 50 && reported.ok(); ++i) {
    absl::StatusOr<RemoteValue> r = pipelined->schedule("testing/echo", i);
    if (r.ok()) {
      after.push_back(*std::move(r));
    } else {
      reported = r.status();
    }
  }
  absl::Status joined = pipelined->join();
  if (reported.ok()) {
    EXPECT_TRUE(absl::IsInvalidArgument(joined)) << joined;
  } else {
    EXPECT_TRUE(absl::IsInvalidArgument(reported)) << reported;
    EXPECT_TRUE(joined.ok()) << joined;
  }
  for (const RemoteValue& r : after) {
    absl::StatusOr<Structure> v = r.fetch();
    // Each later closure either ran before the error was seen or was
    // cancelled; none is lost or left pending.
    EXPECT_TRUE(v.ok() || absl::IsCancelled(v.status())) << v.status();
  }
  EXPECT_TRUE(ok_value(pipelined->done()));
}

// Last: it kills a worker of the shared cluster. The closures that worker
// was running go to the others; nothing reaches the user.
TEST_F(CoordinatorIntegrationTest, KilledWorkerIsFailedOver) {
  ShardedVariable counter;
  {
    StrategyScope scope = strategy_->scope();
    counter = ok_value(create_variable(Tensor::scalar<int64_t>(0), {.name = "failover"}));
  }
  ASSERT_TRUE(cluster_->signal_task("worker", 1, SIGKILL).ok());
  const RemoteStructure args = RemoteStructure::tuple({counter.handle().to_structure()});
  std::vector<RemoteValue> results;
  for (int i = 0; i < 20; ++i) {
    results.push_back(ok_value(coordinator_->schedule("examples/increment", args)));
  }
  ASSERT_TRUE(coordinator_->join().ok());
  for (const RemoteValue& r : results) EXPECT_NE(ok_value(r.fetch()).int_value(), 1);
  EXPECT_EQ(ok_value(counter.read_value()).scalar_value<int64_t>(), 20);
}

// TF applies a retried closure's updates again (at-least-once); psflow
// applies them once. Kill the worker after the closure's update reached the
// ps and before the closure finished: it is retried on the other worker,
// which makes the same update again, and the ps drops the duplicate.
TEST(CoordinatorExactlyOnceTest, UpdatesOfARetriedClosureApplyOnce) {
  for (bool exactly_once : {true, false}) {
    SCOPED_TRACE(exactly_once ? "exactly_once" : "at-least-once (TF)");
    LocalClusterOptions options;
    options.num_ps = 1;
    options.num_workers = 2;
    options.binary_path = PSFLOW_TESTING_BINARY_PATH;
    std::unique_ptr<LocalCluster> cluster = ok_value(LocalCluster::start(options));
    auto strategy = ok_value(ParameterServerStrategy::create(
        SimpleClusterResolver(cluster->cluster_spec(), "chief", 0)));
    ClusterCoordinatorOptions coordinator_options;
    coordinator_options.exactly_once = exactly_once;
    auto coordinator = ok_value(ClusterCoordinator::create(*strategy, coordinator_options));
    ShardedVariable counter, marker, hold;
    {
      StrategyScope scope = strategy->scope();
      counter = ok_value(create_variable(Tensor::scalar<int64_t>(0), {.name = "counter"}));
      marker = ok_value(create_variable(Tensor::scalar<int64_t>(-1), {.name = "marker"}));
      hold = ok_value(create_variable(Tensor::scalar<int64_t>(1), {.name = "hold"}));
    }
    RemoteValue result = ok_value(coordinator->schedule(
        "testing/increment_then_hold",
        RemoteStructure::tuple({counter.handle().to_structure(), marker.handle().to_structure(),
                                hold.handle().to_structure()})));
    // Wait (bounded) until the update has reached the ps.
    const absl::Time deadline = absl::Now() + absl::Seconds(60);
    while (ok_value(counter.read_value()).scalar_value<int64_t>() == 0) {
      ASSERT_LT(absl::Now(), deadline) << "the closure never made its update";
    }
    const int64_t first_worker = ok_value(marker.read_value()).scalar_value<int64_t>();
    ASSERT_TRUE(first_worker == 0 || first_worker == 1) << first_worker;
    ASSERT_TRUE(cluster->signal_task("worker", static_cast<int>(first_worker), SIGKILL).ok());
    ASSERT_TRUE(hold.assign(Tensor::scalar<int64_t>(0)).ok());
    const absl::Status joined = coordinator->join();
    ASSERT_TRUE(joined.ok()) << joined;
    EXPECT_EQ(ok_value(result.fetch()).int_value(), 1 - first_worker);
    EXPECT_EQ(ok_value(counter.read_value()).scalar_value<int64_t>(), exactly_once ? 1 : 2);
  }
}

// A worker killed and restarted by the launcher (as Kubernetes would) is
// probed back into service: it takes closures again and rebuilds its
// per-worker dataset from the start.
TEST(CoordinatorRecoveryTest, RestartedWorkerRejoinsWithFreshResources) {
  LocalClusterOptions options;
  options.num_ps = 1;
  options.num_workers = 2;
  options.binary_path = PSFLOW_TESTING_BINARY_PATH;
  options.max_restarts = 1;
  options.restart_backoff = absl::Milliseconds(10);
  std::unique_ptr<LocalCluster> cluster = ok_value(LocalCluster::start(options));
  auto strategy = ok_value(
      ParameterServerStrategy::create(SimpleClusterResolver(cluster->cluster_spec(), "chief", 0)));
  auto coordinator = ok_value(ClusterCoordinator::create(*strategy));
  PerWorkerIterator iterator =
      ok_value(coordinator->create_per_worker_dataset(
                   "examples/range_by_worker", Structure::tuple({int64_t{1000000}, int64_t{1}})))
          .iter();
  // Both workers read some of their shard.
  std::set<int64_t> workers;
  for (int round = 0; round < 50 && workers.size() < 2; ++round) {
    RemoteValue r = ok_value(coordinator->schedule("examples/next_element", iterator));
    workers.insert(ok_value(r.fetch())[0].int_value());
  }
  ASSERT_EQ(workers.size(), 2u);
  // And a per-worker resource: the most uses worker 1's copy has seen
  // (each use counts up, so a smaller count later means a fresh copy).
  const PerWorkerResource state =
      ok_value(coordinator->create_per_worker_resource("testing/worker_state"));
  int64_t worker1_uses = 0;
  for (int round = 0; round < 50 && worker1_uses == 0; ++round) {
    Structure v = ok_value(ok_value(coordinator->schedule("testing/use_resource", state)).fetch());
    if (v[0].int_value() == 1) worker1_uses = v[3].int_value();
  }
  ASSERT_GT(worker1_uses, 0) << "worker 1 never used the resource";

  ASSERT_TRUE(cluster->signal_task("worker", 1, SIGKILL).ok());
  ASSERT_TRUE(cluster->wait_for_restart("worker", 1, 1, absl::Seconds(30)).ok());
  // Worker 1 comes back (probed with backoff); its iterator starts again at
  // its shard's first element, 1.
  // Its per-worker resource is built afresh too.
  bool rebuilt = false;
  bool resource_rebuilt = false;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (!(rebuilt && resource_rebuilt) && absl::Now() < deadline) {
    std::vector<RemoteValue> results;
    std::vector<RemoteValue> resource_results;
    for (int i = 0; i < 20; ++i) {
      results.push_back(ok_value(coordinator->schedule("examples/next_element", iterator)));
      resource_results.push_back(ok_value(coordinator->schedule("testing/use_resource", state)));
    }
    const absl::Status joined = coordinator->join();
    ASSERT_TRUE(joined.ok()) << joined;
    for (const RemoteValue& r : results) {
      Structure v = ok_value(r.fetch());
      if (v[0].int_value() == 1 && v[1].tensor().flat<int64_t>()[0] == 1) rebuilt = true;
    }
    for (const RemoteValue& r : resource_results) {
      Structure v = ok_value(r.fetch());
      EXPECT_EQ(v[1].int_value(), v[0].int_value());
      if (v[0].int_value() == 1 && v[3].int_value() <= worker1_uses) {
        EXPECT_EQ(v[2].int_value(), 1) << "the restarted process's first build";
        resource_rebuilt = true;
      }
    }
  }
  EXPECT_TRUE(rebuilt) << "worker 1 never read its shard's first element again";
  EXPECT_TRUE(resource_rebuilt) << "worker 1 never rebuilt its per-worker resource";
}

}  // namespace
}  // namespace psflow::internal

// One coordinator per strategy (TF's ClusterCoordinator is a per-strategy
// singleton), against real worker and ps processes (LocalCluster, 1 ps +
// 2 workers): a second create() for the same strategy drives the same
// coordinator (one queue, one error state), other options are refused, and
// once every handle is gone a new one starts afresh.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/strategy.h"
#include "psflow/variable.h"
#include "suite_cluster.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

class CoordinatorPerStrategyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { start_suite_cluster(cluster_, 1, 2, PSFLOW_TESTING_BINARY_PATH); }
  static void TearDownTestSuite() { stop_suite_cluster(cluster_); }
  void SetUp() override {
    ASSERT_NE(cluster_, nullptr);
    strategy_ = ok_value(ParameterServerStrategy::create(
        SimpleClusterResolver(cluster_->cluster_spec(), "chief", 0)));
  }

  static LocalCluster* cluster_;
  std::unique_ptr<ParameterServerStrategy> strategy_;
};

LocalCluster* CoordinatorPerStrategyTest::cluster_ = nullptr;

TEST_F(CoordinatorPerStrategyTest, ASecondCreateDrivesTheSameCoordinator) {
  std::unique_ptr<ClusterCoordinator> first = ok_value(ClusterCoordinator::create(*strategy_));
  std::unique_ptr<ClusterCoordinator> second = ok_value(ClusterCoordinator::create(*strategy_));
  ShardedVariable counter;
  {
    StrategyScope scope = strategy_->scope();
    counter = ok_value(create_variable(Tensor::scalar<int64_t>(0), {.name = "counter"}));
  }
  const RemoteStructure args = RemoteStructure::tuple({counter.handle().to_structure()});
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(first->schedule("examples/increment", args).ok());
  // The second handle's join waits for the closures scheduled through the
  // first: one queue.
  ASSERT_TRUE(second->join().ok());
  EXPECT_EQ(ok_value(counter.read_value()).scalar_value<int64_t>(), 20);
  EXPECT_TRUE(ok_value(first->done()));

  // One error state: a failure scheduled through one handle is reported by
  // the other's join, once.
  RemoteValue failing = ok_value(second->schedule("testing/fail", Structure("boom")));
  EXPECT_EQ(failing.fetch().status().code(), absl::StatusCode::kInvalidArgument);
  const absl::Status joined = first->join();
  EXPECT_EQ(joined.code(), absl::StatusCode::kInvalidArgument) << joined;
  EXPECT_THAT(std::string(joined.message()), HasSubstr("boom"));
  EXPECT_TRUE(second->join().ok());
  EXPECT_EQ(first->num_workers(), 2);
}

TEST_F(CoordinatorPerStrategyTest, ConcurrentCreatesAgreeOnOneCoordinator) {
  std::vector<std::unique_ptr<ClusterCoordinator>> handles(4);
  std::vector<std::thread> threads;
  for (auto& handle : handles) {
    threads.emplace_back([&] { handle = ok_value(ClusterCoordinator::create(*strategy_)); });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_TRUE(ok_value(handles[0]->schedule("testing/fail", Structure("once"))).fetch().status() !=
              absl::OkStatus());
  // The error is reported once, by whichever handle joins first.
  int reported = 0;
  for (auto& handle : handles) reported += handle->join().ok() ? 0 : 1;
  EXPECT_EQ(reported, 1);
}

TEST_F(CoordinatorPerStrategyTest, OtherOptionsAreRefusedWhileItLivesAndAcceptedAfter) {
  std::unique_ptr<ClusterCoordinator> first = ok_value(ClusterCoordinator::create(*strategy_));
  ClusterCoordinatorOptions options;
  options.max_in_flight_per_worker = 4;
  absl::StatusOr<std::unique_ptr<ClusterCoordinator>> other =
      ClusterCoordinator::create(*strategy_, options);
  EXPECT_EQ(other.status().code(), absl::StatusCode::kFailedPrecondition) << other.status();
  EXPECT_THAT(std::string(other.status().message()), HasSubstr("one coordinator per strategy"));
  // The first is unaffected, and keeps a pending error to itself.
  ASSERT_TRUE(ok_value(first->schedule("testing/fail", Structure("old"))).fetch().status() !=
              absl::OkStatus());
  first.reset();
  // Every handle gone: a new coordinator, with the new options and a clean
  // error state.
  std::unique_ptr<ClusterCoordinator> fresh =
      ok_value(ClusterCoordinator::create(*strategy_, options));
  RemoteValue r = ok_value(fresh->schedule("testing/worker_index"));
  EXPECT_TRUE(r.fetch().ok());
  EXPECT_TRUE(fresh->join().ok());
  // A different strategy has its own coordinator.
  std::unique_ptr<ParameterServerStrategy> another = ok_value(
      ParameterServerStrategy::create(SimpleClusterResolver(cluster_->cluster_spec(), "chief", 0)));
  std::unique_ptr<ClusterCoordinator> its_own = ok_value(ClusterCoordinator::create(*another));
  ASSERT_TRUE(ok_value(its_own->schedule("testing/fail", Structure("x"))).fetch().status() !=
              absl::OkStatus());
  EXPECT_TRUE(fresh->join().ok());
  EXPECT_FALSE(its_own->join().ok());
}

}  // namespace
}  // namespace psflow::internal

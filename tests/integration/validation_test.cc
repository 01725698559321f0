// TF's validations, against real worker and ps processes (LocalCluster,
// 2 ps + 2 workers): a dataset function that creates a variable is refused
// when a worker builds its per-worker dataset, a shard of one
// ShardedVariable cannot go into another, and replicas run on the
// coordinator inside the strategy's scope (not in a scheduled function)
// log TF's warning, once.
#include <string>
#include <vector>

#include "base/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/partitioners.h"
#include "psflow/replica_group.h"
#include "psflow/strategy.h"
#include "psflow/variable.h"
#include "strategy/unscheduled_run.h"
#include "suite_cluster.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

class ValidationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { start_suite_cluster(cluster_, 2, 2, PSFLOW_TESTING_BINARY_PATH); }
  static void TearDownTestSuite() { stop_suite_cluster(cluster_); }
  void SetUp() override {
    ASSERT_NE(cluster_, nullptr);
    strategy_ = ok_value(
        ParameterServerStrategy::create(SimpleClusterResolver(cluster_->cluster_spec(), "chief", 0),
                                        ok_value(fixed_shards_partitioner(2))));
    coordinator_ = ok_value(ClusterCoordinator::create(*strategy_));
  }

  static LocalCluster* cluster_;
  std::unique_ptr<ParameterServerStrategy> strategy_;
  std::unique_ptr<ClusterCoordinator> coordinator_;
};

LocalCluster* ValidationTest::cluster_ = nullptr;

TEST_F(ValidationTest, ADatasetFunctionThatCreatesAVariableIsRefused) {
  PerWorkerDataset dataset =
      ok_value(coordinator_->create_per_worker_dataset("testing/dataset_creating_a_variable"));
  PerWorkerIterator it = dataset.iter();
  // Each worker that builds its copy refuses it. One closure at a time:
  // the first error cancels the closures queued behind it (TF's model).
  for (int i = 0; i < 3; ++i) {
    RemoteValue r = ok_value(coordinator_->schedule("examples/next_element", it.handle()));
    const absl::Status s = r.fetch().status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()),
                HasSubstr("Creating variables in `dataset_fn` is not allowed"));
    EXPECT_THAT(std::string(s.message()), HasSubstr("testing/dataset_creating_a_variable"));
    EXPECT_EQ(coordinator_->join().code(), absl::StatusCode::kInvalidArgument);
  }
  // A healthy dataset beside it still works.
  PerWorkerDataset healthy = ok_value(coordinator_->create_per_worker_dataset(
      "examples/range_by_worker", Structure::tuple({int64_t{8}, int64_t{2}})));
  RemoteValue ok =
      ok_value(coordinator_->schedule("examples/next_element", healthy.iter().handle()));
  EXPECT_TRUE(ok.fetch().ok()) << ok.fetch().status();
}

TEST_F(ValidationTest, AShardOfAShardedVariableCannotGoIntoAnother) {
  StrategyScope scope = strategy_->scope();
  ShardedVariable w = ok_value(
      create_variable(Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2}), {.name = "w"}));
  ASSERT_EQ(w.num_parts(), 2u);
  EXPECT_EQ(w.variables()[1].job(), "ps");
  const absl::Status s = ShardedVariable::create(w.variables(), "copy").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("'w/part_0' is already a shard of"));
  // Unsharded variables may be assembled into one.
  ShardedVariable a = ok_value(create_variable(Tensor::from_vector<float>({1, 2}, {1, 2})));
  ShardedVariable b = ok_value(create_variable(Tensor::from_vector<float>({3, 4}, {1, 2})));
  ShardedVariable ab = ok_value(ShardedVariable::create({a.variables()[0], b.variables()[0]}));
  EXPECT_EQ(ok_value(ab.read_value()), Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}));
}

TEST_F(ValidationTest, ReplicasRunOnTheCoordinatorInTheScopeWarnOnce) {
  reset_unscheduled_run_warning_for_testing();
  ReplicaGroup group(2);
  const auto one = [](const ReplicaContext&, const std::vector<Structure>&) {
    return absl::StatusOr<Structure>(Structure(int64_t{1}));
  };
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(group.run(one).ok());  // no strategy scope: a local group, silent
  {
    StrategyScope scope = strategy_->scope();
    ASSERT_TRUE(group.run(one).ok());  // TF warns, and still runs it here
    ASSERT_TRUE(group.run(one).ok());
  }
  // Replicas inside a scheduled function, on a real worker: no warning.
  RemoteValue on_worker = ok_value(coordinator_->schedule(
      "examples/replicated_sum",
      Structure::tuple({int64_t{2}, Tensor::from_vector<float>({1, 2, 3})})));
  EXPECT_TRUE(on_worker.fetch().ok()) << on_worker.fetch().status();
  const std::string logged = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(logged, HasSubstr("is invoked inside a ParameterServerStrategy scope without using "
                                "ClusterCoordinator::schedule"));
  EXPECT_EQ(logged.find("without using"), logged.rfind("without using")) << logged;
}

}  // namespace
}  // namespace psflow::internal

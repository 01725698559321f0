// TF's validations on the strategy side, in process: a dataset function
// may not create variables, a shard of one ShardedVariable may not go into
// another, and replicas run in a strategy scope outside a scheduled
// function warn once.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/replica_group.h"
#include "psflow/strategy.h"
#include "strategy/creation_refusal.h"
#include "strategy/strategy_test_util.h"
#include "strategy/unscheduled_run.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;
using testing::LocalPsCluster;
using testing::value_or_fail;

TEST(CreationRefusalTest, NoVariableIsCreatedWhileADatasetFunctionRuns) {
  LocalPsCluster cluster(1);
  {
    DatasetFunctionScope scope("my_data");
    const absl::Status local = create_variable(Tensor::scalar(1.0f), {.name = "v"}).status();
    EXPECT_EQ(local.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(local.message()),
                HasSubstr("Creating variables in `dataset_fn` is not allowed"));
    EXPECT_THAT(std::string(local.message()), HasSubstr("'my_data'"));
    StrategyScope strategy_scope = cluster.strategy->scope();
    EXPECT_EQ(create_variable(Tensor::scalar(1.0f)).status().code(),
              absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(cluster.strategy->create_variable(Tensor::scalar(1.0f)).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  EXPECT_EQ(cluster.stores[0]->size(), 0u);                 // nothing reached the ps
  EXPECT_TRUE(create_variable(Tensor::scalar(1.0f)).ok());  // the scope is gone
}

TEST(ShardOfAnotherTest, APartOfAShardedVariableCannotGoIntoAnother) {
  LocalPsCluster cluster(2, value_or_fail(fixed_shards_partitioner(2)));
  ShardedVariable w;
  {
    StrategyScope scope = cluster.strategy->scope();
    w = value_or_fail(
        create_variable(Tensor::from_vector<float>({1, 2, 3, 4}, {4}), {.name = "w"}));
  }
  ASSERT_EQ(w.num_parts(), 2u);
  for (const std::vector<Variable>& parts :
       {w.variables(), std::vector<Variable>{w.variables()[1]}}) {
    const absl::Status s = ShardedVariable::create(parts, "again").status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("is already a shard of ShardedVariable 'w'"));
  }
  // Plain variables (here in this process, unsharded) may, and so may the
  // same handles once more: only the container's own handles carry the
  // mark.
  ShardedVariable a = value_or_fail(create_variable(Tensor::from_vector<float>({1, 2}, {2})));
  ShardedVariable b = value_or_fail(create_variable(Tensor::from_vector<float>({3}, {1})));
  ShardedVariable ab = value_or_fail(ShardedVariable::create({a.variables()[0], b.variables()[0]}));
  EXPECT_EQ(value_or_fail(ab.read_value()), Tensor::from_vector<float>({1, 2, 3}, {3}));
  EXPECT_TRUE(ShardedVariable::create({a.variables()[0], b.variables()[0]}).ok());
  EXPECT_FALSE(ShardedVariable::create({ab.variables()[0]}).ok());
  // Rebuilt from its handle (as a worker does), the variable is whole again.
  ShardedVariable rebuilt =
      value_or_fail(ShardedVariable::from_handle(w.handle(), cluster.strategy->client_lookup()));
  EXPECT_EQ(value_or_fail(rebuilt.read_value()), Tensor::from_vector<float>({1, 2, 3, 4}, {4}));
}

TEST(UnscheduledRunTest, WarnsOnceInAStrategyScopeOutsideAScheduledFunction) {
  LocalPsCluster cluster(1);
  ReplicaGroup group(2);
  const auto one = [](const ReplicaContext&, const std::vector<Structure>&) {
    return absl::StatusOr<Structure>(Structure(int64_t{1}));
  };
  reset_unscheduled_run_warning_for_testing();
  EXPECT_FALSE(is_unscheduled_run());  // no strategy scope: a local group
  ASSERT_TRUE(group.run(one).ok());
  StrategyScope scope = cluster.strategy->scope();
  {
    ScheduledFunctionScope scheduled;
    EXPECT_FALSE(is_unscheduled_run());
    EXPECT_FALSE(warn_if_unscheduled_run("run"));
  }
  EXPECT_TRUE(is_unscheduled_run());
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(group.run(one).ok());
  const PerReplica values = value_or_fail(group.run(one));
  ASSERT_TRUE(group.reduce(ReduceOp::kSum, values, std::nullopt).ok());
  const std::string logged = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(logged, HasSubstr("ReplicaGroup::run is invoked inside a ParameterServerStrategy "
                                "scope without using ClusterCoordinator::schedule"));
  // Once per process, whatever the method.
  EXPECT_EQ(logged.find("without using"), logged.rfind("without using")) << logged;
  EXPECT_FALSE(warn_if_unscheduled_run("reduce"));
}

}  // namespace
}  // namespace psflow::internal

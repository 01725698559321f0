// Variable aggregation, synchronization and cached reads against real ps
// and worker processes (LocalCluster, 2 ps + 1 worker): a scheduled
// function runs R replicas on the worker that update or read a ps variable
// (src/testing/variable_policy_functions.cc), as TF's
// cluster_coordinator_test StrategyIntegrationTest does with R GPUs.
#include "psflow/variable_policy.h"

#include <memory>
#include <string>
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

class VariablePolicyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { start_suite_cluster(cluster_, 2, 1, PSFLOW_TESTING_BINARY_PATH); }
  static void TearDownTestSuite() { stop_suite_cluster(cluster_); }
  void SetUp() override {
    ASSERT_NE(cluster_, nullptr);
    strategy_ = ok_value(ParameterServerStrategy::create(
        SimpleClusterResolver(cluster_->cluster_spec(), "chief", 0)));
    coordinator_ = ok_value(ClusterCoordinator::create(*strategy_));
  }

  ShardedVariable variable(const Tensor& init, VariableOptions options) {
    StrategyScope scope = strategy_->scope();
    return ok_value(create_variable(init, std::move(options)));
  }

  // Runs testing/replica_update on the worker; returns the run's status.
  absl::Status replica_update(const ShardedVariable& v, int replicas, const std::string& op,
                              std::vector<Tensor> values) {
    Structure::Items items(values.begin(), values.end());
    Structure result = ok_value(
        ok_value(coordinator_->schedule("testing/replica_update",
                                        Structure::dict({{"variable", v.handle().to_structure()},
                                                         {"replicas", replicas},
                                                         {"op", op},
                                                         {"values", Structure::list(items)}})))
            .fetch());
    return absl::Status(static_cast<absl::StatusCode>(result[0].int_value()),
                        result[1].string_value());
  }

  static LocalCluster* cluster_;
  std::unique_ptr<ParameterServerStrategy> strategy_;
  std::unique_ptr<ClusterCoordinator> coordinator_;
};

LocalCluster* VariablePolicyTest::cluster_ = nullptr;

Tensor f(float x) { return Tensor::scalar(x); }

// TF: a SUM variable assigned replica_id + 1 in each replica ends as
// sum(i + 1), written once.
TEST_F(VariablePolicyTest, SumAssignWritesTheSumOfTheReplicas) {
  ShardedVariable v = variable(f(0), {.name = "sum", .aggregation = VariableAggregation::kSum});
  ASSERT_TRUE(replica_update(v, 3, "assign", {f(1), f(2), f(3)}).ok());
  EXPECT_EQ(ok_value(v.read_value()), f(6));
  // assign_add adds the sum once: 6 + (1 + 2 + 3).
  ASSERT_TRUE(replica_update(v, 3, "assign_add", {f(1), f(2), f(3)}).ok());
  EXPECT_EQ(ok_value(v.read_value()), f(12));
}

TEST_F(VariablePolicyTest, MeanAssignWritesTheMeanOfTheReplicas) {
  ShardedVariable v = variable(Tensor::from_vector<float>({0, 0}, {2}),
                               {.name = "mean", .aggregation = VariableAggregation::kMean});
  ASSERT_TRUE(
      replica_update(
          v, 4, "assign",
          {Tensor::from_vector<float>({0, 10}, {2}), Tensor::from_vector<float>({1, 10}, {2}),
           Tensor::from_vector<float>({2, 10}, {2}), Tensor::from_vector<float>({3, 10}, {2})})
          .ok());
  EXPECT_EQ(ok_value(v.read_value()), Tensor::from_vector<float>({1.5f, 10}, {2}));
  // MEAN of an integer variable is refused (TF's message), nothing written.
  ShardedVariable n = variable(Tensor::scalar<int64_t>(7),
                               {.name = "int_mean", .aggregation = VariableAggregation::kMean});
  absl::Status s =
      replica_update(n, 2, "assign", {Tensor::scalar<int64_t>(1), Tensor::scalar<int64_t>(2)});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("Cannot update non-float variables with "
                                     "tf.VariableAggregation.MEAN aggregation in replica context"));
  EXPECT_EQ(ok_value(n.read_value()), Tensor::scalar<int64_t>(7));
}

// TF: an ONLY_FIRST_REPLICA variable updated by assign_add(3) on two
// replicas in two scheduled steps ends at 6 (replica 0's value, once).
TEST_F(VariablePolicyTest, OnlyFirstReplicaTakesReplicaZerosValue) {
  ShardedVariable v =
      variable(f(0), {.name = "first", .aggregation = VariableAggregation::kOnlyFirstReplica});
  for (int step = 0; step < 2; ++step) {
    ASSERT_TRUE(replica_update(v, 2, "assign_add", {f(3), f(3)}).ok());
  }
  EXPECT_EQ(ok_value(v.read_value()), f(6));
  ASSERT_TRUE(replica_update(v, 2, "assign", {f(10), f(20)}).ok());
  EXPECT_EQ(ok_value(v.read_value()), f(10));
}

// TF: an assign inside a replica context is refused for aggregation NONE
// (the default) with several replicas; the value stays unchanged and the
// worker keeps serving.
TEST_F(VariablePolicyTest, NoneAggregationRefusesReplicaAssigns) {
  ShardedVariable v = variable(f(5), {.name = "none"});
  EXPECT_EQ(v.aggregation(), VariableAggregation::kNone);
  absl::Status s = replica_update(v, 2, "assign", {f(1), f(2)});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("You must specify an aggregation method to update a "
                                     "AggregatingVariable in Replica Context"));
  EXPECT_EQ(ok_value(v.read_value()), f(5));
  // One replica: no aggregation at all (TF wraps nothing then).
  ASSERT_TRUE(replica_update(v, 1, "assign_sub", {f(1)}).ok());
  EXPECT_EQ(ok_value(v.read_value()), f(4));
}

// A sharded variable keeps its aggregation in the handle the worker gets,
// and the whole value is combined and written once.
TEST_F(VariablePolicyTest, ShardedSumAggregatesEveryPart) {
  auto sharded_strategy = ok_value(
      ParameterServerStrategy::create(SimpleClusterResolver(cluster_->cluster_spec(), "chief", 0),
                                      ok_value(fixed_shards_partitioner(2))));
  ShardedVariable v;
  {
    StrategyScope scope = sharded_strategy->scope();
    v = ok_value(
        create_variable(Tensor::from_vector<float>({0, 0, 0}, {3}),
                        {.name = "sharded_sum", .aggregation = VariableAggregation::kSum}));
  }
  ASSERT_EQ(v.num_parts(), 2u);
  EXPECT_EQ(v.variables()[1].aggregation(), VariableAggregation::kSum);
  ASSERT_TRUE(replica_update(v, 2, "assign",
                             {Tensor::from_vector<float>({1, 2, 3}, {3}),
                              Tensor::from_vector<float>({10, 20, 30}, {3})})
                  .ok());
  EXPECT_EQ(ok_value(v.read_value()), Tensor::from_vector<float>({11, 22, 33}, {3}));
}

// One tensor shared by every replica is TF's non-distributed value: SUM
// writes it unchanged (ParameterServerStrategy's reduce_to returns it).
TEST_F(VariablePolicyTest, ValueSharedByEveryReplicaIsWrittenAsIs) {
  ShardedVariable v = variable(f(0), {.name = "shared", .aggregation = VariableAggregation::kSum});
  Structure result = ok_value(
      ok_value(coordinator_->schedule("testing/replica_update",
                                      Structure::dict({{"variable", v.handle().to_structure()},
                                                       {"replicas", 3},
                                                       {"op", "assign_add"},
                                                       {"shared", f(2)}})))
          .fetch());
  ASSERT_EQ(result[0].int_value(), 0) << result.debug_string();
  EXPECT_EQ(ok_value(v.read_value()), f(2));
}

// Every synchronization is accepted on ps (TF's ParameterServerStrategy
// passes it through; one copy on a ps); ON_READ defaults trainable to
// false; invalid enum values are refused with TF's messages.
TEST_F(VariablePolicyTest, SynchronizationKindsAndValidation) {
  for (VariableSynchronization s :
       {VariableSynchronization::kAuto, VariableSynchronization::kNone,
        VariableSynchronization::kOnWrite, VariableSynchronization::kOnRead}) {
    ShardedVariable v = variable(f(1), {.name = "sync", .synchronization = s});
    EXPECT_EQ(v.synchronization(), s);
    EXPECT_EQ(v.trainable(), s != VariableSynchronization::kOnRead);
    EXPECT_EQ(v.variables()[0].device().substr(0, 7), "/job:ps");
    ShardedVariable rebuilt = ok_value(ShardedVariable::from_handle(
        ok_value(VariableHandle::from_structure(v.handle().to_structure())),
        strategy_->client_lookup()));
    EXPECT_EQ(rebuilt.synchronization(), s);
    EXPECT_EQ(ok_value(rebuilt.read_value()), f(1));
  }
  ShardedVariable explicit_trainable =
      variable(f(1), {.synchronization = VariableSynchronization::kOnRead, .trainable = true});
  EXPECT_TRUE(explicit_trainable.trainable());

  StrategyScope scope = strategy_->scope();
  absl::StatusOr<ShardedVariable> bad =
      create_variable(f(1), {.name = "bad", .aggregation = static_cast<VariableAggregation>(9)});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("Invalid variable aggregation mode: 9 for variable: bad"));
  bad = create_variable(
      f(1), {.name = "bad", .synchronization = static_cast<VariableSynchronization>(-1)});
  EXPECT_THAT(bad.status().message(),
              HasSubstr("Invalid variable synchronization mode: -1 for variable: bad"));
}

// TF's cache_variable_reads(): reads inside the scope return the first
// value read even after an assign, on the scope's thread and its replica
// threads; nesting is refused; after the scope reads see the ps again.
TEST_F(VariablePolicyTest, CachedReadsScopeOnTheWorker) {
  ShardedVariable v = variable(f(1), {.name = "cached"});
  Structure r = ok_value(
      ok_value(coordinator_->schedule(
                   "testing/cached_reads",
                   Structure::dict(
                       {{"variable", v.handle().to_structure()}, {"replicas", 2}, {"new", f(5)}})))
          .fetch());
  EXPECT_EQ(r[0].tensor(), f(1));
  EXPECT_EQ(r[1].tensor(), f(1));  // cached despite the assign
  EXPECT_EQ(r[2][0].int_value(), static_cast<int64_t>(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(r[2][1].string_value(), HasSubstr("cache_variable_reads scope cannot be nested"));
  ASSERT_EQ(r[3].size(), 2u);
  EXPECT_EQ(r[3][0].tensor(), f(1));
  EXPECT_EQ(r[3][1].tensor(), f(1));
  EXPECT_EQ(r[4].tensor(), f(5));
  EXPECT_EQ(ok_value(v.read_value()), f(5));
}

// The same on the coordinator, for a sharded variable: every part cached.
TEST_F(VariablePolicyTest, CachedReadsOfAShardedVariableOnTheCoordinator) {
  auto sharded_strategy = ok_value(
      ParameterServerStrategy::create(SimpleClusterResolver(cluster_->cluster_spec(), "chief", 0),
                                      ok_value(fixed_shards_partitioner(2))));
  ShardedVariable v;
  {
    StrategyScope scope = sharded_strategy->scope();
    v = ok_value(create_variable(Tensor::from_vector<float>({1, 2, 3, 4}, {4}), {.name = "c"}));
  }
  const Tensor before = Tensor::from_vector<float>({1, 2, 3, 4}, {4});
  const Tensor after = Tensor::from_vector<float>({5, 6, 7, 8}, {4});
  {
    VariableReadCacheScope scope = ok_value(cache_variable_reads());
    EXPECT_EQ(ok_value(v.read_value()), before);
    ASSERT_TRUE(v.assign(after).ok());
    EXPECT_EQ(ok_value(v.read_value()), before);
    EXPECT_EQ(ok_value(v.variables()[1].read_value()), before.slice(2, 4));
    EXPECT_EQ(cache_variable_reads().status().code(), absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_EQ(ok_value(v.read_value()), after);
  // A new scope starts empty.
  VariableReadCacheScope scope = ok_value(cache_variable_reads());
  EXPECT_EQ(ok_value(v.read_value()), after);
}

}  // namespace
}  // namespace psflow::internal

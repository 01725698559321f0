// DistributedValues / PerReplica, DistributedNest and the examples of TF's
// tf.distribute.DistributedValues and experimental_distribute_values_from_function
// / experimental_local_results documentation.
#include "psflow/distributed_values.h"

#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/dataset.h"
#include "psflow/replica_group.h"
#include "strategy/replica_test_util.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::printed;
using ::psflow::internal::testing::test_group;
using ::testing::HasSubstr;

using Args = std::vector<Structure>;

// TF's `dataset = Dataset.from_tensor_slices([5., 6., 7., 8.]).batch(2)`
// and `next(iter(strategy.experimental_distribute_dataset(dataset)))` on
// two replicas.
absl::StatusOr<PerReplica> first_distributed_batch(const ReplicaGroup& group) {
  Dataset dataset = Dataset::from_tensor_slices(Tensor::from_vector<float>({5, 6, 7, 8})).batch(2);
  absl::StatusOr<DistributedDataset> dist = group.experimental_distribute_dataset(dataset);
  if (!dist.ok()) return dist.status();
  DistributedIterator it = dist->make_iterator();
  absl::StatusOr<std::optional<PerReplica>> next = it.get_next();
  if (!next.ok()) return next.status();
  if (!next->has_value()) return absl::OutOfRangeError("empty dataset");
  return **next;
}

TEST(DistributedValuesTest, PrintsLikeTfRepr) {
  PerReplica v({Tensor::from_vector<float>({5}), Tensor::from_vector<float>({6})});
  EXPECT_EQ(v.debug_string(),
            "PerReplica:{\n"
            "  0: Tensor<float32, [1]> [5],\n"
            "  1: Tensor<float32, [1]> [6]\n"
            "}");
  std::ostringstream os;
  os << v;
  EXPECT_EQ(os.str(), v.debug_string());
  EXPECT_EQ(v.type_name(), "PerReplica");
  EXPECT_EQ(v.num_replicas(), 2);
  EXPECT_EQ(v[1], Structure(Tensor::from_vector<float>({6})));

  PerReplica one({Structure(3)});
  EXPECT_EQ(one.debug_string(), "PerReplica:{\n  0: 3\n}");

  PerReplica nested({Structure::tuple({1, 2.5}), Structure::tuple({3, 4.5})});
  EXPECT_EQ(nested.debug_string(), "PerReplica:{\n  0: (1, 2.5),\n  1: (3, 4.5)\n}");
}

TEST(DistributedValuesTest, FourReplicaPrintout) {
  PerReplica v({0, 1, 2, 3});
  EXPECT_EQ(v.debug_string(), "PerReplica:{\n  0: 0,\n  1: 1,\n  2: 2,\n  3: 3\n}");
}

TEST(DistributedValuesTest, EqualityComparesComponents) {
  EXPECT_EQ(PerReplica({1, 2}), PerReplica({1, 2}));
  EXPECT_FALSE(PerReplica({1, 2}) == PerReplica({1, 3}));
  EXPECT_FALSE(PerReplica({1, 2}) == PerReplica({1, 2, 3}));
}

TEST(DistributedValuesTest, EmptyPerReplicaAborts) {
  EXPECT_DEATH({ PerReplica v({}); }, "at least one value");
}

// Example 1 of tf.distribute.DistributedValues: created from a distributed
// dataset.
TEST(DistributedValuesTest, ExampleCreatedFromDistributedDataset) {
  ReplicaGroup group = test_group(2);
  absl::StatusOr<PerReplica> v = first_distributed_batch(group);
  EXPECT_EQ(printed(v),
            "PerReplica:{\n"
            "  0: Tensor<float32, [1]> [5],\n"
            "  1: Tensor<float32, [1]> [6]\n"
            "}");
}

// Example 2: returned by run.
TEST(DistributedValuesTest, ExampleReturnedByRun) {
  ReplicaGroup group = test_group(2);
  absl::StatusOr<PerReplica> v =
      group.run([](const ReplicaContext&, const Args&) -> absl::StatusOr<Structure> {
        return Structure(get_replica_context()->replica_id_in_sync_group());
      });
  EXPECT_EQ(printed(v), "PerReplica:{\n  0: 0,\n  1: 1\n}");
}

// Example 3: as input into run.
TEST(DistributedValuesTest, ExampleAsInputIntoRun) {
  ReplicaGroup group = test_group(2);
  PSFLOW_DV_ASSIGN(PerReplica v, first_distributed_batch(group));
  absl::StatusOr<PerReplica> updated = group.run(
      [](const ReplicaContext&, const Args& args) -> absl::StatusOr<Structure> {
        Tensor out = args[0].tensor().clone();
        out.mutable_vec<float>() += 1.0f;
        return out;
      },
      {v});
  EXPECT_EQ(printed(updated),
            "PerReplica:{\n"
            "  0: Tensor<float32, [1]> [6],\n"
            "  1: Tensor<float32, [1]> [7]\n"
            "}");
}

// Example 4: reduce value (SUM, axis=0 of [5.] and [6.] is 11.0).
TEST(DistributedValuesTest, ExampleReduceValue) {
  ReplicaGroup group = test_group(2);
  PSFLOW_DV_ASSIGN(PerReplica v, first_distributed_batch(group));
  EXPECT_EQ(printed(group.reduce(ReduceOp::kSum, v, 0)), "Tensor<float32, []> 11");
}

// Example 5: inspect local replica values.
TEST(DistributedValuesTest, ExampleLocalResults) {
  ReplicaGroup group = test_group(2);
  PSFLOW_DV_ASSIGN(PerReplica v, first_distributed_batch(group));
  Structure local = group.experimental_local_results(v);
  EXPECT_EQ(local.debug_string(), "(Tensor<float32, [1]> [5], Tensor<float32, [1]> [6])");
  ASSERT_EQ(local.kind(), Structure::Kind::kTuple);
  EXPECT_EQ(local.size(), 2u);
}

TEST(DistributedValuesTest, LocalResultsOfPlainValueIsOneTuple) {
  ReplicaGroup group = test_group(2);
  EXPECT_EQ(group.experimental_local_results(Structure(Tensor::scalar(1.0f))).debug_string(),
            "(Tensor<float32, []> 1,)");
  EXPECT_EQ(group.experimental_local_results(Structure(7)).debug_string(), "(7,)");
}

class DistributedValuesFromFunctionTest : public ::testing::TestWithParam<int> {};

// experimental_distribute_values_from_function example 1: a constant.
TEST_P(DistributedValuesFromFunctionTest, ConstantPerReplica) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  PSFLOW_DV_ASSIGN(PerReplica v, group.experimental_distribute_values_from_function(
                                     [](const ValueContext&) -> absl::StatusOr<Structure> {
                                       return Tensor::scalar(1.0f);
                                     }));
  std::string expected = "(";
  for (int i = 0; i < n; ++i)
    expected += i == 0 ? "Tensor<float32, []> 1" : ", Tensor<float32, []> 1";
  expected += ")";
  EXPECT_EQ(group.experimental_local_results(v).debug_string(), expected);
}

// Example 2: indexing an array by replica id; TF prints (3.0, 2.0).
TEST_P(DistributedValuesFromFunctionTest, IndexByReplicaId) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  const std::vector<double> array_value = {3., 2., 1., 0.};
  PSFLOW_DV_ASSIGN(PerReplica v, group.experimental_distribute_values_from_function(
                                     [&](const ValueContext& ctx) -> absl::StatusOr<Structure> {
                                       return array_value[ctx.replica_id_in_sync_group()];
                                     }));
  EXPECT_EQ(group.experimental_local_results(v).debug_string(),
            n == 2 ? "(3.0, 2.0)" : "(3.0, 2.0, 1.0, 0.0)");
}

// Example 3: num_replicas_in_sync; TF prints (2, 2).
TEST_P(DistributedValuesFromFunctionTest, NumReplicasInSync) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  PSFLOW_DV_ASSIGN(PerReplica v, group.experimental_distribute_values_from_function(
                                     [](const ValueContext& ctx) -> absl::StatusOr<Structure> {
                                       return ctx.num_replicas_in_sync();
                                     }));
  EXPECT_EQ(group.experimental_local_results(v).debug_string(), n == 2 ? "(2, 2)" : "(4, 4, 4, 4)");
}

// Example 4: one value per replica placed beforehand, picked by replica id.
TEST_P(DistributedValuesFromFunctionTest, PickPreparedValues) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  std::vector<Tensor> multiple_values;
  for (int i = 0; i < n; ++i) multiple_values.push_back(Tensor::scalar(1.0f));
  PSFLOW_DV_ASSIGN(PerReplica v, group.experimental_distribute_values_from_function(
                                     [&](const ValueContext& ctx) -> absl::StatusOr<Structure> {
                                       return multiple_values[ctx.replica_id_in_sync_group()];
                                     }));
  ASSERT_EQ(v.num_replicas(), n);
  for (int i = 0; i < n; ++i) {
    // The same buffer: no copy was made.
    EXPECT_EQ(v[i].tensor().raw_data(), multiple_values[i].raw_data());
  }
}

TEST_P(DistributedValuesFromFunctionTest, CalledInReplicaOrderOnCallingThread) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  std::vector<int> order;
  const std::thread::id caller = std::this_thread::get_id();
  bool same_thread = true;
  ASSERT_TRUE(group
                  .experimental_distribute_values_from_function(
                      [&](const ValueContext& ctx) -> absl::StatusOr<Structure> {
                        order.push_back(ctx.replica_id_in_sync_group());
                        same_thread = same_thread && std::this_thread::get_id() == caller;
                        return Structure();
                      })
                  .ok());
  std::vector<int> expected;
  for (int i = 0; i < n; ++i) expected.push_back(i);
  EXPECT_EQ(order, expected);
  EXPECT_TRUE(same_thread);
}

INSTANTIATE_TEST_SUITE_P(Replicas, DistributedValuesFromFunctionTest, ::testing::Values(2, 4));

TEST(DistributedValuesTest, ValuesFromFunctionErrorNamesReplica) {
  ReplicaGroup group = test_group(4);
  absl::StatusOr<PerReplica> v = group.experimental_distribute_values_from_function(
      [](const ValueContext& ctx) -> absl::StatusOr<Structure> {
        if (ctx.replica_id_in_sync_group() == 2) return absl::NotFoundError("no value");
        return 1;
      });
  EXPECT_EQ(v.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(v.status().message(), HasSubstr("replica 2: no value"));
}

TEST(DistributedValuesTest, ValuesFromFunctionAlwaysWrapsEvenForOneReplica) {
  ReplicaGroup group = test_group(1);
  PSFLOW_DV_ASSIGN(PerReplica v,
                   group.experimental_distribute_values_from_function(
                       [](const ValueContext&) -> absl::StatusOr<Structure> { return 5; }));
  EXPECT_EQ(v.debug_string(), "PerReplica:{\n  0: 5\n}");
}

TEST(DistributedNestTest, SelectReplicaReplacesDistributedLeavesAtAnyDepth) {
  PerReplica x({10, 11});
  PerReplica y({Tensor::scalar(1.0f), Tensor::scalar(2.0f)});
  DistributedNest nest = DistributedNest::tuple(
      {x, 3, DistributedNest::dict({{"a", y}, {"b", "plain"}}), DistributedNest::list({x})});
  EXPECT_TRUE(nest.contains_distributed());
  EXPECT_EQ(printed(nest.select_replica(0, 2)),
            "(10, 3, {'a': Tensor<float32, []> 1, 'b': 'plain'}, [10])");
  EXPECT_EQ(printed(nest.select_replica(1, 2)),
            "(11, 3, {'a': Tensor<float32, []> 2, 'b': 'plain'}, [11])");
  EXPECT_THAT(nest.debug_string(), HasSubstr("PerReplica:{\n  0: 10,\n  1: 11\n}, 3, {'a': "));
}

TEST(DistributedNestTest, SelectReplicaChecksTheReplicaCount) {
  DistributedNest nest = DistributedNest::tuple({1, DistributedNest::list({PerReplica({1, 2})})});
  absl::StatusOr<Structure> s = nest.select_replica(0, 4);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(),
              HasSubstr("at [1][0]: PerReplica has 2 values but there are 4"));
}

TEST(DistributedNestTest, PlainValuesPassUnchanged) {
  DistributedNest plain = Structure::tuple({1, Tensor::scalar(2.0)});
  EXPECT_TRUE(plain.is_plain());
  EXPECT_FALSE(plain.contains_distributed());
  EXPECT_EQ(printed(plain.select_replica(3, 4)), "(1, Tensor<float64, []> 2)");
  DistributedNest none;
  EXPECT_EQ(none.debug_string(), "None");
}

}  // namespace
}  // namespace psflow::internal

// ReplicaGroup::reduce and ::gather: the examples and rules of TF's
// strategy.reduce / strategy.gather, with 2 and 4 replicas.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
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
using Result = absl::StatusOr<Structure>;

// The steps of experimental_distribute_dataset(dataset) on `group`.
std::vector<PerReplica> distribute(const ReplicaGroup& group, const Dataset& dataset) {
  std::vector<PerReplica> steps;
  absl::StatusOr<DistributedDataset> dist = group.experimental_distribute_dataset(dataset);
  EXPECT_TRUE(dist.ok()) << dist.status();
  if (!dist.ok()) return steps;
  DistributedIterator it = dist->make_iterator();
  while (true) {
    absl::StatusOr<std::optional<PerReplica>> next = it.get_next();
    EXPECT_TRUE(next.ok()) << next.status();
    if (!next.ok() || !next->has_value()) break;
    steps.push_back(**next);
  }
  return steps;
}

std::vector<float> iota_floats(int n) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back(static_cast<float>(i));
  return v;
}

class ReduceTest : public ::testing::TestWithParam<int> {};

// strategy.reduce docstring: SUM of the replica ids (1 on two replicas).
TEST_P(ReduceTest, ExampleSumOfReplicaIds) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  PSFLOW_DV_ASSIGN(PerReplica per_replica_result,
                   group.run([](const ReplicaContext& ctx, const Args&) -> Result {
                     return Tensor::scalar<int32_t>(ctx.replica_id_in_sync_group());
                   }));
  EXPECT_EQ(printed(group.reduce("SUM", per_replica_result, std::nullopt)),
            "Tensor<int32, []> " + std::to_string(n * (n - 1) / 2));
}

// "Global batch size of 8": axis=None sums across replicas only, axis=0
// also across the batch (0+1+...+7).
TEST_P(ReduceTest, ExampleGlobalBatchOfEight) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  std::vector<PerReplica> steps = distribute(group, Dataset::range(8).batch(8));
  ASSERT_EQ(steps.size(), 1u);
  const PerReplica& per_replica_result = steps[0];
  EXPECT_EQ(printed(group.reduce("sum", per_replica_result, std::nullopt)),
            n == 2 ? "Tensor<int64, [4]> [4, 6, 8, 10]" : "Tensor<int64, [2]> [12, 16]");
  EXPECT_EQ(printed(group.reduce("sum", per_replica_result, 0)), "Tensor<int64, []> 28");
}

// A last partial batch of 6 (global batch 8): MEAN with axis=0 divides by
// 6, the number of examples, not by the replica count; axis=None fails on
// the shape mismatch.
TEST_P(ReduceTest, MeanOfPartialLastBatchDividesByExampleCount) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  std::vector<PerReplica> steps = distribute(
      group, Dataset::from_tensor_slices(Tensor::from_vector<float>(iota_floats(14))).batch(8));
  ASSERT_EQ(steps.size(), 2u);
  const PerReplica& last = steps[1];
  // 8..13: 4 + 2 on two replicas, 2 + 2 + 2 + 0 on four.
  EXPECT_EQ(last[0].tensor().dim(0), n == 2 ? 4 : 2);
  EXPECT_EQ(last[n - 1].tensor().dim(0), n == 2 ? 2 : 0);
  EXPECT_EQ(printed(group.reduce(ReduceOp::kMean, last, 0)), "Tensor<float32, []> 10.5");
  EXPECT_EQ(printed(group.reduce(ReduceOp::kSum, last, 0)), "Tensor<float32, []> 63");
  absl::StatusOr<Structure> no_axis = group.reduce(ReduceOp::kMean, last, std::nullopt);
  EXPECT_EQ(no_axis.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_axis.status().message(), HasSubstr("reduce(MEAN, axis=None): replica "));
  // The full first batch: mean of 0..7.
  EXPECT_EQ(printed(group.reduce(ReduceOp::kMean, steps[0], 0)), "Tensor<float32, []> 3.5");
}

TEST_P(ReduceTest, MeanWithoutAxisDividesByReplicaCount) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  std::vector<Structure> values;
  for (int r = 0; r < n; ++r) values.push_back(Tensor::from_vector<double>({1.0 * r, 2.0}));
  const double mean_id = (n - 1) / 2.0;
  absl::StatusOr<Structure> mean = group.reduce(ReduceOp::kMean, PerReplica(values), std::nullopt);
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_TRUE(all_close(mean->tensor(), Tensor::from_vector<double>({mean_id, 2.0})).ok());
}

TEST_P(ReduceTest, AxisAlongOtherDimensionsAndNegativeAxes) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  // Replica r holds r + 1 rows of [1, 2, 3].
  std::vector<Structure> values;
  int rows = 0;
  for (int r = 0; r < n; ++r) {
    std::vector<float> v;
    for (int i = 0; i <= r; ++i) v.insert(v.end(), {1, 2, 3});
    values.push_back(Tensor::from_vector<float>(v, {r + 1, 3}));
    rows += r + 1;
  }
  PerReplica batch(values);
  const std::string rows_text = std::to_string(rows);
  EXPECT_EQ(printed(group.reduce(ReduceOp::kSum, batch, 0)),
            "Tensor<float32, [3]> [" + rows_text + ", " + std::to_string(2 * rows) + ", " +
                std::to_string(3 * rows) + "]");
  EXPECT_EQ(printed(group.reduce(ReduceOp::kMean, batch, -2)), "Tensor<float32, [3]> [1, 2, 3]");
  // Both axes: every element; MEAN divides by the element count 3 * rows.
  EXPECT_EQ(printed(group.reduce(ReduceOp::kSum, batch, std::vector<int>{0, 1})),
            "Tensor<float32, []> " + std::to_string(6 * rows));
  EXPECT_EQ(printed(group.reduce(ReduceOp::kMean, batch, std::vector<int>{-1, 0})),
            "Tensor<float32, []> 2");
  // Summing the features leaves per-replica batch sizes that differ.
  absl::StatusOr<Structure> features = group.reduce(ReduceOp::kSum, batch, -1);
  EXPECT_EQ(features.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(ReduceTest, AxisOutOfRangeUsesTfMessage) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  PerReplica v(std::vector<Structure>(n, Tensor::from_vector<float>({1, 2})));
  for (int axis : {1, -2, 5}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
      absl::StatusOr<Structure> s = group.reduce(op, v, axis);
      EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(s.status().message(), HasSubstr("`axis` = " + std::to_string(axis) +
                                                  " out of range for `value` with rank 1"));
    }
  }
  EXPECT_EQ(group.reduce(ReduceOp::kSum, v, std::vector<int>{0, -1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // A scalar has no axis 0.
  PerReplica scalars(std::vector<Structure>(n, Tensor::scalar(1.0f)));
  EXPECT_EQ(group.reduce(ReduceOp::kSum, scalars, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(printed(group.reduce(ReduceOp::kSum, scalars, std::vector<int>{})),
            "Tensor<float32, []> " + std::to_string(n));
}

TEST_P(ReduceTest, ReduceOpStrings) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  PerReplica v(std::vector<Structure>(n, Tensor::scalar(2.0f)));
  for (const char* op : {"sum", "SUM", "Sum"}) {
    EXPECT_EQ(printed(group.reduce(op, v, std::nullopt)),
              "Tensor<float32, []> " + std::to_string(2 * n));
  }
  for (const char* op : {"mean", "MEAN", "mEaN"}) {
    EXPECT_EQ(printed(group.reduce(op, v, std::nullopt)), "Tensor<float32, []> 2");
  }
  for (const char* op : {"max", "", "sum "}) {
    absl::StatusOr<Structure> s = group.reduce(op, v, std::nullopt);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << op;
    const std::string quoted = absl::StrCat("'", op, "'");
    EXPECT_THAT(s.status().message(), HasSubstr(quoted));
    EXPECT_EQ(group.reduce(op, v, std::vector<int>{0}).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

// TF's ParameterServerStrategy returns a non-distributed value as is for
// axis=None; with an axis, run() makes it per-replica first.
TEST_P(ReduceTest, PlainValue) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  Tensor t = Tensor::from_vector<float>({1, 2, 3, 6});
  EXPECT_EQ(printed(group.reduce(ReduceOp::kSum, t, std::nullopt)), t.debug_string());
  EXPECT_EQ(printed(group.reduce(ReduceOp::kMean, t, std::nullopt)), t.debug_string());
  EXPECT_EQ(printed(group.reduce(ReduceOp::kMean, t, 0)), "Tensor<float32, []> 3");
  EXPECT_EQ(printed(group.reduce(ReduceOp::kSum, t, 0)),
            "Tensor<float32, []> " + std::to_string(12 * n));
  EXPECT_EQ(printed(group.reduce(ReduceOp::kSum, Structure("text"), std::nullopt)), "'text'");
}

TEST_P(ReduceTest, DtypesAndIntegerMean) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  std::vector<Structure> i32, i64, f64;
  for (int r = 0; r < n; ++r) {
    i32.push_back(Tensor::from_vector<int32_t>({r, 1}));
    i64.push_back(Tensor::from_vector<int64_t>({r, 1}));
    f64.push_back(Tensor::from_vector<double>({1.0 * r, 1.0}));
  }
  const std::string ids = std::to_string(n * (n - 1) / 2);
  const std::string count = std::to_string(n);
  EXPECT_EQ(printed(group.reduce(ReduceOp::kSum, PerReplica(i32), std::nullopt)),
            "Tensor<int32, [2]> [" + ids + ", " + count + "]");
  EXPECT_EQ(printed(group.reduce(ReduceOp::kSum, PerReplica(i64), 0)),
            "Tensor<int64, []> " + std::to_string(n * (n - 1) / 2 + n));
  EXPECT_EQ(printed(group.reduce(ReduceOp::kSum, PerReplica(f64), std::nullopt)),
            "Tensor<float64, [2]> [" + ids + ", " + count + "]");
  // Integer MEAN is true division, float64.
  EXPECT_EQ(printed(group.reduce(ReduceOp::kMean, PerReplica(i32), std::nullopt)),
            n == 2 ? "Tensor<float64, [2]> [0.5, 1]" : "Tensor<float64, [2]> [1.5, 1]");
  EXPECT_EQ(printed(group.reduce(ReduceOp::kMean, PerReplica(i64), 0)),
            n == 2 ? "Tensor<float64, []> 0.75" : "Tensor<float64, []> 1.25");
  // Python-like numbers count as int64 / float64 scalars.
  std::vector<Structure> ints;
  for (int r = 0; r < n; ++r) ints.push_back(r);
  EXPECT_EQ(printed(group.reduce(ReduceOp::kSum, PerReplica(ints), std::nullopt)),
            "Tensor<int64, []> " + ids);
}

TEST_P(ReduceTest, UnsupportedValuesAreInvalidArgument) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  for (const Structure& leaf :
       {Structure(Tensor::from_vector<bool>({true})), Structure(Tensor::from_strings({"a"})),
        Structure("a"), Structure()}) {
    PerReplica v(std::vector<Structure>(n, leaf));
    absl::StatusOr<Structure> s = group.reduce(ReduceOp::kSum, v, std::nullopt);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << leaf;
    EXPECT_EQ(group.reduce(ReduceOp::kMean, v, 0).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
  std::vector<Structure> mixed(n, Tensor::scalar(1.0f));
  mixed[n - 1] = Tensor::scalar(1.0);
  absl::StatusOr<Structure> s = group.reduce(ReduceOp::kSum, PerReplica(mixed), std::nullopt);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("replica " + std::to_string(n - 1) +
                                              " has float64 [] but replica 0 has float32 []"));
}

TEST_P(ReduceTest, NestedComponentsReduceLeafwise) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  std::vector<Structure> values;
  for (int r = 0; r < n; ++r) {
    values.push_back(Structure::tuple(
        {Tensor::scalar(1.0f), Structure::dict({{"loss", Tensor::from_vector<float>({2, 4})}})}));
  }
  PerReplica v(values);
  absl::StatusOr<Structure> mean = group.reduce(ReduceOp::kMean, v, std::nullopt);
  EXPECT_EQ(printed(mean), "(Tensor<float32, []> 1, {'loss': Tensor<float32, [2]> [2, 4]})");
  // A scalar leaf has no axis 0: the error names the leaf.
  absl::StatusOr<Structure> bad_axis = group.reduce(ReduceOp::kMean, v, 0);
  EXPECT_EQ(bad_axis.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_axis.status().message(), HasSubstr("leaf 0: replica 0: `axis` = 0 out of range"));

  // Leaves of rank >= 1 reduce along the axis leaf by leaf.
  std::vector<Structure> batches;
  for (int r = 0; r < n; ++r) {
    batches.push_back(Structure::tuple(
        {Tensor::from_vector<float>({1, 3}),
         Structure::dict({{"loss", Tensor::from_vector<double>({1.0 * r, 1.0 * r})}})}));
  }
  EXPECT_EQ(printed(group.reduce(ReduceOp::kMean, PerReplica(batches), 0)),
            "(Tensor<float32, []> 2, {'loss': Tensor<float64, []> " +
                std::string(n == 2 ? "0.5" : "1.5") + "})");

  std::vector<Structure> mismatched = values;
  mismatched[1] = Structure::tuple({Tensor::scalar(1.0f)});
  absl::StatusOr<Structure> s = group.reduce(ReduceOp::kSum, PerReplica(mismatched), std::nullopt);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("replica 1 does not nest like replica 0"));

  // A nest of distributed and plain leaves (TF maps reduce over it).
  DistributedNest nest = DistributedNest::tuple({v, 5});
  EXPECT_EQ(printed(group.reduce(ReduceOp::kSum, nest, std::nullopt)),
            "((Tensor<float32, []> " + std::to_string(n) + ", {'loss': Tensor<float32, [2]> [" +
                std::to_string(2 * n) + ", " + std::to_string(4 * n) + "]}), 5)");
}

INSTANTIATE_TEST_SUITE_P(Replicas, ReduceTest, ::testing::Values(2, 4));

// strategy.gather docstring, first example: two replicas of [[1], [2]].
TEST(GatherTest, ExampleTwoReplicasAxisZero) {
  ReplicaGroup group = test_group(2);
  PSFLOW_DV_ASSIGN(
      PerReplica distributed_values,
      group.experimental_distribute_values_from_function([](const ValueContext&) -> Result {
        return Tensor::from_vector<int32_t>({1, 2}, {2, 1});
      }));
  EXPECT_EQ(printed(group.gather(distributed_values, 0)),
            "Tensor<int32, [4, 1]> [[1], [2], [1], [2]]");
}

// Second example: four replicas of reshape(range(6), (1, 2, 3)).
TEST(GatherTest, ExampleFourReplicasEveryAxis) {
  ReplicaGroup group = test_group(4);
  Tensor single_tensor = Tensor::from_vector<int32_t>({0, 1, 2, 3, 4, 5}, {1, 2, 3});
  PSFLOW_DV_ASSIGN(PerReplica distributed_values,
                   group.experimental_distribute_values_from_function(
                       [&](const ValueContext&) -> Result { return single_tensor; }));
  EXPECT_EQ(printed(group.gather(distributed_values, 0)),
            "Tensor<int32, [4, 2, 3]> [[[0, 1, 2], [3, 4, 5]], [[0, 1, 2], [3, 4, 5]], "
            "[[0, 1, 2], [3, 4, 5]], [[0, 1, 2], [3, 4, 5]]]");
  EXPECT_EQ(printed(group.gather(distributed_values, 1)),
            "Tensor<int32, [1, 8, 3]> [[[0, 1, 2], [3, 4, 5], [0, 1, 2], [3, 4, 5], "
            "[0, 1, 2], [3, 4, 5], [0, 1, 2], [3, 4, 5]]]");
  EXPECT_EQ(printed(group.gather(distributed_values, 2)),
            "Tensor<int32, [1, 2, 12]> [[[0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2], "
            "[3, 4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5]]]");
}

TEST(GatherTest, TwoReplicasEveryAxisAndReplicaOrder) {
  ReplicaGroup group = test_group(2);
  PerReplica v({Tensor::from_vector<float>({0, 1, 2, 3, 4, 5}, {1, 2, 3}),
                Tensor::from_vector<float>({6, 7, 8, 9, 10, 11}, {1, 2, 3})});
  EXPECT_EQ(printed(group.gather(v, 0)),
            "Tensor<float32, [2, 2, 3]> [[[0, 1, 2], [3, 4, 5]], [[6, 7, 8], [9, 10, 11]]]");
  EXPECT_EQ(printed(group.gather(v, 1)),
            "Tensor<float32, [1, 4, 3]> [[[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]]");
  EXPECT_EQ(printed(group.gather(v, 2)),
            "Tensor<float32, [1, 2, 6]> [[[0, 1, 2, 6, 7, 8], [3, 4, 5, 9, 10, 11]]]");
}

// The docstring's note: shapes (1, 2, 3) and (1, 3, 3) gather on axis 1
// only.
TEST(GatherTest, ShapesMayDifferOnlyAlongTheAxis) {
  ReplicaGroup group = test_group(2);
  PerReplica v({Tensor(DType::kFloat64, {1, 2, 3}), Tensor(DType::kFloat64, {1, 3, 3})});
  absl::StatusOr<Structure> along1 = group.gather(v, 1);
  ASSERT_TRUE(along1.ok()) << along1.status();
  EXPECT_EQ(along1->tensor().shape(), (Shape{1, 5, 3}));
  for (int axis : {0, 2}) {
    absl::StatusOr<Structure> s = group.gather(v, axis);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.status().message(),
                HasSubstr("replica 1 has float64 [1, 3, 3] but replica 0 has float64 [1, 2, 3]"));
  }
}

TEST(GatherTest, Errors) {
  ReplicaGroup group = test_group(4);
  PerReplica scalars(std::vector<Structure>(4, Tensor::scalar(1.0f)));
  absl::StatusOr<Structure> rank0 = group.gather(scalars, 0);
  EXPECT_EQ(rank0.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(rank0.status().message(), HasSubstr("rank-0"));

  PerReplica v(std::vector<Structure>(4, Tensor(DType::kInt64, {1, 2, 3})));
  for (int axis : {3, -1, 10}) {
    absl::StatusOr<Structure> s = group.gather(v, axis);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << axis;
    EXPECT_THAT(s.status().message(), HasSubstr("out of range [0, 3)"));
  }
  std::vector<Structure> ranks(4, Tensor(DType::kInt64, {2}));
  ranks[3] = Tensor(DType::kInt64, {2, 1});
  EXPECT_EQ(group.gather(PerReplica(ranks), 0).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<Structure> dtypes(4, Tensor(DType::kInt64, {2}));
  dtypes[2] = Tensor(DType::kInt32, {2});
  EXPECT_EQ(group.gather(PerReplica(dtypes), 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(group.gather(PerReplica({1, 2, 3, 4}), 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GatherTest, PlainValueIsReturnedUnchanged) {
  ReplicaGroup group = test_group(4);
  Tensor t = Tensor::from_vector<int64_t>({1, 2});
  EXPECT_EQ(printed(group.gather(t, 0)), t.debug_string());
  EXPECT_EQ(printed(group.gather(Structure(3), 0)), "3");
}

TEST(GatherTest, GatheringDistributedBatchesRebuildsTheGlobalBatch) {
  for (int n : {2, 4}) {
    ReplicaGroup group = test_group(n);
    Dataset images = Dataset::from_tensor_slices(Structure::tuple(
        {Tensor::from_vector<double>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {6, 2}),
         Tensor::from_strings({"a", "b", "c", "d", "e", "f"})}));
    std::vector<PerReplica> steps = distribute(group, images.batch(4));
    ASSERT_EQ(steps.size(), 2u);
    absl::StatusOr<Structure> first = group.gather(steps[0], 0);
    EXPECT_EQ(printed(first),
              "(Tensor<float64, [4, 2]> [[0, 1], [2, 3], [4, 5], [6, 7]], "
              "Tensor<string, [4]> ['a', 'b', 'c', 'd'])");
    absl::StatusOr<Structure> last = group.gather(steps[1], 0);
    EXPECT_EQ(printed(last),
              "(Tensor<float64, [2, 2]> [[8, 9], [10, 11]], Tensor<string, [2]> ['e', 'f'])");
  }
}

}  // namespace
}  // namespace psflow::internal

// experimental_distribute_dataset and distribute_datasets_from_function:
// TF's examples, uneven and partial batches, InputContext.
#include "psflow/distributed_dataset.h"

#include <optional>
#include <string>
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
using Result = absl::StatusOr<Structure>;

// Every step of a pass, or the first error.
absl::StatusOr<std::vector<PerReplica>> all_steps(const DistributedDataset& dist) {
  std::vector<PerReplica> steps;
  DistributedIterator it = dist.make_iterator();
  while (true) {
    absl::StatusOr<std::optional<PerReplica>> next = it.get_next();
    if (!next.ok()) return next.status();
    if (!next->has_value()) return steps;
    steps.push_back(**next);
  }
}

// "[a, b] | [c]" per step: each replica's tensor elements (int64 or float32).
std::string rows(const PerReplica& step) {
  std::string out;
  for (int r = 0; r < step.num_replicas(); ++r) {
    if (r > 0) out += " | ";
    const Tensor& t = step[r].tensor();
    out += "[";
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      if (i > 0) out += ", ";
      out += t.dtype() == DType::kInt64 ? std::to_string(t.flat<int64_t>()[i])
                                        : std::to_string(static_cast<int>(t.flat<float>()[i]));
    }
    out += "]";
  }
  return out;
}

std::vector<std::string> all_rows(const ReplicaGroup& group, const Dataset& dataset) {
  absl::StatusOr<DistributedDataset> dist = group.experimental_distribute_dataset(dataset);
  EXPECT_TRUE(dist.ok()) << dist.status();
  if (!dist.ok()) return {};
  absl::StatusOr<std::vector<PerReplica>> steps = all_steps(*dist);
  EXPECT_TRUE(steps.ok()) << steps.status();
  std::vector<std::string> out;
  if (steps.ok()) {
    for (const PerReplica& step : *steps) out.push_back(rows(step));
  }
  return out;
}

using V = std::vector<std::string>;

// tf.distribute.DistributedValues: batch(2) of [5., 6., 7., 8.] over two
// replicas is [5.] | [6.], then [7.] | [8.].
TEST(DistributedDatasetTest, ExampleFromTensorSlices) {
  ReplicaGroup group = test_group(2);
  Dataset dataset = Dataset::from_tensor_slices(Tensor::from_vector<float>({5, 6, 7, 8})).batch(2);
  absl::StatusOr<DistributedDataset> dist = group.experimental_distribute_dataset(dataset);
  ASSERT_TRUE(dist.ok()) << dist.status();
  EXPECT_EQ(dist->num_replicas_in_sync(), 2);
  absl::StatusOr<std::vector<PerReplica>> steps = all_steps(*dist);
  ASSERT_TRUE(steps.ok()) << steps.status();
  ASSERT_EQ(steps->size(), 2u);
  EXPECT_EQ((*steps)[0].debug_string(),
            "PerReplica:{\n  0: Tensor<float32, [1]> [5],\n  1: Tensor<float32, [1]> [6]\n}");
  EXPECT_EQ((*steps)[1].debug_string(),
            "PerReplica:{\n  0: Tensor<float32, [1]> [7],\n  1: Tensor<float32, [1]> [8]\n}");
}

// experimental_distribute_dataset docstring: range(4).batch(2), replica_fn
// input * 2; TF prints the two PerReplica results.
TEST(DistributedDatasetTest, ExampleRunOverDistributedDataset) {
  ReplicaGroup group = test_group(2);
  const int64_t global_batch_size = 2;
  Dataset dataset = Dataset::range(4).batch(global_batch_size);
  absl::StatusOr<DistributedDataset> dist_dataset = group.experimental_distribute_dataset(dataset);
  ASSERT_TRUE(dist_dataset.ok()) << dist_dataset.status();
  auto replica_fn = [](const ReplicaContext&, const Args& args) -> Result {
    Tensor out = args[0].tensor().clone();
    out.mutable_vec<int64_t>() *= 2;
    return out;
  };
  std::string result = "[";
  DistributedIterator it = dist_dataset->make_iterator();
  for (int step = 0;; ++step) {
    absl::StatusOr<std::optional<PerReplica>> x = it.get_next();
    ASSERT_TRUE(x.ok()) << x.status();
    if (!x->has_value()) break;
    if (step > 0) result += ", ";
    result += printed(group.run(replica_fn, {**x}));
  }
  result += "]";
  EXPECT_EQ(result,
            "[PerReplica:{\n"
            "  0: Tensor<int64, [1]> [0],\n"
            "  1: Tensor<int64, [1]> [2]\n"
            "}, PerReplica:{\n"
            "  0: Tensor<int64, [1]> [4],\n"
            "  1: Tensor<int64, [1]> [6]\n"
            "}]");
}

TEST(DistributedDatasetTest, FourReplicas) {
  ReplicaGroup group = test_group(4);
  EXPECT_EQ(all_rows(group, Dataset::range(8).batch(4)),
            (V{"[0] | [1] | [2] | [3]", "[4] | [5] | [6] | [7]"}));
  EXPECT_EQ(all_rows(group, Dataset::range(16).batch(8)),
            (V{"[0, 1] | [2, 3] | [4, 5] | [6, 7]", "[8, 9] | [10, 11] | [12, 13] | [14, 15]"}));
}

// A last partial batch fills the first replicas first (the reduce
// docstring's 6 = [0, 1, 2, 3] + [4, 5]); replicas left without rows get
// empty batches.
TEST(DistributedDatasetTest, PartialLastBatch) {
  ReplicaGroup two = test_group(2);
  EXPECT_EQ(all_rows(two, Dataset::range(14).batch(8)),
            (V{"[0, 1, 2, 3] | [4, 5, 6, 7]", "[8, 9, 10, 11] | [12, 13]"}));
  EXPECT_EQ(all_rows(two, Dataset::range(5).batch(4)), (V{"[0, 1] | [2, 3]", "[4] | []"}));
  ReplicaGroup four = test_group(4);
  EXPECT_EQ(all_rows(four, Dataset::range(14).batch(8)),
            (V{"[0, 1] | [2, 3] | [4, 5] | [6, 7]", "[8, 9] | [10, 11] | [12, 13] | []"}));
  EXPECT_EQ(all_rows(four, Dataset::range(9).batch(8)),
            (V{"[0, 1] | [2, 3] | [4, 5] | [6, 7]", "[8] | [] | [] | []"}));
  // The empty batches keep the dtype and the other dimensions.
  absl::StatusOr<DistributedDataset> dist = four.experimental_distribute_dataset(
      Dataset::from_tensor_slices(Tensor(DType::kFloat32, {5, 3})).batch(4));
  ASSERT_TRUE(dist.ok());
  absl::StatusOr<std::vector<PerReplica>> steps = all_steps(*dist);
  ASSERT_TRUE(steps.ok()) << steps.status();
  ASSERT_EQ(steps->size(), 2u);
  EXPECT_EQ((*steps)[1][0].tensor().shape(), (Shape{1, 3}));
  EXPECT_EQ((*steps)[1][3].tensor().shape(), (Shape{0, 3}));
  EXPECT_EQ((*steps)[1][3].tensor().dtype(), DType::kFloat32);
}

// A global batch that does not divide: sizes differ by at most one, the
// first replicas taking the extra rows (TF's batch_sizes_for_worker).
TEST(DistributedDatasetTest, GlobalBatchNotDivisibleByReplicas) {
  ReplicaGroup two = test_group(2);
  EXPECT_EQ(all_rows(two, Dataset::range(12).batch(7)),
            (V{"[0, 1, 2, 3] | [4, 5, 6]", "[7, 8, 9, 10] | [11]"}));
  ReplicaGroup four = test_group(4);
  EXPECT_EQ(all_rows(four, Dataset::range(6).batch(6)), (V{"[0, 1] | [2, 3] | [4] | [5]"}));
}

TEST(DistributedDatasetTest, NestedElementsSplitTogether) {
  ReplicaGroup group = test_group(2);
  Dataset dataset =
      Dataset::from_tensor_slices(
          Structure::dict({{"x", Tensor::from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7}, {4, 2})},
                           {"y", Tensor::from_vector<int32_t>({10, 11, 12, 13})}}))
          .batch(4);
  absl::StatusOr<DistributedDataset> dist = group.experimental_distribute_dataset(dataset);
  ASSERT_TRUE(dist.ok());
  absl::StatusOr<std::vector<PerReplica>> steps = all_steps(*dist);
  ASSERT_TRUE(steps.ok()) << steps.status();
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_EQ(
      (*steps)[0].debug_string(),
      "PerReplica:{\n"
      "  0: {'x': Tensor<float32, [2, 2]> [[0, 1], [2, 3]], 'y': Tensor<int32, [2]> [10, 11]},\n"
      "  1: {'x': Tensor<float32, [2, 2]> [[4, 5], [6, 7]], 'y': Tensor<int32, [2]> [12, 13]}\n"
      "}");
}

TEST(DistributedDatasetTest, EveryIteratorIsAFreshPass) {
  ReplicaGroup group = test_group(2);
  absl::StatusOr<DistributedDataset> dist =
      group.experimental_distribute_dataset(Dataset::range(4).batch(2));
  ASSERT_TRUE(dist.ok());
  DistributedIterator a = dist->make_iterator();
  ASSERT_TRUE(a.get_next().ok());
  absl::StatusOr<std::vector<PerReplica>> b = all_steps(*dist);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->size(), 2u);
  absl::StatusOr<std::optional<PerReplica>> second = a.get_next();
  ASSERT_TRUE(second.ok() && second->has_value());
  EXPECT_EQ(rows(**second), "[2] | [3]");
  absl::StatusOr<std::optional<PerReplica>> end = a.get_next();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
  end = a.get_next();  // And stays over.
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
}

TEST(DistributedDatasetTest, Errors) {
  ReplicaGroup group = test_group(2);
  // A deferred argument error of the pipeline surfaces at once.
  absl::StatusOr<DistributedDataset> bad =
      group.experimental_distribute_dataset(Dataset::range(4).batch(0));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("experimental_distribute_dataset: "));
  EXPECT_EQ(group.experimental_distribute_dataset(Dataset()).status().code(),
            absl::StatusCode::kFailedPrecondition);

  // Unbatched elements cannot be split.
  absl::StatusOr<DistributedDataset> unbatched =
      group.experimental_distribute_dataset(Dataset::range(4));
  ASSERT_TRUE(unbatched.ok());
  absl::StatusOr<std::vector<PerReplica>> steps = all_steps(*unbatched);
  EXPECT_EQ(steps.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(steps.status().message(), HasSubstr("batch the dataset first"));

  // Input errors come back from get_next.
  absl::StatusOr<DistributedDataset> failing = group.experimental_distribute_dataset(
      Dataset::range(4).batch(2).map([](Structure) -> absl::StatusOr<Structure> {
        return absl::DataLossError("corrupt record");
      }));
  ASSERT_TRUE(failing.ok());
  EXPECT_EQ(all_steps(*failing).status().code(), absl::StatusCode::kDataLoss);
}

TEST(DistributedInputContextTest, PerReplicaBatchSize) {
  InputContext ctx(1, 0, 4);
  EXPECT_EQ(ctx.num_input_pipelines(), 1);
  EXPECT_EQ(ctx.input_pipeline_id(), 0);
  EXPECT_EQ(ctx.num_replicas_in_sync(), 4);
  absl::StatusOr<int64_t> size = ctx.get_per_replica_batch_size(64);
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, 16);
  absl::StatusOr<int64_t> bad = ctx.get_per_replica_batch_size(10);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "The `global_batch_size` 10 is not divisible by `num_replicas_in_sync` 4");
  InputContext defaults;
  EXPECT_EQ(defaults.num_replicas_in_sync(), 1);
  EXPECT_EQ(*defaults.get_per_replica_batch_size(3), 3);
}

class DistributedDatasetsFromFunctionTest : public ::testing::TestWithParam<int> {};

TEST_P(DistributedDatasetsFromFunctionTest, OneElementPerReplicaPerStep) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  int calls = 0;
  InputContext seen;
  absl::StatusOr<DistributedDataset> dist = group.distribute_datasets_from_function(
      [&](const InputContext& ctx) -> absl::StatusOr<Dataset> {
        ++calls;
        seen = ctx;
        absl::StatusOr<int64_t> batch = ctx.get_per_replica_batch_size(8);
        if (!batch.ok()) return batch.status();
        return Dataset::range(16).batch(*batch);
      });
  ASSERT_TRUE(dist.ok()) << dist.status();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen.num_input_pipelines(), 1);
  EXPECT_EQ(seen.input_pipeline_id(), 0);
  EXPECT_EQ(seen.num_replicas_in_sync(), n);
  absl::StatusOr<std::vector<PerReplica>> steps = all_steps(*dist);
  ASSERT_TRUE(steps.ok()) << steps.status();
  std::vector<std::string> got;
  for (const PerReplica& step : *steps) got.push_back(rows(step));
  const V want2{"[0, 1, 2, 3] | [4, 5, 6, 7]", "[8, 9, 10, 11] | [12, 13, 14, 15]"};
  const V want4{"[0, 1] | [2, 3] | [4, 5] | [6, 7]", "[8, 9] | [10, 11] | [12, 13] | [14, 15]"};
  EXPECT_EQ(got, n == 2 ? want2 : want4);
  // The dataset is not re-batched: a reduce over a step covers the global batch.
  absl::StatusOr<Structure> total = group.reduce(ReduceOp::kSum, (*steps)[0], 0);
  EXPECT_EQ(printed(total), "Tensor<int64, []> 28");
}

// The input runs out part-way through a step: the replicas left without
// data get empty batches.
TEST_P(DistributedDatasetsFromFunctionTest, PartialStep) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  absl::StatusOr<DistributedDataset> dist =
      group.distribute_datasets_from_function([&](const InputContext&) -> absl::StatusOr<Dataset> {
        return Dataset::range(n + 1).batch(1);
      });
  ASSERT_TRUE(dist.ok()) << dist.status();
  absl::StatusOr<std::vector<PerReplica>> steps = all_steps(*dist);
  ASSERT_TRUE(steps.ok()) << steps.status();
  ASSERT_EQ(steps->size(), 2u);
  EXPECT_EQ(rows((*steps)[1]), n == 2 ? "[2] | []" : "[4] | [] | [] | []");
  // Unbatched elements cannot be padded with empty batches.
  absl::StatusOr<DistributedDataset> unbatched = group.distribute_datasets_from_function(
      [&](const InputContext&) -> absl::StatusOr<Dataset> { return Dataset::range(n + 1); });
  ASSERT_TRUE(unbatched.ok());
  EXPECT_EQ(all_steps(*unbatched).status().code(), absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(Replicas, DistributedDatasetsFromFunctionTest, ::testing::Values(2, 4));

TEST(DistributedDatasetsFromFunctionTest, InputPipelineOptionsReachTheContext) {
  ReplicaGroupOptions options;
  options.num_input_pipelines = 3;
  options.input_pipeline_id = 2;
  absl::StatusOr<ReplicaGroup> group = ReplicaGroup::create(2, options);
  ASSERT_TRUE(group.ok());
  InputContext seen;
  ASSERT_TRUE(group
                  ->distribute_datasets_from_function(
                      [&](const InputContext& ctx) -> absl::StatusOr<Dataset> {
                        seen = ctx;
                        return Dataset::range(4)
                            .shard(ctx.num_input_pipelines(), ctx.input_pipeline_id())
                            .batch(1);
                      })
                  .ok());
  EXPECT_EQ(seen.num_input_pipelines(), 3);
  EXPECT_EQ(seen.input_pipeline_id(), 2);
  EXPECT_EQ(seen.num_replicas_in_sync(), 2);
}

TEST(DistributedDatasetsFromFunctionTest, Errors) {
  ReplicaGroup group = test_group(2);
  absl::StatusOr<DistributedDataset> failed =
      group.distribute_datasets_from_function([](const InputContext&) -> absl::StatusOr<Dataset> {
        return absl::NotFoundError("no files");
      });
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(failed.status().message(), HasSubstr("no files"));
  absl::StatusOr<DistributedDataset> bad = group.distribute_datasets_from_function(
      [](const InputContext&) -> absl::StatusOr<Dataset> { return Dataset::range(3).shard(2, 5); });
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(group.distribute_datasets_from_function(nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace psflow::internal

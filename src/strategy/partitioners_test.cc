#include "psflow/partitioners.h"

#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

std::vector<int64_t> run(const absl::StatusOr<Partitioner>& p, const Shape& shape,
                         DType dtype = DType::kFloat32) {
  EXPECT_TRUE(p.ok()) << p.status();
  auto r = (*p)(shape, dtype);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : std::vector<int64_t>{};
}

using V = std::vector<int64_t>;

// Examples from TF's sharded_variable_test / partitioned_variables.
TEST(PartitionersTest, FixedShards) {
  EXPECT_EQ(run(fixed_shards_partitioner(2), {10, 3}), (V{2, 1}));
  EXPECT_EQ(run(fixed_shards_partitioner(4), {3}), (V{3}));
  EXPECT_EQ(fixed_shards_partitioner(0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PartitionersTest, MinSize) {
  EXPECT_EQ(run(min_size_partitioner(4, 2), {6, 1}), (V{2, 1}));
  EXPECT_EQ(run(min_size_partitioner(4, 10), {6, 1}), (V{6, 1}));
  // Defaults: 256 KiB shards, one shard at most.
  EXPECT_EQ(run(min_size_partitioner(), {1 << 20, 4}), (V{1, 1}));
  // 1 MiB of float32 over 256 KiB shards, up to 8 -> 4.
  EXPECT_EQ(run(min_size_partitioner(256 << 10, 8), {1 << 16, 4}), (V{4, 1}));
  // Strings count bytes_per_string each: 100 strings * 16 bytes / 400 -> 4.
  EXPECT_EQ(run(min_size_partitioner(400, 10, 16), {100}, DType::kString), (V{4}));
  const std::vector<std::pair<absl::StatusOr<Partitioner>, std::string>> bad = {
      {min_size_partitioner(0), "Argument `min_shard_bytes` must be positive. Received: 0"},
      {min_size_partitioner(4, 0), "Argument `max_shards` must be positive. Received: 0"},
      {min_size_partitioner(4, 1, -2),
       "Argument `bytes_per_string` must be positive. Received: -2"},
  };
  for (const auto& [partitioner, message] : bad) {
    EXPECT_EQ(partitioner.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(partitioner.status().message(), "MinSizePartitioner: " + message);
  }
}

TEST(PartitionersTest, MaxSize) {
  EXPECT_EQ(run(max_size_partitioner(4), {6, 1}), (V{6, 1}));
  EXPECT_EQ(run(max_size_partitioner(4, 2), {6, 1}), (V{2, 1}));
  EXPECT_EQ(run(max_size_partitioner(1024), {6, 1}), (V{1, 1}));
  // A row bigger than the limit still makes one row per shard.
  EXPECT_EQ(run(max_size_partitioner(8), {3, 100}), (V{3, 1}));
  const std::vector<std::pair<absl::StatusOr<Partitioner>, std::string>> bad = {
      {max_size_partitioner(0), "Argument `max_shard_bytes` must be positive. Received: 0"},
      {max_size_partitioner(4, -1), "Argument `max_shards` must be positive. Received: -1"},
      {max_size_partitioner(4, std::nullopt, 0),
       "Argument `bytes_per_string` must be positive. Received: 0"},
  };
  for (const auto& [partitioner, message] : bad) {
    EXPECT_EQ(partitioner.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(partitioner.status().message(), "MaxSizePartitioner: " + message);
  }
  // max_shards = 0 is no limit, as TF's falsy check makes it.
  EXPECT_EQ(run(max_size_partitioner(4, 0), {6, 1}), (V{6, 1}));
  // Rows of no bytes are not split; a variable needs a dtype.
  EXPECT_EQ(run(max_size_partitioner(4), {6, 0}), (V{1, 1}));
  auto p = max_size_partitioner(4);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)({6, 1}, DType::kInvalid).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PartitionersTest, ScalarsAreRejected) {
  auto p = fixed_shards_partitioner(2);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)({}, DType::kFloat32).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PartitionersTest, DivSplit) {
  EXPECT_EQ(div_partition_sizes(13, 5), (V{3, 3, 3, 2, 2}));
  EXPECT_EQ(div_partition_sizes(10, 4), (V{3, 3, 2, 2}));
  EXPECT_EQ(div_partition_sizes(3, 4), (V{1, 1, 1}));
  EXPECT_EQ(div_partition_sizes(30, 3), (V{10, 10, 10}));
  EXPECT_EQ(div_partition_sizes(32, 3), (V{11, 11, 10}));
}

}  // namespace
}  // namespace psflow::internal

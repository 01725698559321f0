// Variable partitioners: how many shards a variable is split into (axis 0).
#ifndef PSFLOW_PARTITIONERS_H_
#define PSFLOW_PARTITIONERS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "psflow/dtype.h"
#include "psflow/tensor.h"

namespace psflow {

// Given a variable's full shape and dtype, returns the number of partitions
// per axis: a list of length rank, 1 everywhere except axis 0 (the only axis
// ParameterServerStrategy shards). TF's `variable_partitioner` contract.
using Partitioner =
    std::function<absl::StatusOr<std::vector<int64_t>>(const Shape& shape, DType dtype)>;

// TF's FixedShardsPartitioner: result[0] = min(num_shards, shape[0]).
// INVALID_ARGUMENT when num_shards < 1 (TF does not check; psflow does).
[[nodiscard]] absl::StatusOr<Partitioner> fixed_shards_partitioner(int num_shards);

// TF's MinSizePartitioner: shards of at least `min_shard_bytes`, at most
// `max_shards`; strings count `bytes_per_string` bytes each.
// INVALID_ARGUMENT when an argument is < 1, in TF's words ("Argument
// `max_shards` must be positive. Received: 0").
[[nodiscard]] absl::StatusOr<Partitioner> min_size_partitioner(int64_t min_shard_bytes = 256 << 10,
                                                               int max_shards = 1,
                                                               int bytes_per_string = 16);

// TF's MaxSizePartitioner: shards of at most `max_shard_bytes` (at least one
// row each), capped at `max_shards` when given (0 counts as not given, as
// in TF). INVALID_ARGUMENT in TF's words when max_shard_bytes < 1,
// max_shards < 0 or bytes_per_string < 1, and for a variable without a
// dtype; a variable whose rows hold no bytes is not split.
[[nodiscard]] absl::StatusOr<Partitioner> max_size_partitioner(
    int64_t max_shard_bytes, std::optional<int> max_shards = std::nullopt,
    int bytes_per_string = 16);

// TF's "div" split of `rows` over min(num_shards, rows) shards: the first
// rows % n shards get one extra row. 13 rows over 5 -> 3, 3, 3, 2, 2.
[[nodiscard]] std::vector<int64_t> div_partition_sizes(int64_t rows, int64_t num_shards);

}  // namespace psflow

#endif  // PSFLOW_PARTITIONERS_H_

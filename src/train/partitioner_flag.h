// The --partitioner and --placement flags of `psflow train` (internal).
#ifndef PSFLOW_TRAIN_PARTITIONER_FLAG_H_
#define PSFLOW_TRAIN_PARTITIONER_FLAG_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "psflow/partitioners.h"
#include "psflow/strategy.h"

namespace psflow::internal {

// The default --partitioner: each model's own choice (Model::partitioner_spec),
// for most of them TF's tutorial setting below.
inline constexpr char kAutoPartitioner[] = "auto";
// TF's tutorial setting, MinSizePartitioner(min_shard_bytes=256 KiB,
// max_shards=num_ps): "min_size:262144:<num_ps>". A variable of at most
// 256 KiB stays whole; a larger one is split into at most one shard per ps.
[[nodiscard]] std::string min_size_spec_for(int num_ps);
inline constexpr int64_t kAutoMinShardBytes = 256 << 10;

// "none" (or empty: no partitioner), "fixed:<shards>",
// "min_size:<bytes>[:<max_shards>]" or "max_size:<bytes>[:<max_shards>]";
// "auto" is min_size_spec_for(num_ps). INVALID_ARGUMENT naming the flag,
// the bad value and what is allowed.
[[nodiscard]] absl::StatusOr<Partitioner> parse_partitioner(const std::string& spec, int num_ps);

// --placement: "fewest_bytes" (the default) or "round_robin" (TF's rule).
// INVALID_ARGUMENT naming the flag, the bad value and the accepted ones.
[[nodiscard]] absl::StatusOr<VariablePlacement> parse_placement(const std::string& name);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_PARTITIONER_FLAG_H_

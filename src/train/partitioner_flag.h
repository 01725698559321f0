// The --partitioner flag of `psflow train` (internal).
#ifndef PSFLOW_TRAIN_PARTITIONER_FLAG_H_
#define PSFLOW_TRAIN_PARTITIONER_FLAG_H_

#include <string>

#include "absl/status/statusor.h"
#include "psflow/partitioners.h"

namespace psflow::internal {

// "none" (or empty: no partitioner), "fixed:<shards>",
// "min_size:<bytes>[:<max_shards>]" or "max_size:<bytes>[:<max_shards>]".
// INVALID_ARGUMENT naming the flag and what is allowed.
[[nodiscard]] absl::StatusOr<Partitioner> parse_partitioner(const std::string& spec);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_PARTITIONER_FLAG_H_

// Reassembling a variable's saved parts into another part layout.
#ifndef PSFLOW_CHECKPOINT_RESHARD_H_
#define PSFLOW_CHECKPOINT_RESHARD_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ps/request/shard_snapshot.h"
#include "psflow/optimizer_config.h"
#include "psflow/tensor.h"

namespace psflow::internal::checkpoint {

// One saved part: its first row in the full variable and its state (value
// with the part's shape, slots of the same shape, optimizer and steps).
// Thread-safety: a value type.
struct SavedPart {
  int64_t offset = 0;
  ShardSnapshot state;
};

// Where a current part sits: its first row and its shape.
// Thread-safety: a value type.
struct TargetPart {
  int64_t offset = 0;
  Shape shape;
};

// The state of each target part. `saved` tiles the variable's rows in
// order and `targets` tiles them too (a scalar has one part of each). Each
// target gets its rows of the value from the saved parts that hold them,
// and its slots the same way (slots have the variable's shape, so they
// reshard as the value does). Its optimizer is the one of the saved parts
// it overlaps that have optimizer state; they must agree
// (INVALID_ARGUMENT otherwise). Rows from saved parts without optimizer
// state get the slots' initial values, which for "accumulator" needs
// `fill` (the optimizer's initial_accumulator_value): INVALID_ARGUMENT when
// it is null and needed. The step count is the largest of the overlapping
// parts' counts (Adam's bias correction then uses the most advanced
// shard's; when every part took the same steps, as with dense gradients,
// the result is exact). A target identical to a saved part shares its
// tensors; others are fresh copies.
[[nodiscard]] absl::StatusOr<std::vector<ShardSnapshot>> reshard(
    std::string_view variable, DType dtype, const Shape& full_shape,
    const std::vector<SavedPart>& saved, const std::vector<TargetPart>& targets,
    const OptimizerConfig* fill);
// (A free function without shared state: thread-safe.)

}  // namespace psflow::internal::checkpoint

#endif  // PSFLOW_CHECKPOINT_RESHARD_H_

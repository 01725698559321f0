// The results a SNAPSHOT op appends to an ExecuteResponse, and the
// optimizer state a RESTORE op carries (proto/psflow/v1/variable.proto).
//
// A SNAPSHOT appends, in order: the value; an int64 scalar, the shard's
// optimizer step count; a 1-D string tensor of 1 + k entries, the
// optimizer's name ("" before the first apply) then its k slot names; the
// k slot tensors, in that order.
//
// Thread-safety: free functions without shared state.
#ifndef PSFLOW_PS_REQUEST_SNAPSHOT_RESULTS_H_
#define PSFLOW_PS_REQUEST_SNAPSHOT_RESULTS_H_

#include <cstddef>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ps/request/execute_batch.h"
#include "ps/request/shard_snapshot.h"
#include "psflow/tensor.h"

namespace psflow::internal {

// Appends the results of one SNAPSHOT (moving the snapshot's tensors).
void append_snapshot_results(ShardSnapshot snapshot, std::vector<Tensor>* results);

// Parses the SNAPSHOT results starting at results[*pos] (moving the tensors
// out) and advances *pos past them. The results come from another process:
// anything malformed (missing or mistyped entries, slots of another shape)
// is INTERNAL naming `variable`; the slot names are not checked against
// the optimizer here (validate_optimizer_slots does that).
[[nodiscard]] absl::StatusOr<ShardSnapshot> take_snapshot_results(std::vector<Tensor>& results,
                                                                  size_t* pos,
                                                                  std::string_view variable);

// How many results `op` appended at results[first]: 1 for READ, GATHER,
// DE_LOOKUP and DE_STATS, 3 + k for SNAPSHOT (k read from its names
// tensor), 4 + k for DE_EXPORT (k read from its first tensor), 0
// otherwise. For a malformed SNAPSHOT or DE_EXPORT answer, the count of
// what is left.
[[nodiscard]] size_t op_result_count(const VariableOpArgs& op, const std::vector<Tensor>& results,
                                     size_t first);

// Sets a RESTORE op's value and optimizer state from `snapshot` (sharing
// its tensors).
void set_restore_state(const ShardSnapshot& snapshot, VariableOpArgs* op);
// The inverse, for the ps (the tensors are shared with `op`; clear op's to
// let the result own them): INVALID_ARGUMENT when slot_names and slots
// differ in length or a slot name repeats.
[[nodiscard]] absl::StatusOr<ShardSnapshot> restore_state(const VariableOpArgs& op);

}  // namespace psflow::internal

#endif  // PSFLOW_PS_REQUEST_SNAPSHOT_RESULTS_H_

// Whole-state reads and writes of variables for checkpoints: SNAPSHOT and
// RESTORE of every part (value, optimizer slots, optimizer name and step
// count), one request per task, all tasks in parallel.
//
// Thread-safety: free functions; concurrent calls are safe (each part's
// SNAPSHOT / RESTORE is atomic on its task).
#ifndef PSFLOW_STRATEGY_VARIABLE_SNAPSHOTS_H_
#define PSFLOW_STRATEGY_VARIABLE_SNAPSHOTS_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "ps/request/shard_snapshot.h"
#include "psflow/variable.h"

namespace psflow::internal {

// result[i][j] is part j of variables[i], each taken atomically on its
// task (the parts of one variable, and different variables, are not one
// atomic cut: training may run meanwhile, as with TF's checkpoints of
// asynchronous training). A part whose stored dtype or shape differs from
// the handle's (replaced meanwhile) is FAILED_PRECONDITION naming it.
[[nodiscard]] absl::StatusOr<std::vector<std::vector<ShardSnapshot>>> snapshot_variables(
    absl::Span<const ShardedVariable> variables);

// Installs states[i][j] into part j of variables[i] (creating parts their
// tasks no longer hold). Each task validates its whole request before
// changing anything; when a task fails, the others may have applied
// theirs. The states' tensors are shared with the requests, not copied.
[[nodiscard]] absl::Status restore_variables(absl::Span<const ShardedVariable> variables,
                                             const std::vector<std::vector<ShardSnapshot>>& states);

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_VARIABLE_SNAPSHOTS_H_

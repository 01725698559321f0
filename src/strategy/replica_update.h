// TF's AggregatingVariable assign in replica context: the replicas of a
// ReplicaGroup::run meet, their values are combined by the variable's
// aggregation, and the update is applied once (variable_policy.h).
#ifndef PSFLOW_STRATEGY_REPLICA_UPDATE_H_
#define PSFLOW_STRATEGY_REPLICA_UPDATE_H_

#include <functional>
#include <optional>
#include <string_view>

#include "absl/status/status.h"
#include "psflow/tensor.h"
#include "strategy/variable_state.h"

namespace psflow::internal {

// What the calling thread must do for an assign-like update `op` ("assign",
// "assign_add", "assign_sub") of `value` to variable `name`:
//  * nullopt outside a replica function or with one replica: apply `value`
//    directly (the caller does);
//  * else the status of the aggregated update, the same on every replica:
//    INVALID_ARGUMENT at once for aggregation NONE (TF's message), else
//    after every replica made the same call, `apply` ran once (on the last
//    replica to arrive, while the others wait) with the combined value.
// `dtype` and `shape` are the variable's (every replica's value must have
// them, else INVALID_ARGUMENT for all and nothing is written).
[[nodiscard]] std::optional<absl::Status> update_in_replica_context(
    const VariablePolicy& policy, std::string_view name, DType dtype, const Shape& shape,
    std::string_view op, const Tensor& value,
    const std::function<absl::Status(const Tensor&)>& apply);

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_REPLICA_UPDATE_H_

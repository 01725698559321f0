// One part of a training step's update (internal): a worker that pushes
// each layer's gradients as the backward pass produces them sends a step
// as several requests, and `iterations` must still count the step once.
#ifndef PSFLOW_STRATEGY_PARTIAL_APPLY_H_
#define PSFLOW_STRATEGY_PARTIAL_APPLY_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/optimizer.h"

namespace psflow::internal {

// Optimizer::apply_gradients on `grads_and_vars`, which increments the
// optimizer's `iterations` only when `count_step` (exactly one part of a
// step should). Same validation, batching and learning rate as
// apply_gradients, and each call is one update of a bound optimizer: a part
// without the `iterations` op carries the optimizer's update keys on its
// variables, so the ps tasks apply a retried closure's parts once each.
[[nodiscard]] absl::Status apply_gradients_part(
    const Optimizer& optimizer, const std::vector<GradientAndVariable>& grads_and_vars,
    bool count_step);

// The learning rate apply_gradients of `optimizer` uses now: its schedule
// at the largest `iterations` value it has seen (read from the ps when it
// has seen none), or its constant rate. What a step's other updates (a
// dynamic table's sparse apply) use to follow the same schedule.
[[nodiscard]] absl::StatusOr<double> current_learning_rate(const Optimizer& optimizer);

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_PARTIAL_APPLY_H_

// Optimizer: applies gradients to ps variables, the update running on the
// ps tasks (TF's optimizer.apply_gradients under ParameterServerStrategy,
// with the arithmetic moved next to the variables).
#ifndef PSFLOW_OPTIMIZER_H_
#define PSFLOW_OPTIMIZER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/optimizer_config.h"
#include "psflow/tensor.h"
#include "psflow/variable.h"

namespace psflow {

namespace internal {
struct OptimizerState;
struct OptimizerAccess;
}  // namespace internal

// The learning rate as a function of the step (`iterations`), like a Keras
// LearningRateSchedule. Must be thread-safe if the optimizer is shared.
using LearningRateSchedule = std::function<double(int64_t step)>;

// A dense gradient (same dtype and shape as the variable) or a row-sparse
// one (TF's tf.IndexedSlices, as embedding lookups produce). A
// default-constructed Tensor means "no gradient" (TF's None) and is skipped.
using Gradient = std::variant<Tensor, IndexedSlices>;

// Thread-safety: a value type.
struct GradientAndVariable {
  Gradient gradient;
  ShardedVariable variable;
};

// Thread-safety: a value type.
struct OptimizerOptions {
  // Prefix of the iterations variable's name ("<name>/iterations"); empty
  // means the kind in lower case: "sgd", "momentum", "adagrad", "adam",
  // "ftrl".
  std::string name = "";
  // Adopt this existing int64 scalar as `iterations` instead of creating
  // one (a worker rebuilding the coordinator's optimizer from handles).
  std::optional<ShardedVariable> iterations = std::nullopt;
};

// Hyper-parameters plus a learning rate, and the `iterations` counter that
// checkpoints save and schedules read.
//
// apply_gradients sends, per ps task, one request holding every APPLY_DENSE
// / APPLY_SPARSE for the variables (or shards) on that task, all tasks in
// parallel; the request to the task holding `iterations` also increments
// it, so a step costs one round trip. Slots (accumulators, moments) live on
// the ps beside each shard. Adam's bias correction counts the updates each
// shard has received (the ps keeps that count), not `iterations`: with
// sparse gradients on a sharded variable, a shard that a step does not
// touch does not advance, unlike Keras's one global step.
//
// Sparse gradients (IndexedSlices) update only the rows they name, in the
// variable and in its slots: duplicate ids are summed first, and rows no
// id names keep their value and their slots, whatever the optimizer. For
// Adam that is TF's LazyAdam (moments of untouched rows do not decay),
// for momentum TF1's sparse momentum; it is what keeps an embedding
// update proportional to the rows a batch uses rather than the table.
//
// With a schedule, the learning rate of a call is schedule(step), where
// step is the latest `iterations` value this optimizer (or a copy of it)
// has seen: it is read back in the same request that increments it, so
// schedules cost no extra round trip. Called from one thread this is
// exactly Keras's (step = iterations before the update); with concurrent
// callers and other processes it may lag by the updates in flight, which
// asynchronous training tolerates anyway.
//
// Copies share the iterations variable and the step they have seen.
// Thread-safety: all methods may run concurrently.
class Optimizer {
 public:
  // Creates `iterations` (int64 scalar, 0) with create_variable(), so the
  // current strategy scope decides where it lives (on a ps inside the
  // scope, as Keras optimizers made in strategy.scope()). INVALID_ARGUMENT
  // for bad hyper-parameters or a negative / non-finite learning rate.
  [[nodiscard]] static absl::StatusOr<Optimizer> create(OptimizerConfig config,
                                                        double learning_rate,
                                                        OptimizerOptions options = {});
  [[nodiscard]] static absl::StatusOr<Optimizer> create(OptimizerConfig config,
                                                        LearningRateSchedule schedule,
                                                        OptimizerOptions options = {});

  [[nodiscard]] const OptimizerConfig& config() const;
  [[nodiscard]] const ShardedVariable& iterations() const;
  // The learning rate used at `step`.
  [[nodiscard]] double learning_rate(int64_t step) const;

  // Applies each gradient to its variable; sharded variables get each
  // shard's slice (dense) or rows (sparse). Validates every gradient (dtype,
  // shape, indices in range) before sending anything; INVALID_ARGUMENT names
  // the variable. TF's ValueError "No gradients provided for any variable"
  // when all are missing. Each task applies its request atomically (all or
  // nothing); if one task fails, the others may still have applied theirs.
  [[nodiscard]] absl::Status apply_gradients(
      const std::vector<GradientAndVariable>& grads_and_vars) const;

 private:
  friend struct internal::OptimizerAccess;
  explicit Optimizer(std::shared_ptr<internal::OptimizerState> state) : state_(std::move(state)) {}
  static absl::StatusOr<Optimizer> make(OptimizerConfig config, double learning_rate,
                                        LearningRateSchedule schedule, OptimizerOptions options);

  std::shared_ptr<internal::OptimizerState> state_;
};

}  // namespace psflow

#endif  // PSFLOW_OPTIMIZER_H_

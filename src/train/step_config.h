// The arguments every training closure carries, whatever the model
// (internal): the model's spec plus what all models share.
#ifndef PSFLOW_TRAIN_STEP_CONFIG_H_
#define PSFLOW_TRAIN_STEP_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "psflow/optimizer.h"
#include "psflow/optimizer_config.h"
#include "psflow/status_macros.h"
#include "psflow/structure.h"
#include "psflow/variable.h"
#include "train/closure_args.h"

namespace psflow::internal {

// OptimizerConfig as a Structure for closure arguments, and back
// (validated: it crossed the network).
[[nodiscard]] Structure optimizer_config_to_structure(const OptimizerConfig& config);
[[nodiscard]] absl::StatusOr<OptimizerConfig> optimizer_config_from_structure(const Structure& s);

// Keras's CosineDecay: lr * ((1 - alpha) * (1 + cos(pi * t)) / 2 + alpha),
// t = min(step, decay_steps) / decay_steps.
[[nodiscard]] double cosine_decay(double learning_rate, int64_t decay_steps, double alpha,
                                  int64_t step);

// Most batches one closure may run (TF's steps_per_execution).
inline constexpr int64_t kMaxStepsPerClosure = 1 << 20;

// The context of closure-argument errors unless a model names its own.
inline constexpr ClosureArgs kTrainingClosureArgs{"training closure arguments"};

// Everything a worker needs to train, except the model's spec: sent with
// every closure (a few hundred bytes) so that a worker that restarts, or
// joins late, can start from any closure. Workers cache what they build
// from it by `run_id`.
// Thread-safety: a value type.
struct StepSettings {
  std::string run_id;
  std::vector<VariableHandle> variables;  // in the model's parameter order
  OptimizerConfig optimizer;
  double learning_rate = 1e-3;
  // Keras's CosineDecay(learning_rate, decay_steps, alpha) over the
  // optimizer's iterations when decay_steps > 0; constant otherwise.
  int64_t decay_steps = 0;
  double decay_alpha = 0.0;
  VariableHandle iterations;  // the optimizer's, an int64 scalar
  // The worker's training batches: PerWorkerIterator::handle() of the
  // model's per-worker dataset.
  Structure iterator;
  // Training steps (batches) one closure runs: TF's steps_per_execution.
  int64_t steps = 1;
  // Whether a model that can overlaps pushes and reads with computation
  // within the closure's steps (train/overlapped_steps.h); others ignore it.
  bool overlap = false;

  // The closure's arguments, with the model's spec `model` under "model".
  [[nodiscard]] Structure to_structure(Structure model) const;
  // Validates what crossed the network: every field's kind, the variables'
  // dtypes and `parameter_shapes` (the model's), the optimizer, the
  // ranges. Errors are `args`' INVALID_ARGUMENT.
  [[nodiscard]] static absl::StatusOr<StepSettings> from_structure(
      const Structure& s, const ClosureArgs& args, const std::vector<Shape>& parameter_shapes);
};

// A model's closure arguments: `Spec` (MlpSpec, WideDeepSpec) has
// to_structure, static from_structure and parameter_shapes.
// Thread-safety: a value type.
template <typename Spec>
struct StepConfig : StepSettings {
  Spec model;

  [[nodiscard]] Structure to_structure() const {
    return StepSettings::to_structure(model.to_structure());
  }
  // Validates: the model's spec, then the rest against it.
  [[nodiscard]] static absl::StatusOr<StepConfig> from_structure(
      const Structure& s, const ClosureArgs& args = kTrainingClosureArgs) {
    PSFLOW_ASSIGN_OR_RETURN(const Structure* spec, args.field(s, "model", Structure::Kind::kDict));
    PSFLOW_ASSIGN_OR_RETURN(Spec model, Spec::from_structure(*spec));
    PSFLOW_ASSIGN_OR_RETURN(StepSettings settings,
                            StepSettings::from_structure(s, args, model.parameter_shapes()));
    return StepConfig{std::move(settings), std::move(model)};
  }
};

// What a worker builds from a closure's StepSettings, whatever the model:
// the variables and the optimizer (with its learning-rate schedule) reached
// through the worker's ps clients.
// Thread-safety: as its members (thread-safe handles).
struct StepState {
  std::vector<ShardedVariable> variables;  // in the settings' order
  std::optional<Optimizer> optimizer;      // always set
};

[[nodiscard]] absl::StatusOr<StepState> resolve_step_state(const StepSettings& settings,
                                                           const VariableClientLookup& lookup);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_STEP_CONFIG_H_

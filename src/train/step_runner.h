// The worker side that every model's training closure shares (internal):
// the state a worker keeps between the closures of a run, the loop over a
// closure's steps, and the batching of the per-worker training dataset.
// A model's step header includes it for the types its registered
// functions take and return.
#ifndef PSFLOW_TRAIN_STEP_RUNNER_H_
#define PSFLOW_TRAIN_STEP_RUNNER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "psflow/dataset.h"
#include "psflow/per_worker.h"
#include "psflow/status_macros.h"
#include "psflow/structure.h"
#include "psflow/worker_context.h"
#include "train/closure_args.h"
#include "train/step_config.h"
#include "train/step_result.h"

namespace psflow::internal {

// How one model's training closure names itself: in its errors ("the
// <name> needs parameter servers", "<name> cancelled"), in those of its
// arguments, and as the per-worker resource that keeps its state.
// Thread-safety: a value type.
struct TrainingClosure {
  std::string_view name;
  ClosureArgs args;
  std::string_view resource;
};

// The variables and optimizer of `settings`, resolved once per run
// (settings.run_id) on this worker and shared by its concurrent closures.
[[nodiscard]] absl::StatusOr<std::shared_ptr<const StepState>> step_state_for(
    WorkerContext& ctx, const TrainingClosure& closure, const StepSettings& settings);

// The next batch of the closure's dataset; CANCELLED once the closure is.
[[nodiscard]] absl::StatusOr<Structure> next_training_batch(WorkerContext& ctx,
                                                            const TrainingClosure& closure,
                                                            const StepSettings& settings);

// One step's batch-mean loss and batch size. Thread-safety: a value type.
struct StepLoss {
  double loss = 0.0;
  int64_t examples = 0;
};

// One training step of a model on `batch`: pull the parameters, forward
// and backward, apply the gradients through state.optimizer, and add the
// batch's metrics to `metrics`.
template <typename Spec, typename Metrics>
using TrainingStep =
    std::function<absl::StatusOr<StepLoss>(const StepConfig<Spec>& config, const StepState& state,
                                           const Structure& batch, Metrics& metrics)>;

// A model's training closure: parses its StepConfig<Spec> from `args`, then
// runs config.steps steps of `step` and returns their
// StepResult<Metrics>.
template <typename Spec, typename Metrics>
[[nodiscard]] absl::StatusOr<Structure> run_training_steps(
    WorkerContext& ctx, const Structure& args, const TrainingClosure& closure,
    const TrainingStep<Spec, Metrics>& step) {
  PSFLOW_ASSIGN_OR_RETURN(StepConfig<Spec> config,
                          StepConfig<Spec>::from_structure(args, closure.args));
  PSFLOW_ASSIGN_OR_RETURN(std::shared_ptr<const StepState> shared,
                          step_state_for(ctx, closure, config));
  // The optimizer bound to this closure: a retry's updates apply once on
  // the ps (the shared state stays unbound across closures).
  const StepState state{shared->variables, ctx.bind(*shared->optimizer)};
  StepResult<Metrics> result;
  for (int64_t i = 0; i < config.steps; ++i) {
    PSFLOW_ASSIGN_OR_RETURN(Structure batch, next_training_batch(ctx, closure, config));
    PSFLOW_ASSIGN_OR_RETURN(StepLoss loss,
                            step(config, state, batch, static_cast<Metrics&>(result)));
    result.loss_sum += loss.loss * static_cast<double>(loss.examples);
    result.examples += loss.examples;
    ++result.steps;
  }
  return result.to_structure();
}

// The arguments every model's per-worker training dataset takes besides
// its data: {"batch_size", "seed"}. Thread-safety: a value type.
struct BatchingArgs {
  int64_t batch_size = 0;
  uint64_t seed = 0;

  // Validates: the arguments crossed the network.
  [[nodiscard]] static absl::StatusOr<BatchingArgs> from_structure(const Structure& args,
                                                                   const ClosureArgs& context);
  // `examples` (`count` of them, for Dataset::from_tensor_slices) shuffled
  // with the worker's seed, repeated, batched (drop_remainder) and
  // prefetched.
  [[nodiscard]] Dataset batches(const DatasetContext& ctx, const Structure& examples,
                                int64_t count) const;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_STEP_RUNNER_H_

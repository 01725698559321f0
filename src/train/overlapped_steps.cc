#include "train/overlapped_steps.h"

#include <memory>
#include <utility>
#include <vector>

#include "psflow/status_macros.h"
#include "strategy/partial_apply.h"
#include "train/mlp_streamed.h"
#include "train/parameter_prefetch.h"
#include "train/push_queue.h"

namespace psflow::internal {
namespace {

// Thread-safety: a value type.
struct OverlappedBatch {
  Tensor x;
  Tensor labels;
};

absl::StatusOr<OverlappedBatch> classifier_batch(const Structure& batch) {
  if (!batch.is_sequence() || batch.size() != 2 || !batch[0].is_tensor() || !batch[1].is_tensor() ||
      batch[0].tensor().dtype() != DType::kUInt8) {
    return absl::InvalidArgumentError(
        "the training dataset must yield (uint8 images, labels) batches");
  }
  return OverlappedBatch{flatten_images(batch[0].tensor()), batch[1].tensor()};
}

}  // namespace

absl::Status run_overlapped(int64_t steps, size_t num_layers, const OverlapIo& io,
                            const OverlapCompute& compute) {
  // The queue outlives the prefetch, whose reads wait on it.
  PushQueue pushes;
  ParameterPrefetch prefetch(num_layers, io.read);
  prefetch.start(nullptr);  // the first step: nothing of this run's pushed yet
  for (int64_t i = 0; i < steps; ++i) {
    LayerStream stream;
    stream.parameters = [&prefetch](size_t layer) { return prefetch.take(layer); };
    stream.gradients = [&pushes, &io, i](size_t layer, std::vector<Tensor> grads) {
      // Layer 0's gradients come last: that push counts the step.
      pushes.enqueue(i, [&io, layer, grads = std::move(grads)]() mutable {
        return io.push(layer, std::move(grads), layer == 0);
      });
      return absl::OkStatus();
    };
    absl::Status computed = compute(i, stream);
    if (!computed.ok()) {
      // A push's failure explains a failed read better than the read's own
      // error does.
      absl::Status pushed = pushes.drain();
      return pushed.ok() ? computed : pushed;
    }
    if (i + 1 < steps) {
      // Step i + 1 reads once step i - 1's pushes are answered: it misses
      // at most step i's own updates.
      prefetch.start([&pushes, i] { return pushes.wait_through(i - 1); });
    }
  }
  return pushes.drain();
}

absl::StatusOr<Structure> run_overlapped_train_steps(WorkerContext& ctx,
                                                     const TrainStepConfig& config,
                                                     const TrainingClosure& closure) {
  PSFLOW_ASSIGN_OR_RETURN(std::shared_ptr<const StepState> shared,
                          step_state_for(ctx, closure, config));
  // Bound to this closure: a retry's updates apply once on the ps.
  const Optimizer optimizer = ctx.bind(*shared->optimizer);
  const std::vector<ShardedVariable>& vars = shared->variables;
  OverlapIo io;
  io.read = [&vars](size_t layer) -> absl::StatusOr<std::vector<Tensor>> {
    return read_values({vars[2 * layer], vars[2 * layer + 1]});
  };
  io.push = [&vars, &optimizer](size_t layer, std::vector<Tensor> grads, bool last) {
    std::vector<GradientAndVariable> part;
    part.push_back({std::move(grads[0]), vars[2 * layer]});
    part.push_back({std::move(grads[1]), vars[2 * layer + 1]});
    return apply_gradients_part(optimizer, part, last);
  };
  TrainStepResult result;
  auto compute = [&](int64_t, const LayerStream& stream) -> absl::Status {
    PSFLOW_ASSIGN_OR_RETURN(Structure raw, next_training_batch(ctx, closure, config));
    PSFLOW_ASSIGN_OR_RETURN(OverlappedBatch batch, classifier_batch(raw));
    PSFLOW_ASSIGN_OR_RETURN(StreamedStep out, mlp_forward_backward_streamed(
                                                  config.model, batch.x, batch.labels, stream));
    PSFLOW_ASSIGN_OR_RETURN(const int64_t correct,
                            correct_predictions(batch.labels, out.probabilities));
    result.correct += correct;
    result.loss_sum += out.loss * static_cast<double>(batch.labels.dim(0));
    result.examples += batch.labels.dim(0);
    ++result.steps;
    return absl::OkStatus();
  };
  PSFLOW_RETURN_IF_ERROR(run_overlapped(config.steps, vars.size() / 2, io, compute));
  return result.to_structure();
}

}  // namespace psflow::internal

#include "train/overlapped_steps.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "base/strings.h"
#include "psflow/status_macros.h"
#include "strategy/partial_apply.h"
#include "train/carried_read.h"
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

std::vector<LayerBucket> layer_buckets(const std::vector<int64_t>& layer_bytes, int64_t min_bytes) {
  std::vector<LayerBucket> buckets;
  int64_t bytes = 0;
  for (size_t l = 0; l < layer_bytes.size(); ++l) {
    if (buckets.empty() || bytes >= min_bytes) {
      buckets.push_back({l, l + 1});
      bytes = 0;
    } else {
      buckets.back().end = l + 1;
    }
    bytes += layer_bytes[l];
  }
  if (buckets.size() > 1 && bytes < min_bytes) {
    buckets[buckets.size() - 2].end = buckets.back().end;
    buckets.pop_back();
  }
  return buckets;
}

absl::Status run_overlapped(int64_t steps, const std::vector<LayerBucket>& buckets,
                            const OverlapIo& io, const OverlapCompute& compute,
                            const OverlapReads& reads) {
  std::vector<size_t> bucket_of;  // by layer
  for (size_t b = 0; b < buckets.size(); ++b) {
    for (size_t l = buckets[b].first; l < buckets[b].end; ++l) bucket_of.push_back(b);
  }
  // Shared with the reads' gates: a read carried to the next closure may
  // still be inside its gate when this returns.
  auto pushes = std::make_shared<PushQueue>();
  std::optional<ParameterPrefetch> own;
  ParameterPrefetch* prefetch = reads.prefetch;
  if (prefetch == nullptr) {
    prefetch =
        &own.emplace(buckets.size(), [&io, &buckets](size_t b) { return io.read(buckets[b]); });
  }
  bool carried = reads.first_started;      // step 0's read came from the closure before
  if (!carried) prefetch->start(nullptr);  // nothing of this closure pushed yet
  for (int64_t i = 0; i < steps; ++i) {
    std::vector<Tensor> taken;    // the parameters of the bucket being read
    std::vector<Tensor> pending;  // gradients of the bucket being pushed, in layer order
    bool read_started = false;    // the next step's read
    const bool last = i + 1 == steps;
    // The next step's read waits for the pushes of the steps up to this one
    // minus the staleness allowed.
    const int64_t through = i - std::max<int64_t>(reads.max_staleness, 1);
    LayerStream stream;
    stream.parameters = [&](size_t layer) -> absl::StatusOr<std::vector<Tensor>> {
      if (layer >= bucket_of.size()) {
        return absl::InternalError(absl::StrCat("layer ", layer, " is in no bucket"));
      }
      const size_t b = bucket_of[layer];
      const LayerBucket& bucket = buckets[b];
      if (layer == bucket.first) {
        absl::StatusOr<std::vector<Tensor>> got = prefetch->take(b);
        if (!got.ok() && carried && i == 0 && b == 0) {
          // A carried read that failed (say a ps restarted since) is made
          // again rather than failing this closure.
          prefetch->start(nullptr);
          got = prefetch->take(b);
        }
        carried = false;
        PSFLOW_ASSIGN_OR_RETURN(taken, std::move(got));
        if (reads.read_during_compute && b + 1 == buckets.size() && (!last || reads.carry_next)) {
          // Step i's parameters are all here: the next step's read starts
          // now, while step i computes, once step i - max_staleness's
          // pushes are answered, so the link's pull direction does not
          // idle through this computation. After the last step the next
          // step is the next closure's first.
          prefetch->start([pushes, through] { return pushes->wait_through(through); });
          read_started = true;
        }
      }
      const size_t at = 2 * (layer - bucket.first);
      if (taken.size() < at + 2) {
        return absl::InternalError(absl::StrCat("bucket read returned ", taken.size(),
                                                " parameters; layer ", layer, " needs 2 more"));
      }
      return std::vector<Tensor>{std::move(taken[at]), std::move(taken[at + 1])};
    };
    stream.gradients = [&](size_t layer, std::vector<Tensor> grads) -> absl::Status {
      if (layer >= bucket_of.size()) {
        return absl::InternalError(absl::StrCat("layer ", layer, " is in no bucket"));
      }
      pending.insert(pending.begin(), std::make_move_iterator(grads.begin()),
                     std::make_move_iterator(grads.end()));
      const size_t b = bucket_of[layer];
      if (layer != buckets[b].first) return absl::OkStatus();
      // The bucket of layer 0 comes last: its push counts the step.
      pushes->enqueue(i, [&io, &bucket = buckets[b], grads = std::move(pending)]() mutable {
        return io.push(bucket, std::move(grads), bucket.first == 0);
      });
      pending.clear();
      return absl::OkStatus();
    };
    absl::Status computed = compute(i, stream);
    if (!computed.ok()) {
      // A push's failure explains a failed read better than the read's own
      // error does.
      absl::Status pushed = pushes->drain();
      return pushed.ok() ? computed : pushed;
    }
    if (!read_started && (!last || reads.carry_next)) {
      // Without read_during_compute, or a computation that did not take
      // every bucket.
      prefetch->start([pushes, through] { return pushes->wait_through(through); });
    }
  }
  return pushes->drain();
}

absl::StatusOr<Structure> run_overlapped_train_steps(WorkerContext& ctx,
                                                     const TrainStepConfig& config,
                                                     const TrainingClosure& closure) {
  PSFLOW_ASSIGN_OR_RETURN(std::shared_ptr<const StepState> shared,
                          step_state_for(ctx, closure, config));
  // Bound to this closure: a retry's updates apply once on the ps.
  const Optimizer optimizer = ctx.bind(*shared->optimizer);
  const std::vector<ShardedVariable>& vars = shared->variables;
  std::vector<int64_t> layer_bytes;
  for (size_t l = 0; l + 1 < vars.size(); l += 2) {
    layer_bytes.push_back((num_elements(vars[l].shape()) + num_elements(vars[l + 1].shape())) *
                          static_cast<int64_t>(dtype_size(vars[l].dtype())));
  }
  const std::vector<LayerBucket> buckets = layer_buckets(layer_bytes, kOverlapBucketBytes);
  OverlapIo io;  // reads go through `prefetch` below, which outlives the closure
  io.push = [&vars, &optimizer](const LayerBucket& bucket, std::vector<Tensor> grads, bool last) {
    std::vector<GradientAndVariable> part;
    for (size_t j = 0; j < grads.size(); ++j) {
      part.push_back({std::move(grads[j]), vars[2 * bucket.first + j]});
    }
    return apply_gradients_part(optimizer, part, last);
  };
  // The read carried from this worker's closure before, if it is of this
  // run and in time; else a prefetch of this closure's own, which it hands
  // on to the next one. Its reads hold what they read from (`shared`).
  std::shared_ptr<CarriedRead> carry = ctx.resources().get_or_create_shared<CarriedRead>(
      absl::StrCat(av(closure.resource), "/carried"));
  const absl::Time started = absl::Now();
  std::unique_ptr<ParameterPrefetch> prefetch = carry->take(config.run_id, started);
  const bool carried = prefetch != nullptr;
  if (!carried) {
    prefetch = std::make_unique<ParameterPrefetch>(
        buckets.size(), [shared, buckets](size_t b) -> absl::StatusOr<std::vector<Tensor>> {
          return read_values(
              absl::MakeConstSpan(shared->variables)
                  .subspan(2 * buckets[b].first, 2 * (buckets[b].end - buckets[b].first)));
        });
  }
  TrainStepResult result;
  auto compute = [&](int64_t, const LayerStream& stream) -> absl::Status {
    PSFLOW_ASSIGN_OR_RETURN(Structure raw, next_training_batch(ctx, closure, config));
    PSFLOW_ASSIGN_OR_RETURN(OverlappedBatch batch, classifier_batch(raw));
    PSFLOW_ASSIGN_OR_RETURN(StreamedStep out, mlp_forward_backward_streamed(config.model, batch.x,
                                                                            batch.labels, stream));
    PSFLOW_ASSIGN_OR_RETURN(const int64_t correct,
                            correct_predictions(batch.labels, out.probabilities));
    result.correct += correct;
    result.loss_sum += out.loss * static_cast<double>(batch.labels.dim(0));
    result.examples += batch.labels.dim(0);
    ++result.steps;
    return absl::OkStatus();
  };
  PSFLOW_RETURN_IF_ERROR(run_overlapped(config.steps, buckets, io, compute,
                                        {prefetch.get(), carried, /*carry_next=*/true,
                                         kOverlapStaleness, kOverlapReadDuringCompute}));
  // The next closure uses the read only if it starts within
  // kCarriedReadSteps mean step times of this one's end; else it reads
  // afresh.
  const absl::Time now = absl::Now();
  const absl::Duration step_time = (now - started) / std::max<int64_t>(config.steps, 1);
  carry->put(config.run_id, std::move(prefetch), now + kCarriedReadSteps * step_time);
  return result.to_structure();
}

}  // namespace psflow::internal

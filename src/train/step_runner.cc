#include "train/step_runner.h"

#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/strings.h"

namespace psflow::internal {
namespace {

constexpr int64_t kMaxBatch = 1 << 20;

// What a worker keeps between the closures of one run.
// Thread-safety: thread-safe.
struct WorkerStepState {
  absl::Mutex mu;
  std::string run_id ABSL_GUARDED_BY(mu);
  std::shared_ptr<const StepState> state ABSL_GUARDED_BY(mu);
};

}  // namespace

absl::StatusOr<std::shared_ptr<const StepState>> step_state_for(WorkerContext& ctx,
                                                                const TrainingClosure& closure,
                                                                const StepSettings& settings) {
  auto& kept = ctx.resources().get_or_create<WorkerStepState>(closure.resource);
  absl::MutexLock lock(&kept.mu);
  if (kept.state != nullptr && kept.run_id == settings.run_id) return kept.state;
  const VariableClientLookup* lookup = ctx.variable_clients();
  if (lookup == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("the ", av(closure.name), " needs parameter servers; this worker has none"));
  }
  PSFLOW_ASSIGN_OR_RETURN(StepState resolved, resolve_step_state(settings, *lookup));
  kept.state = std::make_shared<const StepState>(std::move(resolved));
  kept.run_id = settings.run_id;
  return kept.state;
}

absl::StatusOr<Structure> next_training_batch(WorkerContext& ctx, const TrainingClosure& closure,
                                              const StepSettings& settings) {
  if (ctx.is_cancelled()) return absl::CancelledError(absl::StrCat(av(closure.name), " cancelled"));
  return ctx.next(settings.iterator);
}

absl::StatusOr<BatchingArgs> BatchingArgs::from_structure(const Structure& args,
                                                          const ClosureArgs& context) {
  BatchingArgs b;
  PSFLOW_ASSIGN_OR_RETURN(b.batch_size, context.int_field(args, "batch_size"));
  PSFLOW_ASSIGN_OR_RETURN(int64_t seed, context.int_field(args, "seed"));
  if (b.batch_size < 1 || b.batch_size > kMaxBatch) {
    return context.malformed(
        absl::StrCat("batch_size ", b.batch_size, " is outside [1, ", kMaxBatch, "]"));
  }
  b.seed = static_cast<uint64_t>(seed);
  return b;
}

Dataset BatchingArgs::batches(const DatasetContext& ctx, const Structure& examples,
                              int64_t count) const {
  return Dataset::from_tensor_slices(examples)
      .shuffle(count, ctx.worker_seed(seed))
      .repeat()
      .batch(batch_size, /*drop_remainder=*/true)
      .prefetch(2);
}

}  // namespace psflow::internal

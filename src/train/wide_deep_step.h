// The worker side of the `wide_deep` model of `psflow train`: the scheduled
// training closure, the per-worker dataset it reads, and the model's part
// of the closure's result (internal).
#ifndef PSFLOW_TRAIN_WIDE_DEEP_STEP_H_
#define PSFLOW_TRAIN_WIDE_DEEP_STEP_H_

#include "absl/status/statusor.h"
#include "psflow/nn.h"
#include "train/binary_step_metrics.h"
#include "train/step_runner.h"
#include "train/wide_deep_model.h"

namespace psflow::internal {

// The registered name of the training closure; its arguments are a
// WideDeepStepConfig.
inline constexpr char kWideDeepStepFunction[] = "train/wide_deep_steps";
// The registered per-worker dataset of training batches: the training split
// of the run's data (WideDeepDataSource, rebuilt in the worker), shuffled
// with a per-worker seed, repeated, batched (drop_remainder) and
// prefetched. Elements (dense [B, F], ids [B, L], weights [B, L], labels
// [B]). Args: {"source": WideDeepDataSource, "batch_size", "seed"}.
inline constexpr char kWideDeepDataset[] = "train/wide_deep_data";

[[nodiscard]] absl::StatusOr<Dataset> make_wide_deep_dataset(const DatasetContext& ctx,
                                                             const Structure& args);

using WideDeepStepConfig = StepConfig<WideDeepSpec>;

// The model's entries of a closure result: its AUC and accuracy states.
using WideDeepStepMetrics = BinaryStepMetrics;
using WideDeepStepResult = StepResult<WideDeepStepMetrics>;

// Runs config.steps steps on ctx's worker: next batch -> unique ids ->
// pull the tables' rows of those ids (embedding_lookup: one gather per
// shard, all ps in parallel) and the dense parameters -> forward/backward
// -> Optimizer::apply_gradients with IndexedSlices for the tables and
// dense gradients for the rest (applied on the ps).
[[nodiscard]] absl::StatusOr<Structure> run_wide_deep_steps(WorkerContext& ctx,
                                                            const Structure& args);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_WIDE_DEEP_STEP_H_

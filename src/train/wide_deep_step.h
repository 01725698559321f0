// The worker side of the `wide_deep` model of `psflow train`: what one
// scheduled training closure does, the per-worker dataset it reads, and the
// per-worker state it keeps between closures (internal).
#ifndef PSFLOW_TRAIN_WIDE_DEEP_STEP_H_
#define PSFLOW_TRAIN_WIDE_DEEP_STEP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "psflow/nn.h"
#include "psflow/optimizer_config.h"
#include "psflow/per_worker.h"
#include "psflow/structure.h"
#include "psflow/variable.h"
#include "psflow/worker_context.h"
#include "train/step_config.h"
#include "train/wide_deep_model.h"

namespace psflow {

// The registered name of the training closure.
inline constexpr char kWideDeepStepFunction[] = "train/wide_deep_steps";
// The registered per-worker dataset of training batches: the training split
// of the run's data (WideDeepDataSource, rebuilt in the worker), shuffled
// with a per-worker seed, repeated, batched (drop_remainder) and
// prefetched. Elements (dense [B, F], ids [B, L], weights [B, L], labels
// [B]). Args: {"source": WideDeepDataSource, "batch_size", "seed"}.
inline constexpr char kWideDeepDataset[] = "train/wide_deep_data";

[[nodiscard]] absl::StatusOr<Dataset> make_wide_deep_dataset(const DatasetContext& ctx,
                                                             const Structure& args);

// The wide_deep closure's arguments (train/step_config.h).
// Thread-safety: a value type.
struct WideDeepStepConfig : StepConfig<WideDeepSpec> {
  // Validates: the structure crossed the network (shapes of the variables
  // against the model, the optimizer, the ranges).
  [[nodiscard]] static absl::StatusOr<WideDeepStepConfig> from_structure(const Structure& s);
};

// What one closure reports: sums and metric states, which the coordinator
// adds up and merges. Thread-safety: as nn's metrics (internally locked).
struct WideDeepStepResult {
  double loss_sum = 0.0;  // batch-mean loss times batch size, summed
  int64_t examples = 0;
  int64_t steps = 0;
  nn::AUC auc;
  nn::BinaryAccuracy accuracy;

  [[nodiscard]] Structure to_structure() const;
  [[nodiscard]] static absl::StatusOr<WideDeepStepResult> from_structure(const Structure& s);
  [[nodiscard]] absl::Status add(const WideDeepStepResult& other);
};

// Runs config.steps steps on ctx's worker: next batch -> unique ids ->
// pull the tables' rows of those ids (embedding_lookup: one gather per
// shard, all ps in parallel) and the dense parameters -> forward/backward
// -> Optimizer::apply_gradients with IndexedSlices for the tables and
// dense gradients for the rest (applied on the ps).
[[nodiscard]] absl::StatusOr<Structure> run_wide_deep_steps(WorkerContext& ctx,
                                                            const Structure& args);

}  // namespace psflow

#endif  // PSFLOW_TRAIN_WIDE_DEEP_STEP_H_

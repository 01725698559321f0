// The worker side of the `dlrm` model of `psflow train` (internal): the
// scheduled training closure, the per-worker dataset it reads, and the
// model's part of the closure's result.
#ifndef PSFLOW_TRAIN_DLRM_STEP_H_
#define PSFLOW_TRAIN_DLRM_STEP_H_

#include "absl/status/statusor.h"
#include "psflow/nn.h"
#include "train/binary_step_metrics.h"
#include "train/dlrm_model.h"
#include "train/step_runner.h"

namespace psflow::internal {

// The registered name of the training closure; its arguments are a
// DlrmStepConfig (the spec carries the table's handle).
inline constexpr char kDlrmStepFunction[] = "train/dlrm_steps";
// The registered per-worker dataset of training batches: the training split
// of the run's data (DlrmDataSource, read again in the worker), shuffled
// with a per-worker seed, repeated, batched (drop_remainder) and
// prefetched. Elements (dense [B, 13], keys [B, 26], labels [B]). Args:
// {"source": DlrmDataSource, "batch_size", "seed"}.
inline constexpr char kDlrmDataset[] = "train/dlrm_data";

[[nodiscard]] absl::StatusOr<Dataset> make_dlrm_dataset(const DatasetContext& ctx,
                                                        const Structure& args);

using DlrmStepConfig = StepConfig<DlrmSpec>;

// The model's entries of a closure result: its AUC and accuracy states.
using DlrmStepMetrics = BinaryStepMetrics;

// Runs config.steps steps on ctx's worker: next batch -> distinct keys ->
// the table's rows of those keys (one lookup per ps task holding some, in
// parallel with reading the dense parameters) -> forward/backward ->
// the dense gradients through the run's optimizer (with its schedule) and
// the rows' gradients through the table's (at the constant learning rate of
// the settings; both applied on the ps). The table and the
// optimizer are bound to the closure, so a retried closure's lookups and
// updates apply once.
[[nodiscard]] absl::StatusOr<Structure> run_dlrm_steps(WorkerContext& ctx, const Structure& args);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_DLRM_STEP_H_

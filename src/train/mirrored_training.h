// Training with the mirrored strategy (internal), without any ps or worker
// task (TF's MirroredStrategy on CPU replicas): each of options.replicas
// replicas holds its own copy of the parameters and optimizer slots,
// computes gradients on its share of every global batch
// (ReplicaGroup::experimental_distribute_dataset), all-reduces them (MEAN)
// and applies the same update, so the copies stay identical (checked at
// the end of every epoch). It checkpoints every epoch (and on a stop
// request) into <run_dir>/checkpoints in the parameter-server runs' format
// and resumes from there, as train/epoch_loop.h describes.
#ifndef PSFLOW_TRAIN_MIRRORED_TRAINING_H_
#define PSFLOW_TRAIN_MIRRORED_TRAINING_H_

#include <memory>

#include "absl/status/statusor.h"
#include "train/model.h"
#include "train/train_options.h"
#include "train/training_session.h"

namespace psflow::internal {

// `model` (loaded, with a mirrored() side) and `options` must outlive the
// session.
[[nodiscard]] absl::StatusOr<std::unique_ptr<TrainingSession>> start_mirrored_training(
    const TrainOptions& options, Model& model);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_MIRRORED_TRAINING_H_

// Training on parameter servers (internal): the strategy over the cluster,
// the model's variables and the optimizer created in its scope, and the
// model's closures scheduled on the workers by this process as the
// coordinator, an epoch at a time.
#ifndef PSFLOW_TRAIN_PS_TRAINING_H_
#define PSFLOW_TRAIN_PS_TRAINING_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "psflow/cluster_spec.h"
#include "train/model.h"
#include "train/train_options.h"
#include "train/training_session.h"

namespace psflow::internal {

// Creates the strategy over `spec` (this process as its chief) with the
// model's partitioner, then in its scope the model's variables and
// options.optimizer with options.learning_rate (so that round-robin
// placement puts them as a TF program would), then the coordinator and
// the workers' copies of the model's dataset. `model` (loaded) and
// `options` must outlive the session; `start` names the run to workers.
[[nodiscard]] absl::StatusOr<std::unique_ptr<TrainingSession>> start_ps_training(
    const ClusterSpec& spec, const TrainOptions& options, Model& model, absl::Time start);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_PS_TRAINING_H_

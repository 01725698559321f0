// `psflow train` on the coordinator, for every model (internal): the custom
// training loop of the reference's "Example code for coordinator". One
// path for all models (train/model.h) and both strategies: per epoch, the
// model's closures on ps tasks (or its steps on mirrored replicas), its
// evaluation, a checkpoint, the epoch line, TensorBoard scalars; resuming
// from the run directory's checkpoints and surviving restarted ps tasks
// (train/epoch_loop.h); the run's record (run_record.json after every epoch,
// carried on across invocations: train/run_record.h) and summary.json at
// the end.
#ifndef PSFLOW_TRAIN_TRAINER_H_
#define PSFLOW_TRAIN_TRAINER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/cluster_spec.h"
#include "train/model.h"
#include "train/train_options.h"
#include "train/train_summary.h"

namespace psflow::internal {

// INVALID_ARGUMENT naming the option, its value and what is allowed:
// options.model must be model.name(), then model.validate(), then the
// options every model shares (epochs, steps per execution, learning rate
// and its schedule, strategy, replicas of the models that train mirrored,
// optimizer, ps recovery, partitioner).
[[nodiscard]] absl::Status validate_train_options(const TrainOptions& options, const Model& model);

// Trains `model` as `options` say, writes <run_dir>/run_record.json as it
// goes and <run_dir>/summary.json when the run completes, and returns the
// summary (of the whole run, earlier invocations' epochs included). With the parameter-server
// strategy `spec` is the cluster (ps and worker tasks already running; this process is the
// coordinator); the mirrored strategy trains in this process and ignores
// it. `model` is made for this run (train/model_registry.h) and may be
// asked about it afterwards.
[[nodiscard]] absl::StatusOr<TrainSummary> train_model(const ClusterSpec& spec,
                                                       const TrainOptions& options, Model& model);

// train_model with the model options.model names.
[[nodiscard]] absl::StatusOr<TrainSummary> train(const ClusterSpec& spec,
                                                 const TrainOptions& options);

// summary.json's (and run_record.json's) content: the run's figures and
// this invocation's options, every epoch of the run with the model's extra
// metrics as train_<name> and test_<name> (the last epoch's test_<name>
// also at the top), every invocation with its options and how it ended,
// then the model's own entries.
[[nodiscard]] std::string summary_json(const TrainSummary& summary, const TrainOptions& options,
                                       const Model& model);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_TRAINER_H_

// Whether a rerun on a run directory may resume from its checkpoints with
// the options it was given (internal).
#ifndef PSFLOW_TRAIN_RESUME_CHECK_H_
#define PSFLOW_TRAIN_RESUME_CHECK_H_

#include "absl/status/status.h"
#include "train/train_options.h"

namespace psflow::internal {

// OK unless options.run_dir holds a checkpoint of trained steps (ckpt-<N>,
// N > 0) and its record (train/run_record.h) says the run was trained with
// another value of an option that a resume cannot change:
//   --model       the checkpoint holds another model's variables;
//   --batch-size  its steps count batches of the old size: the epoch a
//                 resume starts at would be wrong;
//   --optimizer   it holds that optimizer's slots and iterations;
//   --data-dir, --seed  the data (wide_deep generates its data from the
//                 seed) the steps were counted on.
// Then INVALID_ARGUMENT naming the old and new value and the fix ("resume
// with --batch-size 32, or use another --run-dir"). Every other option may
// change (--epochs to train on, --learning-rate, the cluster's size, ...).
// Meant to run before any task starts, with the run directory locked.
[[nodiscard]] absl::Status check_resume_options(const TrainOptions& options);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_RESUME_CHECK_H_

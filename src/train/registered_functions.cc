// The training closures and per-worker datasets of `psflow train` (every
// model), registered in every psflow binary so that worker tasks can run
// them. Built as an object library: nothing references them by name.
#include "psflow/function_registry.h"
#include "psflow/per_worker.h"
#include "train/data_check.h"
#include "train/dlrm_step.h"
#include "train/train_step.h"
#include "train/wide_deep_step.h"

namespace psflow {

using internal::check_data;
using internal::kCheckDataFunction;
using internal::kDlrmDataset;
using internal::kDlrmStepFunction;
using internal::kTrainDataset;
using internal::kTrainStepFunction;
using internal::kWideDeepDataset;
using internal::kWideDeepStepFunction;
using internal::make_dlrm_dataset;
using internal::make_train_dataset;
using internal::make_wide_deep_dataset;
using internal::run_dlrm_steps;
using internal::run_train_steps;
using internal::run_wide_deep_steps;

namespace {

PSFLOW_REGISTER_FUNCTION(kCheckDataFunction, &check_data);
PSFLOW_REGISTER_FUNCTION(kTrainStepFunction, &run_train_steps);
PSFLOW_REGISTER_DATASET(kTrainDataset, &make_train_dataset);
PSFLOW_REGISTER_FUNCTION(kWideDeepStepFunction, &run_wide_deep_steps);
PSFLOW_REGISTER_DATASET(kWideDeepDataset, &make_wide_deep_dataset);
PSFLOW_REGISTER_FUNCTION(kDlrmStepFunction, &run_dlrm_steps);
PSFLOW_REGISTER_DATASET(kDlrmDataset, &make_dlrm_dataset);

}  // namespace
}  // namespace psflow

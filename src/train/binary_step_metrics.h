// The part of a closure result that the click-through models (wide_deep,
// dlrm) add: the states of their AUC and binary accuracy metrics.
#ifndef PSFLOW_TRAIN_BINARY_STEP_METRICS_H_
#define PSFLOW_TRAIN_BINARY_STEP_METRICS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/nn.h"
#include "psflow/structure.h"
#include "train/step_result.h"

namespace psflow::internal {

// A closure's AUC and accuracy states, which the coordinator merges across
// closures and workers.
// Thread-safety: as nn's metrics (internally locked).
struct BinaryStepMetrics {
  nn::AUC auc;
  nn::BinaryAccuracy accuracy;

  [[nodiscard]] Structure::Fields fields() const;
  [[nodiscard]] static absl::StatusOr<BinaryStepMetrics> from_structure(const Structure& s);
  [[nodiscard]] absl::Status merge(const BinaryStepMetrics& other);
  // Loss, accuracy and "auc".
  [[nodiscard]] ModelMetrics figures(const StepSums& sums) const;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_BINARY_STEP_METRICS_H_

#include "train/binary_step_metrics.h"

#include "psflow/status_macros.h"

namespace psflow::internal {

Structure::Fields BinaryStepMetrics::fields() const {
  return {{"auc", auc.to_structure()}, {"accuracy", accuracy.to_structure()}};
}

absl::StatusOr<BinaryStepMetrics> BinaryStepMetrics::from_structure(const Structure& s) {
  BinaryStepMetrics m;
  PSFLOW_ASSIGN_OR_RETURN(const Structure* auc,
                          kStepResultArgs.field(s, "auc", Structure::Kind::kDict));
  PSFLOW_ASSIGN_OR_RETURN(m.auc, nn::AUC::from_structure(*auc));
  PSFLOW_ASSIGN_OR_RETURN(const Structure* acc,
                          kStepResultArgs.field(s, "accuracy", Structure::Kind::kDict));
  PSFLOW_ASSIGN_OR_RETURN(m.accuracy, nn::BinaryAccuracy::from_structure(*acc));
  return m;
}

absl::Status BinaryStepMetrics::merge(const BinaryStepMetrics& other) {
  PSFLOW_RETURN_IF_ERROR(auc.merge(other.auc));
  return accuracy.merge(other.accuracy);
}

ModelMetrics BinaryStepMetrics::figures(const StepSums& sums) const {
  return {sums.mean_loss(), accuracy.result(), {{"auc", auc.result()}}};
}

}  // namespace psflow::internal

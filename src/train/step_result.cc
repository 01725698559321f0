#include "train/step_result.h"

#include <utility>

namespace psflow::internal {

double StepSums::mean_loss() const {
  return examples > 0 ? loss_sum / static_cast<double>(examples) : 0.0;
}

Structure StepSums::to_structure(Structure::Fields fields) const {
  fields.insert_or_assign("loss_sum", Structure(loss_sum));
  fields.insert_or_assign("examples", Structure(examples));
  fields.insert_or_assign("steps", Structure(steps));
  return Structure::dict(std::move(fields));
}

absl::StatusOr<StepSums> StepSums::from_structure(const Structure& s) {
  StepSums r;
  PSFLOW_ASSIGN_OR_RETURN(r.loss_sum, kStepResultArgs.float_field(s, "loss_sum"));
  PSFLOW_ASSIGN_OR_RETURN(r.examples, kStepResultArgs.int_field(s, "examples"));
  PSFLOW_ASSIGN_OR_RETURN(r.steps, kStepResultArgs.int_field(s, "steps"));
  if (r.examples < 0 || r.steps < 0) {
    return kStepResultArgs.malformed("negative counts in a step result");
  }
  return r;
}

void StepSums::add(const StepSums& other) {
  loss_sum += other.loss_sum;
  examples += other.examples;
  steps += other.steps;
}

}  // namespace psflow::internal

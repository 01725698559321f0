// Functions that break TF's rules on purpose, for the tests of the
// validations that refuse them (tests/integration/validation_test.cc).
#include "psflow/per_worker.h"
#include "psflow/status_macros.h"
#include "psflow/strategy.h"

namespace psflow {
namespace {

// A dataset function that creates a variable (TF: "Creating variables in
// `dataset_fn` is not allowed."); otherwise range(4).
PSFLOW_REGISTER_DATASET("testing/dataset_creating_a_variable",
                        [](const DatasetContext&, const Structure&) -> absl::StatusOr<Dataset> {
                          PSFLOW_ASSIGN_OR_RETURN(
                              ShardedVariable v,
                              create_variable(Tensor::scalar(0.0f), {.name = "in_dataset_fn"}));
                          (void)v;
                          return Dataset::range(4);
                        });

}  // namespace
}  // namespace psflow

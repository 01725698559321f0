#include "train/model_registry.h"

#include <utility>

#include "psflow/status_macros.h"
#include "train/classifier.h"
#include "train/wide_deep.h"

namespace psflow::internal {

absl::StatusOr<std::unique_ptr<Model>> make_model(const std::string& name) {
  if (name == kWideDeepModel) return std::make_unique<WideDeepModel>();
  // Every other name is a classifier's, or is refused naming them.
  PSFLOW_ASSIGN_OR_RETURN(std::unique_ptr<ClassifierModel> classifier,
                          ClassifierModel::create(name));
  return std::unique_ptr<Model>(std::move(classifier));
}

}  // namespace psflow::internal

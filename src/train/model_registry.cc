#include "train/model_registry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "psflow/status_macros.h"
#include "train/classifier.h"
#include "train/wide_deep.h"

namespace psflow::internal {

std::vector<std::string> model_names() { return {"mlp", "logreg", kWideDeepModel}; }

absl::StatusOr<std::unique_ptr<Model>> make_model(const std::string& name) {
  const std::vector<std::string> names = model_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model '", name, "' is not a model psflow knows; use one of ",
                     absl::StrJoin(names, ", "), " (see `psflow train --help`)"));
  }
  if (name == kWideDeepModel) return std::make_unique<WideDeepModel>();
  // Every other name is a classifier's.
  PSFLOW_ASSIGN_OR_RETURN(std::unique_ptr<ClassifierModel> classifier,
                          ClassifierModel::create(name));
  return std::unique_ptr<Model>(std::move(classifier));
}

}  // namespace psflow::internal

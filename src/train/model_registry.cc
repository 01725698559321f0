#include "train/model_registry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "psflow/status_macros.h"
#include "train/classifier.h"
#include "train/dlrm.h"
#include "train/wide_deep.h"

namespace psflow::internal {

std::vector<std::string> model_names() { return {"mlp", "logreg", kWideDeepModel, kDlrmModel}; }

absl::StatusOr<std::unique_ptr<Model>> make_model(const std::string& name) {
  const std::vector<std::string> names = model_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model '", name, "' is not a model psflow knows; use one of ",
                     absl::StrJoin(names, ", "), " (see `psflow train --help`)"));
  }
  if (name == kWideDeepModel) return std::make_unique<WideDeepModel>();
  if (name == kDlrmModel) return std::make_unique<DlrmModel>();
  // Every other name is a classifier's.
  PSFLOW_ASSIGN_OR_RETURN(std::unique_ptr<ClassifierModel> classifier,
                          ClassifierModel::create(name));
  return std::unique_ptr<Model>(std::move(classifier));
}

absl::StatusOr<ConfiguredModel> make_model_from_run_config(std::string_view text,
                                                           const std::string& path) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("model") || !j["model"].is_string() ||
      !j.contains("data_dir") || !j["data_dir"].is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path,
                     " is malformed: expected a JSON object with at least {\"model\": ..., "
                     "\"data_dir\": ...}, as psflow train writes it"));
  }
  ConfiguredModel out;
  out.options.model = j["model"].get<std::string>();
  out.options.data_dir = j["data_dir"].get<std::string>();
  out.options.out = nullptr;
  if (out.options.model == kWideDeepModel) {
    PSFLOW_ASSIGN_OR_RETURN(out.model, WideDeepModel::from_run_config(j, path, &out.options));
    return out;
  }
  absl::StatusOr<std::unique_ptr<Model>> model = make_model(out.options.model);
  if (!model.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": \"model\" ", model.status().message()));
  }
  out.model = *std::move(model);
  return out;
}

}  // namespace psflow::internal

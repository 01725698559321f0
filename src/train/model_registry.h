// The models `psflow train --model` knows (internal).
#ifndef PSFLOW_TRAIN_MODEL_REGISTRY_H_
#define PSFLOW_TRAIN_MODEL_REGISTRY_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "train/model.h"

namespace psflow::internal {

// Every --model name, in the order --help and errors list them.
[[nodiscard]] std::vector<std::string> model_names();

// A fresh model for one run of `name`, with its default settings.
// INVALID_ARGUMENT naming --model and every model_names() when no model has
// that name.
[[nodiscard]] absl::StatusOr<std::unique_ptr<Model>> make_model(const std::string& name);

// A model rebuilt from a run directory's config.json (Model::run_config),
// and the TrainOptions its load() reads (model, data_dir, seed; out null).
// Thread-safety: a value type.
struct ConfiguredModel {
  std::unique_ptr<Model> model;
  TrainOptions options;
};

// `text` is the content of config.json at `path`. INVALID_ARGUMENT naming
// `path` and the field when it is malformed or names no known model.
[[nodiscard]] absl::StatusOr<ConfiguredModel> make_model_from_run_config(std::string_view text,
                                                                         const std::string& path);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_MODEL_REGISTRY_H_

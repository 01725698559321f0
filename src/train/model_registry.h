// The models `psflow train --model` knows (internal).
#ifndef PSFLOW_TRAIN_MODEL_REGISTRY_H_
#define PSFLOW_TRAIN_MODEL_REGISTRY_H_

#include <memory>
#include <string>
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

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_MODEL_REGISTRY_H_

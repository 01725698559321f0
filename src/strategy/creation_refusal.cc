#include "strategy/creation_refusal.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace psflow::internal {
namespace {

// The dataset function running on this thread, or null.
const std::string*& current_dataset_fn() {
  thread_local const std::string* current = nullptr;
  return current;
}

}  // namespace

DatasetFunctionScope::DatasetFunctionScope(std::string dataset_fn)
    : dataset_fn_(std::move(dataset_fn)), previous_(current_dataset_fn()) {
  current_dataset_fn() = &dataset_fn_;
}

DatasetFunctionScope::~DatasetFunctionScope() { current_dataset_fn() = previous_; }

absl::Status check_variable_creation_allowed(const VariableOptions& options) {
  const std::string* dataset_fn = current_dataset_fn();
  if (dataset_fn == nullptr) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "Creating variables in `dataset_fn` is not allowed: dataset function '", *dataset_fn,
      "' tried to create variable '", options.name.empty() ? "Variable" : options.name,
      "', which would live on one worker only. Create it on the coordinator (inside "
      "strategy.scope()) and pass its handle to the scheduled functions instead."));
}

}  // namespace psflow::internal

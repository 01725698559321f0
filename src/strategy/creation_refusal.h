// Where variable creation is refused (internal): TF raises ValueError
// ("Creating variables in `dataset_fn` is not allowed.") when a dataset
// function creates a variable, since such a variable would live on one
// worker only (psflow: in that worker process, silently apart from the
// model). The worker runtime runs every dataset function under this guard
// (DatasetRegistry::lookup).
#ifndef PSFLOW_STRATEGY_CREATION_REFUSAL_H_
#define PSFLOW_STRATEGY_CREATION_REFUSAL_H_

#include <string>

#include "absl/status/status.h"
#include "psflow/strategy.h"

namespace psflow::internal {

// While it lives, every variable creation on this thread (create_variable
// in or outside a strategy scope, strategy->create_variable) fails with
// INVALID_ARGUMENT naming `dataset_fn`. Nests.
// Thread-safety: a thread-local guard; use it on the thread that made it.
class DatasetFunctionScope {
 public:
  explicit DatasetFunctionScope(std::string dataset_fn);
  ~DatasetFunctionScope();
  DatasetFunctionScope(const DatasetFunctionScope&) = delete;
  DatasetFunctionScope& operator=(const DatasetFunctionScope&) = delete;

 private:
  std::string dataset_fn_;
  const std::string* previous_;
};

// OK unless this thread is inside a DatasetFunctionScope: then
// INVALID_ARGUMENT with TF's message, naming the dataset function and the
// variable `options` asked for.
[[nodiscard]] absl::Status check_variable_creation_allowed(const VariableOptions& options);

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_CREATION_REFUSAL_H_

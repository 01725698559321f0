// The three registries of named functions: how each words its errors, and
// their one instantiation. Every registry is instantiated in this one
// translation unit because each header's inline registration method would
// otherwise instantiate the others' members where their wording is unknown.
#include "psflow/function_registry.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/close_names.h"
#include "base/shown_text.h"
#include "base/strings.h"
#include "psflow/per_worker.h"
#include "psflow/per_worker_resource.h"
#include "worker/named_functions.h"
#include "worker/named_registry_impl.h"

namespace psflow {

using internal::av;
using internal::close_names;

namespace {

// How many registered names a NOT_FOUND lists when none is close.
constexpr size_t kMaxListedNames = 10;

std::string quoted_list(const std::vector<std::string>& names) {
  return absl::StrCat("'", absl::StrJoin(names, "', '"), "'");
}

constexpr char kDatasetKind[] = "dataset";
constexpr char kDatasetMacro[] = "PSFLOW_DATASET_FUNCTION";
constexpr char kResourceKind[] = "resource";
constexpr char kResourceMacro[] = "PSFLOW_RESOURCE_FUNCTION";

}  // namespace

template <>
struct internal::RegistryWording<FunctionRegistry> {
  static absl::Status invalid(std::string_view name, bool function_is_empty) {
    if (name.empty()) {
      return absl::InvalidArgumentError("A registered function needs a non-empty name.");
    }
    if (function_is_empty) {
      return absl::InvalidArgumentError(
          absl::StrCat("Function '", av(name), "' is registered without a callable."));
    }
    return absl::OkStatus();
  }

  static absl::Status already_registered(std::string_view name) {
    return absl::AlreadyExistsError(
        absl::StrCat("A function named '", av(name),
                     "' is already registered; every registered function needs its own name."));
  }

  static absl::Status not_registered(std::string_view name, const std::vector<std::string>& all) {
    std::string message =
        absl::StrCat("No function named '", shown_name(name), "' is registered in this binary.");
    const std::vector<std::string> close = close_names(name, all);
    if (!close.empty()) {
      absl::StrAppend(&message, " Did you mean ", quoted_list(close), "?");
    } else if (all.empty()) {
      absl::StrAppend(&message, " No function is registered at all.");
    } else if (all.size() <= kMaxListedNames) {
      absl::StrAppend(&message, " Registered: ", quoted_list(all), ".");
    } else {
      absl::StrAppend(&message, " ", all.size(), " functions are registered, e.g. ",
                      quoted_list({all.begin(), all.begin() + kMaxListedNames}), ".");
    }
    absl::StrAppend(&message,
                    " Functions are registered with PSFLOW_FUNCTION or PSFLOW_REGISTER_FUNCTION "
                    "in code linked into every process of the job.");
    if (name.find('.') != std::string_view::npos) {
      // A Python step's name is MODULE.QUALNAME.
      absl::StrAppend(&message,
                      " A Python step function (@psflow.function) runs on workers that "
                      "import its module: start them with `psflow server --python ",
                      shown_name(name.substr(0, name.rfind('.'))), "`.");
    }
    return absl::NotFoundError(message);
  }

  static std::string registrar_failure(std::string_view name, const absl::Status& status) {
    return absl::StrCat("Cannot register function '", av(name), "': ", status.message());
  }
};

template <>
struct internal::RegistryWording<DatasetRegistry>
    : internal::PerWorkerWording<kDatasetKind, kDatasetMacro> {};
template <>
struct internal::RegistryWording<ResourceRegistry>
    : internal::PerWorkerWording<kResourceKind, kResourceMacro> {};

template class NamedRegistry<FunctionRegistry, WorkerFunction, const RegisteredFunction*>;
template class NamedRegistry<DatasetRegistry, DatasetFunction>;
template class NamedRegistry<ResourceRegistry, ResourceFunction>;
template class NamedRegistrar<FunctionRegistry>;
template class NamedRegistrar<DatasetRegistry>;
template class NamedRegistrar<ResourceRegistry>;

}  // namespace psflow

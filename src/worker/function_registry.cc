#include "psflow/function_registry.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/close_names.h"
#include "base/logging.h"
#include "base/strings.h"

namespace psflow {
namespace {

// How many registered names a NOT_FOUND lists when none is close.
constexpr size_t kMaxListedNames = 10;

std::string quoted_list(const std::vector<std::string>& names) {
  return absl::StrCat("'", absl::StrJoin(names, "', '"), "'");
}

}  // namespace

FunctionRegistry& FunctionRegistry::global() {
  // Never destroyed: registrars and workers may use it during static
  // destruction of other translation units.
  static FunctionRegistry* const registry = new FunctionRegistry();
  return *registry;
}

absl::Status FunctionRegistry::register_function(std::string name, WorkerFunction fn) {
  if (name.empty()) {
    return absl::InvalidArgumentError("A registered function needs a non-empty name.");
  }
  if (!fn) {
    return absl::InvalidArgumentError(
        absl::StrCat("Function '", name, "' is registered without a callable."));
  }
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = functions_.try_emplace(name, nullptr);
  if (!inserted) {
    return absl::AlreadyExistsError(
        absl::StrCat("A function named '", name,
                     "' is already registered; every registered function needs its own name."));
  }
  it->second = std::make_unique<const RegisteredFunction>(
      RegisteredFunction{std::move(name), std::move(fn)});
  return absl::OkStatus();
}

const RegisteredFunction* FunctionRegistry::find(std::string_view name) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = functions_.find(name);
  return it == functions_.end() ? nullptr : it->second.get();
}

absl::StatusOr<const RegisteredFunction*> FunctionRegistry::lookup(std::string_view name) const {
  if (const RegisteredFunction* f = find(name)) return f;
  const std::vector<std::string> all = names();
  std::string message =
      absl::StrCat("No function named '", av(name), "' is registered in this binary.");
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
  return absl::NotFoundError(message);
}

std::vector<std::string> FunctionRegistry::names() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<std::string> out;
  out.reserve(functions_.size());
  for (const auto& [name, unused] : functions_) out.push_back(name);
  return out;
}

FunctionRegistrar::FunctionRegistrar(std::string name, WorkerFunction fn) {
  const std::string copy = name;
  const absl::Status status =
      FunctionRegistry::global().register_function(std::move(name), std::move(fn));
  PSFLOW_CHECK(status.ok(), "Cannot register function '", copy, "': ", status.message());
}

}  // namespace psflow

// What the registries of per-worker dataset and resource functions share
// (internal): registration checks, the "not registered" error, their
// wording for NamedRegistry, and ids of per-worker handles.
#ifndef PSFLOW_WORKER_NAMED_FUNCTIONS_H_
#define PSFLOW_WORKER_NAMED_FUNCTIONS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/strings.h"

namespace psflow::internal {

// `kind` names the registry's functions in messages ("dataset",
// "resource"); `macro` is how users register one (PSFLOW_DATASET_FUNCTION).

// INVALID_ARGUMENT for an empty name or function.
[[nodiscard]] absl::Status check_registration(std::string_view kind, std::string_view name,
                                              bool function_is_empty);
// ALREADY_EXISTS naming `name`.
[[nodiscard]] absl::Status already_registered(std::string_view kind, std::string_view name);
// NOT_FOUND naming `name`, the closest of `registered`, and `macro`.
[[nodiscard]] absl::Status not_registered(std::string_view kind, std::string_view macro,
                                          std::string_view name,
                                          const std::vector<std::string>& registered);

// The RegistryWording of a per-worker registry whose functions are `kKind`
// functions registered with `kMacro`.
// Thread-safety: stateless.
template <const char* kKind, const char* kMacro>
struct PerWorkerWording {
  [[nodiscard]] static absl::Status invalid(std::string_view name, bool function_is_empty) {
    return check_registration(kKind, name, function_is_empty);
  }
  [[nodiscard]] static absl::Status already_registered(std::string_view name) {
    return internal::already_registered(kKind, name);
  }
  [[nodiscard]] static absl::Status not_registered(std::string_view name,
                                                   const std::vector<std::string>& registered) {
    return internal::not_registered(kKind, kMacro, name, registered);
  }
  [[nodiscard]] static std::string registrar_failure(std::string_view name,
                                                     const absl::Status& status) {
    return absl::StrCat("Cannot register ", kKind, " function '", av(name),
                        "': ", status.message());
  }
};

// A per-worker handle id, unique across coordinator processes, so that a
// worker serving two coordinators never mixes their per-worker state.
[[nodiscard]] std::string new_per_worker_id();

}  // namespace psflow::internal

#endif  // PSFLOW_WORKER_NAMED_FUNCTIONS_H_

// The definitions of NamedRegistry and NamedRegistrar (psflow/named_registry.h),
// for the one translation unit (function_registry.cc) that specialises
// RegistryWording for every registry and instantiates both templates for
// each. Any other translation unit that included this would instantiate
// members of a registry whose wording it does not see.
#ifndef PSFLOW_WORKER_NAMED_REGISTRY_IMPL_H_
#define PSFLOW_WORKER_NAMED_REGISTRY_IMPL_H_

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "psflow/named_registry.h"
#include "psflow/status_macros.h"

namespace psflow {
namespace internal {

// How `Registry` words its errors: static functions
//   invalid(name, function_is_empty): INVALID_ARGUMENT for an empty name or
//     function, OK otherwise;
//   already_registered(name): ALREADY_EXISTS;
//   not_registered(name, registered_names): NOT_FOUND;
//   registrar_failure(name, status): the message a registrar aborts with.
// Thread-safety: stateless.
template <typename Registry>
struct RegistryWording;

}  // namespace internal

// The members of the public NamedRegistry and NamedRegistrar templates.

template <typename Derived, typename Fn, typename Found>
Derived& NamedRegistry<Derived, Fn, Found>::global() {
  static Derived* const registry = new Derived();
  return *registry;
}

template <typename Derived, typename Fn, typename Found>
absl::Status NamedRegistry<Derived, Fn, Found>::register_function(std::string name, Fn fn) {
  PSFLOW_RETURN_IF_ERROR(internal::RegistryWording<Derived>::invalid(name, fn == nullptr));
  absl::MutexLock lock(&mu_);
  auto [it, inserted] = functions_.try_emplace(name);
  if (!inserted) return internal::RegistryWording<Derived>::already_registered(name);
  it->second.name = std::move(name);
  it->second.fn = std::move(fn);
  return absl::OkStatus();
}

template <typename Derived, typename Fn, typename Found>
const Registered<Fn>* NamedRegistry<Derived, Fn, Found>::find(std::string_view name) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = functions_.find(name);
  return it == functions_.end() ? nullptr : &it->second;
}

template <typename Derived, typename Fn, typename Found>
absl::StatusOr<Found> NamedRegistry<Derived, Fn, Found>::lookup(std::string_view name) const {
  static_assert(std::is_same_v<Found, Fn> || std::is_same_v<Found, const Registered<Fn>*>);
  const Registered<Fn>* found = find(name);
  if (found == nullptr) return internal::RegistryWording<Derived>::not_registered(name, names());
  if constexpr (std::is_same_v<Found, Fn>) {
    return found->fn;
  } else {
    return found;
  }
}

template <typename Derived, typename Fn, typename Found>
std::vector<std::string> NamedRegistry<Derived, Fn, Found>::names() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<std::string> out;
  out.reserve(functions_.size());
  for (const auto& [name, unused] : functions_) out.push_back(name);
  return out;
}

template <typename Registry>
NamedRegistrar<Registry>::NamedRegistrar(std::string name, typename Registry::Function fn) {
  const std::string copy = name;
  const absl::Status status = Registry::global().register_function(std::move(name), std::move(fn));
  PSFLOW_CHECK(status.ok(), internal::RegistryWording<Registry>::registrar_failure(copy, status));
}

}  // namespace psflow

#endif  // PSFLOW_WORKER_NAMED_REGISTRY_IMPL_H_

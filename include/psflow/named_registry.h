// What the registries of named callables share: FunctionRegistry (functions
// that coordinators schedule on workers), DatasetRegistry (per-worker
// dataset functions) and ResourceRegistry (per-worker resource functions).
// Each is filled at static initialisation, by its registrar, in every
// process of the binary, and looked up by name when a worker runs or builds
// something. Users reach them through those three classes and their
// PSFLOW_* macros; nothing here is meant to be named directly.
#ifndef PSFLOW_NAMED_REGISTRY_H_
#define PSFLOW_NAMED_REGISTRY_H_

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "psflow/structure.h"

namespace psflow {

// A callable with the name it was registered under.
// Thread-safety: a value type.
template <typename Function>
struct Registered {
  std::string name;
  Function fn;
};

template <typename Registry>
class NamedRegistrar;

namespace internal {
// The result and context types of a registry's std::function type.
// Thread-safety: a type trait (no state).
template <typename Function>
struct NamedSignature;
template <typename R, typename C>
struct NamedSignature<std::function<R(C, const Structure&)>> {
  using Result = R;
  using Context = C;
};
}  // namespace internal

// Callables of type `Fn` by name. `Derived` is the registry class (what
// global() gives), which words its errors (defined beside its
// implementation, which instantiates this template); `Found` is what
// lookup() gives: `Fn` (a copy) or `const Registered<Fn>*`.
// Thread-safety: thread-safe. Entries are never removed, so pointers that
// find() and lookup() return stay valid as long as the registry.
template <typename Derived, typename Fn, typename Found = Fn>
class NamedRegistry {
 public:
  using Function = Fn;

  // The process-wide registry that the registrar and macros fill. Never
  // destroyed: registrars and workers may use it during static
  // destruction of other translation units.
  [[nodiscard]] static Derived& global();

  NamedRegistry(const NamedRegistry&) = delete;
  NamedRegistry& operator=(const NamedRegistry&) = delete;

  // Null when nothing is registered under `name`.
  [[nodiscard]] const Registered<Fn>* find(std::string_view name) const ABSL_LOCKS_EXCLUDED(mu_);
  // NOT_FOUND naming `name` and the registered names closest to it.
  [[nodiscard]] absl::StatusOr<Found> lookup(std::string_view name) const ABSL_LOCKS_EXCLUDED(mu_);
  // Sorted.
  [[nodiscard]] std::vector<std::string> names() const ABSL_LOCKS_EXCLUDED(mu_);

 protected:
  NamedRegistry() = default;
  ~NamedRegistry() = default;

  // INVALID_ARGUMENT for an empty name or an empty function; ALREADY_EXISTS
  // when the name is taken. Each registry makes it public under its name.
  [[nodiscard]] absl::Status register_function(std::string name, Fn fn) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class NamedRegistrar<Derived>;

  mutable absl::Mutex mu_;
  std::map<std::string, Registered<Fn>, std::less<>> functions_ ABSL_GUARDED_BY(mu_);
};

// Registers a function in Registry::global() when constructed, i.e. at
// static initialisation. A duplicate or empty name aborts the program with
// a message naming it: two functions under one name would make every
// worker run an arbitrary one of them.
// Thread-safety: construction is thread-safe (the registry is).
template <typename Registry>
class NamedRegistrar {
 public:
  NamedRegistrar(std::string name, typename Registry::Function fn);

  // The result and context types of the registry's functions (whose second
  // parameter is always `const Structure& args`), for the macros below.
  using Result = typename internal::NamedSignature<typename Registry::Function>::Result;
  using Context = typename internal::NamedSignature<typename Registry::Function>::Context;
};

}  // namespace psflow

#define PSFLOW_NAMED_CONCAT_INNER_(a, b) a##b
#define PSFLOW_NAMED_CONCAT_(a, b) PSFLOW_NAMED_CONCAT_INNER_(a, b)

// What PSFLOW_REGISTER_FUNCTION and its kin expand to: a registrar of type
// ::psflow::`kind`Registrar with a name unique in the translation unit.
#define PSFLOW_NAMED_REGISTER_(kind, name, fn)                                  \
  [[maybe_unused]] static const ::psflow::kind##Registrar PSFLOW_NAMED_CONCAT_( \
      psflow_named_registrar_, __COUNTER__)(name, fn)

// What PSFLOW_FUNCTION and its kin expand to: declares psflow_`kind`_`name`
// with the signature of ::psflow::`kind`Registry's functions, registers it
// under the name of the identifier `name`, and opens its definition.
#define PSFLOW_NAMED_FUNCTION_(kind, name, ctx, args)                                       \
  static ::psflow::kind##Registrar::Result psflow_##kind##_##name(                          \
      ::psflow::kind##Registrar::Context ctx, const ::psflow::Structure& args);             \
  [[maybe_unused]] static const ::psflow::kind##Registrar psflow_##kind##_registrar_##name( \
      #name, &psflow_##kind##_##name);                                                      \
  static ::psflow::kind##Registrar::Result psflow_##kind##_##name(                          \
      [[maybe_unused]] ::psflow::kind##Registrar::Context ctx,                              \
      [[maybe_unused]] const ::psflow::Structure& args)

#endif  // PSFLOW_NAMED_REGISTRY_H_

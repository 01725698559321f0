// Functions that coordinators schedule on workers, registered by name.
//
// A C++ closure cannot travel to another process, so a scheduled function is
// named, and every process of the binary (coordinator and workers alike, as
// TF's "same binary for all tasks") registers the same functions at static
// initialisation:
//
//   PSFLOW_FUNCTION(worker_fn, ctx, args) {
//     auto& v = ctx.resources().get_or_create<Counters>("counters");
//     v.v1 += 0.1;
//     v.v2 -= 0.2;
//     return psflow::Structure(v.v1 / v.v2);
//   }
//   ...
//   auto result = coordinator->schedule("worker_fn");
//
// Registration lives in the object file that defines the function. When
// that file is linked from a static library, something must reference it
// (or link it whole), or the linker drops the registration with it.
#ifndef PSFLOW_FUNCTION_REGISTRY_H_
#define PSFLOW_FUNCTION_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "psflow/structure.h"
#include "psflow/worker_context.h"

namespace psflow {

// A function run on a worker: the arguments given to schedule(), with every
// RemoteValue replaced by its value; the result becomes the RemoteValue's
// value, an error its error (and the coordinator's, per the error model of
// ClusterCoordinator).
using WorkerFunction =
    std::function<absl::StatusOr<Structure>(WorkerContext& ctx, const Structure& args)>;

struct RegisteredFunction {
  std::string name;
  WorkerFunction fn;
};

// Thread-safety: thread-safe. Entries are never removed, so pointers that
// find() and lookup() return stay valid as long as the registry.
class FunctionRegistry {
 public:
  // The process-wide registry that PSFLOW_FUNCTION fills.
  [[nodiscard]] static FunctionRegistry& global();

  FunctionRegistry() = default;
  FunctionRegistry(const FunctionRegistry&) = delete;
  FunctionRegistry& operator=(const FunctionRegistry&) = delete;

  // INVALID_ARGUMENT for an empty name or an empty function; ALREADY_EXISTS
  // when the name is taken.
  [[nodiscard]] absl::Status register_function(std::string name, WorkerFunction fn)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Null when nothing is registered under `name`.
  [[nodiscard]] const RegisteredFunction* find(std::string_view name) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // NOT_FOUND naming `name` and the registered names closest to it.
  [[nodiscard]] absl::StatusOr<const RegisteredFunction*> lookup(std::string_view name) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Sorted.
  [[nodiscard]] std::vector<std::string> names() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  mutable absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<const RegisteredFunction>, std::less<>> functions_
      ABSL_GUARDED_BY(mu_);
};

// Registers a function in FunctionRegistry::global() when constructed, i.e.
// at static initialisation. A duplicate or empty name aborts the program
// with a message naming it: two functions under one name would make every
// worker run an arbitrary one of them.
// Thread-safety: construction is thread-safe (the registry is).
class FunctionRegistrar {
 public:
  FunctionRegistrar(std::string name, WorkerFunction fn);
};

}  // namespace psflow

#define PSFLOW_REGISTRY_CONCAT_INNER_(a, b) a##b
#define PSFLOW_REGISTRY_CONCAT_(a, b) PSFLOW_REGISTRY_CONCAT_INNER_(a, b)

// Registers any callable under a string name, which may contain characters
// an identifier cannot ("model/train_step"):
//   PSFLOW_REGISTER_FUNCTION("model/train_step", &train_step);
#define PSFLOW_REGISTER_FUNCTION(name, fn)                                           \
  [[maybe_unused]] static const ::psflow::FunctionRegistrar PSFLOW_REGISTRY_CONCAT_( \
      psflow_function_registrar_, __COUNTER__)(name, fn)

// Defines and registers a function under the name of the identifier `name`;
// `ctx` and `args` name its parameters. See the example at the top.
#define PSFLOW_FUNCTION(name, ctx, args)                                                      \
  static ::absl::StatusOr<::psflow::Structure> psflow_function_##name(                        \
      ::psflow::WorkerContext& ctx, const ::psflow::Structure& args);                         \
  [[maybe_unused]] static const ::psflow::FunctionRegistrar psflow_function_registrar_##name( \
      #name, &psflow_function_##name);                                                        \
  static ::absl::StatusOr<::psflow::Structure> psflow_function_##name(                        \
      [[maybe_unused]] ::psflow::WorkerContext& ctx,                                          \
      [[maybe_unused]] const ::psflow::Structure& args)

#endif  // PSFLOW_FUNCTION_REGISTRY_H_

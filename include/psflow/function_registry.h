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
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/named_registry.h"
#include "psflow/structure.h"
#include "psflow/worker_context.h"

namespace psflow {

// A function run on a worker: the arguments given to schedule(), with every
// RemoteValue replaced by its value; the result becomes the RemoteValue's
// value, an error its error (and the coordinator's, per the error model of
// ClusterCoordinator).
using WorkerFunction =
    std::function<absl::StatusOr<Structure>(WorkerContext& ctx, const Structure& args)>;

using RegisteredFunction = Registered<WorkerFunction>;

// Thread-safety: thread-safe. Entries are never removed, so pointers that
// find() and lookup() return stay valid as long as the registry.
class FunctionRegistry
    : public NamedRegistry<FunctionRegistry, WorkerFunction, const RegisteredFunction*> {
 public:
  // INVALID_ARGUMENT for an empty name or an empty function; ALREADY_EXISTS
  // when the name is taken.
  using NamedRegistry::register_function;
};

// Registers a function in FunctionRegistry::global() when constructed, i.e.
// at static initialisation; aborts on a duplicate or empty name (see
// NamedRegistrar).
using FunctionRegistrar = NamedRegistrar<FunctionRegistry>;

}  // namespace psflow

// Registers any callable under a string name, which may contain characters
// an identifier cannot ("model/train_step"):
//   PSFLOW_REGISTER_FUNCTION("model/train_step", &train_step);
#define PSFLOW_REGISTER_FUNCTION(name, fn) PSFLOW_NAMED_REGISTER_(Function, name, fn)

// Defines and registers a function under the name of the identifier `name`;
// `ctx` and `args` name its parameters. See the example at the top.
#define PSFLOW_FUNCTION(name, ctx, args) PSFLOW_NAMED_FUNCTION_(Function, name, ctx, args)

#endif  // PSFLOW_FUNCTION_REGISTRY_H_

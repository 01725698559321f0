// Runs one registered function on the worker side: the part every worker
// transport shares (in-process now, the gRPC ExecutorService next).
#ifndef PSFLOW_WORKER_FUNCTION_RUNNER_H_
#define PSFLOW_WORKER_FUNCTION_RUNNER_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "psflow/function_registry.h"
#include "psflow/structure.h"
#include "psflow/worker_context.h"

namespace psflow::internal {

// Looks `function_name` up in `registry` and calls it. NOT_FOUND (with
// close names) when it is not registered in this process; when the call
// fails after a per-worker input could not be built, that input's error,
// marked (is_per_worker_input_error); a C++ exception
// escaping the function becomes INTERNAL naming the function, rather than
// ending the worker.
// Thread-safety: as thread-safe as the function.
[[nodiscard]] absl::StatusOr<Structure> run_registered_function(const FunctionRegistry& registry,
                                                                std::string_view function_name,
                                                                WorkerContext& ctx,
                                                                const Structure& args);

}  // namespace psflow::internal

#endif  // PSFLOW_WORKER_FUNCTION_RUNNER_H_

#include "worker/function_runner.h"

#include <exception>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/status_macros.h"
#include "strategy/unscheduled_run.h"
#include "worker/per_worker_objects.h"

namespace psflow::internal {

absl::StatusOr<Structure> run_registered_function(const FunctionRegistry& registry,
                                                  std::string_view function_name,
                                                  WorkerContext& ctx, const Structure& args) {
  PSFLOW_ASSIGN_OR_RETURN(const RegisteredFunction* function, registry.lookup(function_name));
  // TF's being_scheduled: replicas run here need no warning.
  ScheduledFunctionScope scheduled;
  try {
    absl::StatusOr<Structure> output = function->fn(ctx, args);
    // Whatever the function made of it, its input was at fault (TF fails
    // such a closure with ClosureInputError before running it).
    if (!output.ok() && !ctx.per_worker_input_error().ok()) {
      return mark_per_worker_input_error(ctx.per_worker_input_error());
    }
    return output;
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("Function '", av(function_name),
                                            "' threw an exception on worker ", ctx.worker_index(),
                                            ": ", e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrCat("Function '", av(function_name),
                                            "' threw a non-standard exception on worker ",
                                            ctx.worker_index()));
  }
}

}  // namespace psflow::internal

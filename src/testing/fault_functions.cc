// Probes for the fault-injection tests, registered in every psflow binary
// so that real worker processes can run them.
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "psflow/function_registry.h"
#include "psflow/status_macros.h"
#include "psflow/variable.h"

namespace psflow::internal {
namespace {

// The environment variable that lets fault-injecting functions act.
constexpr char kFaultFunctionsVariable[] = "PSFLOW_ENABLE_FAULT_FUNCTIONS";

// Exactly-once under repeated kills: args (counter, marker, work_ms).
// Writes its worker index to `marker` (so that a killer can aim at a worker
// that is mid-closure), adds 1 to `counter`, then works for work_ms
// (re-reading the counter, up to 10 s, stopping early when cancelled), so
// that a worker killed now has made its update but not finished: the
// closure is retried and, without exactly-once keys, adds a second time.
absl::StatusOr<Structure> increment_then_work(WorkerContext& ctx, const Structure& args) {
  constexpr char kName[] = "testing/increment_then_work";
  if (!args.is_sequence() || args.size() != 3 || args[2].kind() != Structure::Kind::kInt ||
      args[2].int_value() < 0 || args[2].int_value() > 10000) {
    return absl::InvalidArgumentError(
        absl::StrCat(kName, " expects (counter handle, marker handle, work_ms in [0, 10000]); got ",
                     args.debug_string()));
  }
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable counter, ctx.variable(args[0]));
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable marker, ctx.variable(args[1]));
  PSFLOW_RETURN_IF_ERROR(marker.assign(Tensor::scalar<int64_t>(ctx.worker_index())));
  PSFLOW_RETURN_IF_ERROR(counter.assign_add(Tensor::scalar<int64_t>(1)));
  const absl::Time end = absl::Now() + absl::Milliseconds(args[2].int_value());
  while (absl::Now() < end && !ctx.is_cancelled()) {
    PSFLOW_RETURN_IF_ERROR(counter.read_value().status());
  }
  return Structure(static_cast<int64_t>(ctx.worker_index()));
}
PSFLOW_REGISTER_FUNCTION("testing/increment_then_work", &increment_then_work);

// A poison closure: SIGKILLs the worker process that runs it, as a function
// that crashes its worker would (the coordinator sees a worker failure,
// never an application error). Every worker binary carries it, so it acts
// only where the worker's environment says fault tests may run; anywhere
// else any client could kill the worker with one call.
PSFLOW_REGISTER_FUNCTION(
    "testing/kill_own_worker", [](WorkerContext&, const Structure&) -> absl::StatusOr<Structure> {
      const char* enabled = std::getenv(kFaultFunctionsVariable);
      if (enabled == nullptr || std::string_view(enabled) != "1") {
        return absl::FailedPreconditionError(absl::StrCat(
            "testing/kill_own_worker is a fault-test function; it runs only on workers started "
            "with ",
            kFaultFunctionsVariable, "=1 in their environment"));
      }
      ::kill(::getpid(), SIGKILL);
      return absl::InternalError("still alive after SIGKILL");
    });

// (worker index, worker recoveries, whether the restart salt is set) of
// the worker running it.
PSFLOW_REGISTER_FUNCTION("testing/worker_recoveries",
                         [](WorkerContext& ctx, const Structure&) -> absl::StatusOr<Structure> {
                           return Structure::tuple({static_cast<int64_t>(ctx.worker_index()),
                                                    ctx.worker_recoveries(),
                                                    ctx.restart_salt() != 0});
                         });

}  // namespace
}  // namespace psflow::internal

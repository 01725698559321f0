// Probes for per-worker inputs on real worker processes: dataset and
// resource functions that cannot be built (closure input errors), and a
// step that takes a while and names its worker (staggered worker start).
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "psflow/function_registry.h"
#include "psflow/per_worker.h"
#include "psflow/per_worker_resource.h"

namespace psflow::internal {
namespace {

// Its build fails with INVALID_ARGUMENT naming the worker.
PSFLOW_REGISTER_DATASET("testing/failing_dataset",
                        [](const DatasetContext& ctx, const Structure&) -> absl::StatusOr<Dataset> {
                          return absl::InvalidArgumentError(
                              absl::StrCat("testing/failing_dataset cannot be built on worker ",
                                           ctx.worker_index));
                        });

// Its build fails with FAILED_PRECONDITION naming the worker.
PSFLOW_REGISTER_RESOURCE("testing/failing_resource",
                         [](const ResourceContext& ctx,
                            const Structure&) -> absl::StatusOr<WorkerResource> {
                           return absl::FailedPreconditionError(
                               absl::StrCat("testing/failing_resource cannot be built on worker ",
                                            ctx.worker_index));
                         });

// Works for `args` seconds (a float, at most 10), then returns its worker
// index; stops early when cancelled.
PSFLOW_REGISTER_FUNCTION("testing/worker_index_after",
                         [](WorkerContext& ctx,
                            const Structure& args) -> absl::StatusOr<Structure> {
                           if (args.kind() != Structure::Kind::kFloat || args.float_value() < 0 ||
                               args.float_value() > 10) {
                             return absl::InvalidArgumentError(
                                 "testing/worker_index_after expects seconds in [0, 10]");
                           }
                           const absl::Time end = absl::Now() + absl::Seconds(args.float_value());
                           while (!ctx.is_cancelled() && absl::Now() < end) {
                             absl::SleepFor(absl::Milliseconds(1));
                           }
                           return Structure(static_cast<int64_t>(ctx.worker_index()));
                         });

}  // namespace
}  // namespace psflow::internal

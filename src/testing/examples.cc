// Functions shipped in every psflow binary: the reference's examples, and
// small probes that tests and benchmarks schedule on real worker processes
// (a worker can run only what its binary registers).
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "psflow/function_registry.h"
#include "psflow/per_worker.h"
#include "psflow/per_worker_resource.h"
#include "psflow/status_macros.h"
#include "psflow/variable.h"

namespace psflow::internal {
namespace {

absl::StatusOr<ShardedVariable> variable_arg(WorkerContext& ctx, const Structure& args,
                                             size_t index, const char* function) {
  if (!args.is_sequence() || args.size() <= index) {
    return absl::InvalidArgumentError(absl::StrCat(
        function, " expects a tuple whose item ", index,
        " is a variable handle (VariableHandle::to_structure()); got ", args.debug_string()));
  }
  return ctx.variable(args[index]);
}

// The reference's worker_fn: v1 += 0.1; v2 -= 0.2; return v1 / v2, with
// (v1, v2) float32 scalars on the ps tasks passed as handles.
absl::StatusOr<Structure> worker_fn(WorkerContext& ctx, const Structure& args) {
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable v1, variable_arg(ctx, args, 0, "examples/worker_fn"));
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable v2, variable_arg(ctx, args, 1, "examples/worker_fn"));
  PSFLOW_RETURN_IF_ERROR(v1.assign_add(Tensor::scalar(0.1f)));
  PSFLOW_RETURN_IF_ERROR(v2.assign_sub(Tensor::scalar(0.2f)));
  PSFLOW_ASSIGN_OR_RETURN(Tensor a, v1.read_value());
  PSFLOW_ASSIGN_OR_RETURN(Tensor b, v2.read_value());
  return Structure(Tensor::scalar(a.scalar_value<float>() / b.scalar_value<float>()));
}
PSFLOW_REGISTER_FUNCTION("examples/worker_fn", &worker_fn);

// Adds 1 to an int64 or float32 scalar variable: one update per closure.
absl::StatusOr<Structure> increment(WorkerContext& ctx, const Structure& args) {
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable v, variable_arg(ctx, args, 0, "examples/increment"));
  Tensor one = v.dtype() == DType::kInt64 ? Tensor::scalar<int64_t>(1) : Tensor::scalar(1.0f);
  PSFLOW_RETURN_IF_ERROR(v.assign_add(one));
  return Structure(static_cast<int64_t>(ctx.worker_index()));
}
PSFLOW_REGISTER_FUNCTION("examples/increment", &increment);

// Per-worker input: range(n) split by worker index, in batches
// (args: (n, batch_size)); and an unseeded shuffle of range(n) (args: n),
// which differs from worker to worker.
PSFLOW_REGISTER_DATASET(
    "examples/range_by_worker",
    [](const DatasetContext& ctx, const Structure& args) -> absl::StatusOr<Dataset> {
      if (!args.is_sequence() || args.size() != 2 || args[0].kind() != Structure::Kind::kInt ||
          args[1].kind() != Structure::Kind::kInt) {
        return absl::InvalidArgumentError(absl::StrCat(
            "examples/range_by_worker expects (n, batch_size); got ", args.debug_string()));
      }
      return Dataset::range(args[0].int_value())
          .shard(ctx.num_workers, ctx.worker_index)
          .batch(args[1].int_value());
    });
PSFLOW_REGISTER_DATASET(
    "examples/shuffled_range",
    [](const DatasetContext&, const Structure& args) -> absl::StatusOr<Dataset> {
      if (args.kind() != Structure::Kind::kInt) {
        return absl::InvalidArgumentError("examples/shuffled_range expects n");
      }
      return Dataset::range(args.int_value()).shuffle(args.int_value()).batch(args.int_value());
    });
// (worker index, next element of the per-worker iterator passed as args).
PSFLOW_REGISTER_FUNCTION(
    "examples/next_element",
    [](WorkerContext& ctx, const Structure& args) -> absl::StatusOr<Structure> {
      PSFLOW_ASSIGN_OR_RETURN(Structure element, ctx.next(args));
      return Structure::tuple({static_cast<int64_t>(ctx.worker_index()), std::move(element)});
    });

// Exactly-once probe: args (counter, marker, hold), int64 scalars on the
// ps. Records its worker index in `marker`, adds 1 to `counter`, then
// waits (up to 60 s, or until cancelled) while `hold` is non-zero, so that
// a test can kill the worker after the update and before the closure
// finishes. Returns the index of the worker that finished it.
absl::StatusOr<Structure> increment_then_hold(WorkerContext& ctx, const Structure& args) {
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable counter,
                          variable_arg(ctx, args, 0, "testing/increment_then_hold"));
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable marker,
                          variable_arg(ctx, args, 1, "testing/increment_then_hold"));
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable hold,
                          variable_arg(ctx, args, 2, "testing/increment_then_hold"));
  PSFLOW_RETURN_IF_ERROR(marker.assign(Tensor::scalar<int64_t>(ctx.worker_index())));
  PSFLOW_RETURN_IF_ERROR(counter.assign_add(Tensor::scalar<int64_t>(1)));
  const absl::Time end = absl::Now() + absl::Seconds(60);
  while (absl::Now() < end) {
    if (ctx.is_cancelled()) return absl::CancelledError("testing/increment_then_hold cancelled");
    PSFLOW_ASSIGN_OR_RETURN(Tensor h, hold.read_value());
    if (h.scalar_value<int64_t>() == 0) break;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return Structure(static_cast<int64_t>(ctx.worker_index()));
}
PSFLOW_REGISTER_FUNCTION("testing/increment_then_hold", &increment_then_hold);

// A gate on the parameter servers, for multi-process tests that must hold
// a closure on its worker without sleeping on the test side. Args, a dict:
//   "arrived"     int64 variable, incremented once the closure runs;
//   "gate"        int64 variable; the closure holds while it is 0;
//   "cancel_seen" (optional) int64 variable set to 1 once the closure sees
//                 WorkerContext::is_cancelled (it keeps holding: a step that
//                 ignores cancellation);
//   "fail"        (optional) string: fail with INVALID_ARGUMENT(fail) once
//                 released;
//   "value"       (optional) the result once released (default: the worker
//                 index).
// The hold is bounded: after 60 s without the gate opening it fails with
// DEADLINE_EXCEEDED, so a broken test ends.
absl::StatusOr<Structure> hold(WorkerContext& ctx, const Structure& args) {
  if (!args.is_dict() || !args.fields().contains("arrived") || !args.fields().contains("gate")) {
    return absl::InvalidArgumentError(
        absl::StrCat("testing/hold expects a dict with variable handles 'arrived' and 'gate'; got ",
                     args.debug_string()));
  }
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable arrived, ctx.variable(args["arrived"]));
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable gate, ctx.variable(args["gate"]));
  std::optional<ShardedVariable> cancel_seen;
  if (args.fields().contains("cancel_seen")) {
    PSFLOW_ASSIGN_OR_RETURN(cancel_seen, ctx.variable(args["cancel_seen"]));
  }
  PSFLOW_RETURN_IF_ERROR(arrived.assign_add(Tensor::scalar<int64_t>(1)));
  const absl::Time end = absl::Now() + absl::Seconds(60);
  bool released = false;
  bool cancel_recorded = false;
  while (!released && absl::Now() < end) {
    if (cancel_seen.has_value() && !cancel_recorded && ctx.is_cancelled()) {
      PSFLOW_RETURN_IF_ERROR(cancel_seen->assign(Tensor::scalar<int64_t>(1)));
      cancel_recorded = true;
    }
    PSFLOW_ASSIGN_OR_RETURN(Tensor g, gate.read_value());
    released = g.scalar_value<int64_t>() != 0;
    if (!released) absl::SleepFor(absl::Milliseconds(2));
  }
  if (!released) return absl::DeadlineExceededError("testing/hold: the gate stayed shut for 60 s");
  if (auto it = args.fields().find("fail"); it != args.fields().end()) {
    return absl::InvalidArgumentError(it->second.kind() == Structure::Kind::kString
                                          ? it->second.string_value()
                                          : it->second.debug_string());
  }
  if (auto it = args.fields().find("value"); it != args.fields().end()) return it->second;
  return Structure(static_cast<int64_t>(ctx.worker_index()));
}
PSFLOW_REGISTER_FUNCTION("testing/hold", &hold);

// A per-worker resource probe: the resource records the worker that built
// it and how many resources this worker process has built so far (so a
// test sees each worker build its copy exactly once, and a restarted worker
// build it again); testing/use_resource returns (running worker, building
// worker, build number, uses of this copy so far).
struct WorkerStateProbe {
  int64_t built_on = -1;
  int64_t build_number = 0;
  int64_t uses = 0;
};
std::atomic<int64_t> g_resource_builds{0};
PSFLOW_REGISTER_RESOURCE("testing/worker_state",
                         [](const ResourceContext& ctx,
                            const Structure&) -> absl::StatusOr<WorkerResource> {
                           auto state = std::make_shared<WorkerStateProbe>();
                           state->built_on = ctx.worker_index;
                           state->build_number = ++g_resource_builds;
                           return WorkerResource::of(std::move(state));
                         });
PSFLOW_REGISTER_FUNCTION("testing/use_resource",
                         [](WorkerContext& ctx,
                            const Structure& args) -> absl::StatusOr<Structure> {
                           PSFLOW_ASSIGN_OR_RETURN(std::shared_ptr<WorkerStateProbe> state,
                                                   ctx.resource<WorkerStateProbe>(args));
                           ++state->uses;
                           return Structure::tuple({static_cast<int64_t>(ctx.worker_index()),
                                                    state->built_on, state->build_number,
                                                    state->uses});
                         });

// Probes for tests and benchmarks.
PSFLOW_REGISTER_FUNCTION("testing/echo",
                         [](WorkerContext&, const Structure& args) -> absl::StatusOr<Structure> {
                           return args;
                         });
PSFLOW_REGISTER_FUNCTION("testing/worker_index",
                         [](WorkerContext& ctx, const Structure&) -> absl::StatusOr<Structure> {
                           return Structure::tuple({static_cast<int64_t>(ctx.worker_index()),
                                                    static_cast<int64_t>(ctx.num_workers())});
                         });
// Fails with INVALID_ARGUMENT carrying the string argument.
PSFLOW_REGISTER_FUNCTION("testing/fail",
                         [](WorkerContext&, const Structure& args) -> absl::StatusOr<Structure> {
                           return absl::InvalidArgumentError(args.kind() == Structure::Kind::kString
                                                                 ? args.string_value()
                                                                 : args.debug_string());
                         });
// (a, b) -> a + b for ints (an int) or ints and floats (a float): the
// executor protocol's tests chain and select with it.
PSFLOW_REGISTER_FUNCTION(
    "testing/add", [](WorkerContext&, const Structure& args) -> absl::StatusOr<Structure> {
      auto is_number = [](const Structure& s) {
        return s.kind() == Structure::Kind::kInt || s.kind() == Structure::Kind::kFloat;
      };
      if (!args.is_sequence() || args.size() != 2 || !is_number(args[0]) || !is_number(args[1])) {
        return absl::InvalidArgumentError(absl::StrCat(
            "testing/add expects (a, b) of ints or floats; got ", args.debug_string()));
      }
      if (args[0].kind() == Structure::Kind::kInt && args[1].kind() == Structure::Kind::kInt) {
        return Structure(args[0].int_value() + args[1].int_value());
      }
      auto as_double = [](const Structure& s) {
        return s.kind() == Structure::Kind::kInt ? static_cast<double>(s.int_value())
                                                 : s.float_value();
      };
      return Structure(as_double(args[0]) + as_double(args[1]));
    });
// (n, x) -> a float32 tensor of n elements equal to x (n <= 2^24): a large
// result from a small request.
PSFLOW_REGISTER_FUNCTION(
    "testing/fill", [](WorkerContext&, const Structure& args) -> absl::StatusOr<Structure> {
      if (!args.is_sequence() || args.size() != 2 || args[0].kind() != Structure::Kind::kInt ||
          args[0].int_value() < 0 || args[0].int_value() > (int64_t{1} << 24) ||
          args[1].kind() != Structure::Kind::kFloat) {
        return absl::InvalidArgumentError(
            absl::StrCat("testing/fill expects (n, x) with 0 <= n <= 2^24 and x a float; got ",
                         args.debug_string()));
      }
      return Structure(Tensor::from_vector(std::vector<float>(
          static_cast<size_t>(args[0].int_value()), static_cast<float>(args[1].float_value()))));
    });
// Counts its calls on this worker (a per-worker resource) and returns the
// new count: shows the order in which a worker ran its functions.
PSFLOW_REGISTER_FUNCTION("testing/count",
                         [](WorkerContext& ctx, const Structure&) -> absl::StatusOr<Structure> {
                           int64_t& count = ctx.resources().get_or_create<int64_t>("testing/count");
                           return Structure(++count);
                         });
// Runs until cancelled or for the given seconds (default 60), whichever
// comes first; returns whether it was cancelled.
PSFLOW_REGISTER_FUNCTION("testing/run_until_cancelled",
                         [](WorkerContext& ctx,
                            const Structure& args) -> absl::StatusOr<Structure> {
                           const double seconds =
                               args.kind() == Structure::Kind::kFloat ? args.float_value() : 60.0;
                           const absl::Time end = absl::Now() + absl::Seconds(seconds);
                           while (!ctx.is_cancelled() && absl::Now() < end)
                             absl::SleepFor(absl::Milliseconds(1));
                           if (ctx.is_cancelled())
                             return absl::CancelledError("testing/run_until_cancelled: cancelled");
                           return Structure(false);
                         });

}  // namespace
}  // namespace psflow::internal

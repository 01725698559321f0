// TF's warning for replicas run outside a scheduled function (internal).
// ParameterServerStrategy.run / reduce called on the coordinator, rather
// than inside a function passed to ClusterCoordinator.schedule, log a
// WARNING in TF ("... is invoked without using
// `ClusterCoordinator.schedule`...") and still run, on the coordinator.
// psflow's replicas are a ReplicaGroup; its run and reduce, called on a
// thread inside a ParameterServerStrategy scope (the coordinator's side of
// such a strategy) and outside any scheduled function, log the same
// warning, once per process (a training loop would log it every step).
#ifndef PSFLOW_STRATEGY_UNSCHEDULED_RUN_H_
#define PSFLOW_STRATEGY_UNSCHEDULED_RUN_H_

#include <string_view>

namespace psflow::internal {

// While it lives, this thread runs a scheduled function (the worker
// runtime sets it around every registered function it runs). Nests.
// Thread-safety: a thread-local guard; use it on the thread that made it.
class ScheduledFunctionScope {
 public:
  ScheduledFunctionScope();
  ~ScheduledFunctionScope();
  ScheduledFunctionScope(const ScheduledFunctionScope&) = delete;
  ScheduledFunctionScope& operator=(const ScheduledFunctionScope&) = delete;
};

// Whether this thread is inside a ParameterServerStrategy scope and not in
// a scheduled function: where TF warns.
[[nodiscard]] bool is_unscheduled_run();

// Logs the warning, naming `method` ("run", "reduce"), the first time it
// is called where is_unscheduled_run(); returns whether it logged.
// Thread-safety: thread-safe.
bool warn_if_unscheduled_run(std::string_view method);

// Lets the warning be logged again (tests only).
void reset_unscheduled_run_warning_for_testing();

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_UNSCHEDULED_RUN_H_

#include "strategy/unscheduled_run.h"

#include <atomic>

#include "base/logging.h"
#include "base/strings.h"
#include "psflow/strategy.h"

namespace psflow::internal {
namespace {

int& scheduled_depth() {
  thread_local int depth = 0;
  return depth;
}

std::atomic<bool> warned{false};

}  // namespace

ScheduledFunctionScope::ScheduledFunctionScope() { ++scheduled_depth(); }
ScheduledFunctionScope::~ScheduledFunctionScope() { --scheduled_depth(); }

bool is_unscheduled_run() { return has_strategy() && scheduled_depth() == 0; }

bool warn_if_unscheduled_run(std::string_view method) {
  if (!is_unscheduled_run() || warned.exchange(true)) return false;
  PSFLOW_LOG(Warning, "ReplicaGroup::", av(method),
             " is invoked inside a ParameterServerStrategy scope without using "
             "ClusterCoordinator::schedule, so it runs here, on the coordinator, which can be "
             "slow. To run replicas on workers, call run or reduce inside a function passed to "
             "ClusterCoordinator::schedule (TF's warning; logged once per process).");
  return true;
}

void reset_unscheduled_run_warning_for_testing() { warned.store(false); }

}  // namespace psflow::internal

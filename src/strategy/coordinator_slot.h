// Where a ParameterServerStrategy remembers its ClusterCoordinator
// (internal): TF's ClusterCoordinator is a per-strategy singleton, and the
// coordinator layer, above this one, keeps its record here.
#ifndef PSFLOW_STRATEGY_COORDINATOR_SLOT_H_
#define PSFLOW_STRATEGY_COORDINATOR_SLOT_H_

#include <memory>

#include "absl/synchronization/mutex.h"
#include "psflow/strategy.h"

namespace psflow::internal {

// Thread-safety: stateless; with_slot serialises the calls for one
// strategy.
struct StrategyCoordinatorSlot {
  // Calls fn(slot) with `strategy`'s slot, a weak reference to the record
  // of its coordinator (empty or expired when it has none), under the
  // strategy's lock, so that concurrent creations agree on one coordinator.
  // `fn` must not call back into the strategy's coordinator slot.
  template <typename Fn>
  static auto with_slot(const ParameterServerStrategy& strategy, Fn&& fn) {
    absl::MutexLock lock(&strategy.coordinator_mu_);
    return fn(strategy.coordinator_);
  }
};

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_COORDINATOR_SLOT_H_

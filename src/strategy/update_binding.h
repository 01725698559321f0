// Handles bound to one run of a scheduled closure: copies of a variable or
// optimizer whose updates carry the closure's update keys, so that the ps
// tasks apply a retried closure's updates once. The worker context makes
// them (WorkerContext::variable, WorkerContext::bind); the originals stay
// unbound, so that handles a worker keeps across closures never carry an
// earlier closure's keys.
#ifndef PSFLOW_STRATEGY_UPDATE_BINDING_H_
#define PSFLOW_STRATEGY_UPDATE_BINDING_H_

#include <memory>

#include "ps/request/update_key.h"
#include "psflow/optimizer.h"
#include "psflow/variable.h"

namespace psflow::internal {

// Each returns a default-constructed (invalid) handle unchanged; a null
// `keys` gives a handle whose updates carry no key.
[[nodiscard]] Variable bind_update_keys(const Variable& variable, std::shared_ptr<UpdateKeys> keys);
[[nodiscard]] ShardedVariable bind_update_keys(const ShardedVariable& variable,
                                               std::shared_ptr<UpdateKeys> keys);
[[nodiscard]] Optimizer bind_update_keys(const Optimizer& optimizer,
                                         std::shared_ptr<UpdateKeys> keys);

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_UPDATE_BINDING_H_

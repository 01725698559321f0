#include "strategy/update_binding.h"

#include <utility>
#include <vector>

#include "strategy/variable_state.h"

namespace psflow::internal {

Variable bind_update_keys(const Variable& variable, std::shared_ptr<UpdateKeys> keys) {
  if (!variable.valid()) return variable;
  auto state = std::make_shared<VariableState>(VariableAccess::state(variable));
  state->update_keys = std::move(keys);
  return VariableAccess::make(std::move(state));
}

ShardedVariable bind_update_keys(const ShardedVariable& variable,
                                 std::shared_ptr<UpdateKeys> keys) {
  if (!variable.valid()) return variable;
  auto state = std::make_shared<ShardedState>(VariableAccess::state(variable));
  for (Variable& part : state->parts) part = bind_update_keys(part, keys);
  return VariableAccess::make(std::move(state));
}

}  // namespace psflow::internal

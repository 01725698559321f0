#include "ps/request/update_key.h"

namespace psflow {

ScopedUpdateContext::State& ScopedUpdateContext::current() {
  thread_local State state;
  return state;
}

ScopedUpdateContext::ScopedUpdateContext(uint64_t session, uint64_t closure_id)
    : previous_(current()) {
  current() = State{session, closure_id, 0, true};
}

ScopedUpdateContext::~ScopedUpdateContext() { current() = previous_; }

std::optional<UpdateKey> next_update_key() {
  ScopedUpdateContext::State& state = ScopedUpdateContext::current();
  if (!state.active) return std::nullopt;
  return UpdateKey{state.session, state.closure_id, state.next_sequence++};
}

}  // namespace psflow

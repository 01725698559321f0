#include "strategy/creation_hook.h"

#include <utility>

namespace psflow::internal {
namespace {

const CreationHook*& current_hook() {
  thread_local const CreationHook* current = nullptr;
  return current;
}

}  // namespace

CreationHookScope::CreationHookScope(CreationHook hook)
    : hook_(std::move(hook)), previous_(current_hook()) {
  current_hook() = &hook_;
}

CreationHookScope::~CreationHookScope() { current_hook() = previous_; }

absl::StatusOr<ShardedVariable> after_creation(const std::string& requested_name,
                                               absl::StatusOr<ShardedVariable> created) {
  const CreationHook* hook = current_hook();
  if (!created.ok() || hook == nullptr || !*hook) return created;
  // Not while the hook runs: what it does creates nothing of its own.
  current_hook() = nullptr;
  const absl::Status status = (*hook)(requested_name, *created);
  current_hook() = hook;
  if (!status.ok()) return status;
  return created;
}

}  // namespace psflow::internal

// The calling thread's strategy and colocation scopes.
#ifndef PSFLOW_STRATEGY_THREAD_SCOPES_H_
#define PSFLOW_STRATEGY_THREAD_SCOPES_H_

#include <memory>
#include <optional>

#include "psflow/strategy.h"

namespace psflow::internal {

struct ReadCache;

// Set by StrategyScope and ColocationScope, read by variable creation; and
// by cache_variable_reads(), read by variable reads. ReplicaGroup::run
// copies them to its replica threads.
// Thread-safety: thread-local; each thread sees only its own.
struct ThreadScopes {
  ParameterServerStrategy* strategy = nullptr;
  // A different strategy's scope was entered inside another's.
  bool mixed = false;
  const ParameterServerStrategy* colocation_owner = nullptr;
  std::optional<ShardedVariable> colocation;
  // The active cache_variable_reads() scope's cache (shared with replica
  // threads), or null.
  std::shared_ptr<ReadCache> read_cache;
};

[[nodiscard]] ThreadScopes& thread_scopes();

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_THREAD_SCOPES_H_

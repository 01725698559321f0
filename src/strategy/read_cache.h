// The cache of cache_variable_reads(): values of variable parts read while
// the scope is active, keyed by the part's task and stored name.
#ifndef PSFLOW_STRATEGY_READ_CACHE_H_
#define PSFLOW_STRATEGY_READ_CACHE_H_

#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "psflow/tensor.h"
#include "strategy/variable_state.h"

namespace psflow::internal {

// Thread-safety: thread-safe (the replica threads of a run share one).
struct ReadCache {
  [[nodiscard]] std::optional<Tensor> find(const VariableState& part) const ABSL_LOCKS_EXCLUDED(mu);
  // Keeps the first value stored for a part and returns the kept one
  // (another replica thread may have stored its read first).
  [[nodiscard]] Tensor put(const VariableState& part, const Tensor& value) ABSL_LOCKS_EXCLUDED(mu);

  mutable absl::Mutex mu;
  absl::flat_hash_map<std::string, Tensor> values ABSL_GUARDED_BY(mu);
};

// The calling thread's cache, or nullptr outside cache_variable_reads().
[[nodiscard]] ReadCache* current_read_cache();

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_READ_CACHE_H_

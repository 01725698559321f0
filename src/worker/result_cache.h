// The worker side of same-worker RemoteValue chaining: the results of
// recent closures, kept so that a later closure on the same worker can name
// its input instead of receiving its value again (internal).
#ifndef PSFLOW_WORKER_RESULT_CACHE_H_
#define PSFLOW_WORKER_RESULT_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "psflow/structure.h"

namespace psflow::internal {

// A place inside a Structure: item indices of tuples and lists, keys of
// dicts, from the root.
using StructurePath = std::vector<std::variant<int64_t, std::string>>;

// `s` with the element at `path` (which must exist) replaced by `value`.
// INVALID_ARGUMENT naming the path when it does not fit `s`.
[[nodiscard]] absl::StatusOr<Structure> replace_at_path(const Structure& s,
                                                        const StructurePath& path, Structure value);

struct ResultCacheOptions {
  // The most results kept, and the most encoded bytes they may take; the
  // least recently used go first. A result larger than max_bytes is not
  // kept. 0 in either disables the cache.
  size_t max_entries = 1024;
  size_t max_bytes = size_t{64} << 20;
};

struct ResultCacheStats {
  int64_t entries = 0;
  int64_t bytes = 0;
  int64_t hits = 0;    // Lookups that found their result.
  int64_t misses = 0;  // Lookups that did not.
};

// Results by (coordinator's result session, closure id): the session keeps
// two coordinators of one worker apart; a closure retried here replaces
// its earlier result. Lives as long as the worker process, so a restarted
// worker has none (and the coordinator falls back to sending values).
// Thread-safety: thread-safe.
class ResultCache {
 public:
  explicit ResultCache(ResultCacheOptions options = {}) : options_(options) {}

  // Keeps `value` (whose encoded size is `bytes`), evicting the least
  // recently used results to stay within the bounds; whether it was kept.
  bool put(uint64_t session, uint64_t closure_id, Structure value, size_t bytes)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The result, or nullopt when it is not (or no longer) kept; counts a hit
  // or a miss and makes a hit the most recently used.
  [[nodiscard]] std::optional<Structure> get(uint64_t session, uint64_t closure_id)
      ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] ResultCacheStats stats() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Key = std::pair<uint64_t, uint64_t>;
  struct Entry {
    Key key;
    Structure value;
    size_t bytes;
  };

  const ResultCacheOptions options_;
  mutable absl::Mutex mu_;
  std::list<Entry> lru_ ABSL_GUARDED_BY(mu_);  // Most recently used first.
  absl::flat_hash_map<Key, std::list<Entry>::iterator> index_ ABSL_GUARDED_BY(mu_);
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace psflow::internal

#endif  // PSFLOW_WORKER_RESULT_CACHE_H_

// A ps task's DE_IMPORT pages of table shards being restored: held until the
// page that completes a shard, which then replaces the shard's rows at once
// (docs/embeddings.md, "Checkpoints").
#ifndef PSFLOW_EMBEDDING_STAGED_TABLE_IMPORT_H_
#define PSFLOW_EMBEDDING_STAGED_TABLE_IMPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "embedding/dynamic_table.h"

namespace psflow::internal {

// Where one page lies in the shard being imported: rows [offset, offset +
// n) of `total`.
// Thread-safety: a value type.
struct ImportPagePosition {
  int64_t offset = 0;
  int64_t total = 0;
};

// Pages arrive in row order. A page at offset 0 starts the shard afresh
// (dropping pages staged before); a page at the offset where the staged
// rows end is added; a page repeating the last staged page (same offset
// and row count: a retried request) replaces it; a repeat of the page that
// completed the shard is answered as done without changing anything.
// Anything else is FAILED_PRECONDITION (restart from offset 0): pages of a
// sequence cannot be lost or applied twice.
// Thread-safety: thread-safe.
class StagedTableImports {
 public:
  // What stage() will do with a page of `rows` rows of table `name` defined
  // by `config`; INVALID_ARGUMENT for a position outside the shard,
  // FAILED_PRECONDITION for one out of sequence. Changes nothing.
  enum class Action { kStage, kDone };
  [[nodiscard]] absl::StatusOr<Action> check(const std::string& name, const std::string& config,
                                             ImportPagePosition at, int64_t rows) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Stages the page (after check()); when it completes the shard, returns
  // every page of it in row order and forgets them.
  [[nodiscard]] absl::StatusOr<std::optional<std::vector<DynamicTable::Rows>>> stage(
      const std::string& name, const std::string& config, ImportPagePosition at,
      DynamicTable::Rows rows) ABSL_LOCKS_EXCLUDED(mu_);
  // Forgets what was staged or completed for `name` (a completed shard its
  // table then refused).
  void forget(const std::string& name) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Shard {
    std::string config;
    int64_t total = 0;
    int64_t staged = 0;  // rows
    std::vector<int64_t> offsets;
    std::vector<DynamicTable::Rows> pages;
  };
  // The last completing page of each table, to recognise its repeat.
  struct Done {
    std::string config;
    ImportPagePosition at;
    int64_t rows = 0;
  };
  [[nodiscard]] absl::StatusOr<Action> check_locked(const std::string& name,
                                                    const std::string& config,
                                                    ImportPagePosition at, int64_t rows) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Shard> shards_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Done> done_ ABSL_GUARDED_BY(mu_);
};

}  // namespace psflow::internal

#endif  // PSFLOW_EMBEDDING_STAGED_TABLE_IMPORT_H_

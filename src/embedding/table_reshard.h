// Saved table shards regrouped for another number of ps tasks without a
// copy of the table: where each saved row goes, and any page of a new
// shard cut from the saved rows on demand (docs/embeddings.md,
// "Restore and resharding").
#ifndef PSFLOW_EMBEDDING_TABLE_RESHARD_H_
#define PSFLOW_EMBEDDING_TABLE_RESHARD_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "embedding/dynamic_table.h"

namespace psflow::internal {

// Holds a pointer to the saved rows, which must outlive it.
// Thread-safety: immutable after plan(); const methods are thread-safe.
class TableReshard {
 public:
  // Every saved row (each saved shard already checked by validate_import)
  // to the task its key hashes to (dynamic_key_task), keeping the saved
  // order; each new shard gets the largest saved clock and applies.
  // INVALID_ARGUMENT, naming the task, for a new shard validate_import
  // would refuse: a key saved twice, more rows than capacity_per_shard.
  [[nodiscard]] static absl::StatusOr<TableReshard> plan(
      const std::vector<DynamicTable::Rows>& saved, int num_tasks,
      const DynamicEmbeddingOptions& options);

  // Rows of each new shard.
  [[nodiscard]] std::vector<int64_t> totals() const;
  // Rows [offset, offset + n) of the new shard of `task` (in range).
  [[nodiscard]] DynamicTable::Rows slice(int task, int64_t offset, int64_t n) const;

 private:
  const std::vector<DynamicTable::Rows>* saved_ = nullptr;
  int64_t dim_ = 0;
  int64_t clock_ = 0;
  int64_t applies_ = 0;
  // Per new task: (saved shard, row) of each of its rows.
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> at_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_EMBEDDING_TABLE_RESHARD_H_

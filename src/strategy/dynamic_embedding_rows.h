// Checkpoints of dynamic embedding tables on the client side: every ps
// task's rows out (DE_EXPORT) and in (DE_IMPORT) in pages of bounded rows,
// the next page of every task in parallel (docs/embeddings.md,
// "Checkpoints").
#ifndef PSFLOW_STRATEGY_DYNAMIC_EMBEDDING_ROWS_H_
#define PSFLOW_STRATEGY_DYNAMIC_EMBEDDING_ROWS_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "embedding/dynamic_table.h"
#include "psflow/dynamic_embedding.h"

namespace psflow::internal {

// Rows per page unless a caller says otherwise: about 37 MB at dim 16 with
// Adagrad, far below max_message_bytes.
inline constexpr int64_t kDefaultTablePageRows = int64_t{1} << 18;

// Rows per page of the checkpoint saves and restores of this process
// (kDefaultTablePageRows unless set; tests set few to force many pages).
// Thread-safe.
[[nodiscard]] int64_t checkpoint_table_page_rows();
void set_checkpoint_table_page_rows(int64_t rows);

// One page of one ps task's rows: rows [offset, offset + n) of the task's
// `total`, all pages of a task read from one copy of its shard.
// Thread-safety: a value type.
struct TablePage {
  int task = 0;
  int64_t offset = 0;
  int64_t total = 0;
  DynamicTable::Rows rows;
};

// Calls `fn` for every page of every ps task of `table`, on the calling
// thread, each task's pages in row order (a task with no rows gives one
// empty page). Stops at the first error of `fn` or of a ps. INTERNAL for an
// answer that does not match the table's definition.
[[nodiscard]] absl::Status for_each_table_page(const DynamicEmbedding& table, int64_t page_rows,
                                               const std::function<absl::Status(TablePage)>& fn);

// The rows of `table` on each of its ps tasks (index = task), each task's
// from one consistent state, read in pages.
[[nodiscard]] absl::StatusOr<std::vector<DynamicTable::Rows>> export_table_rows(
    const DynamicEmbedding& table, int64_t page_rows = kDefaultTablePageRows);

// Rows [offset, offset + n) of the shard that ps task `task` receives.
using TableRowSource =
    std::function<absl::StatusOr<DynamicTable::Rows>(int task, int64_t offset, int64_t n)>;

// Replaces the rows of every ps task of `table` with totals[task] rows
// drawn from `source` in pages (creating the table on a task that lost
// it). Each page's clock and applies are its shard's.
// Each task stages its pages and replaces its shard when the last arrives,
// after validating all of them; only a task failing in the middle
// (UNAVAILABLE) can leave some tasks restored and others not.
[[nodiscard]] absl::Status import_table_pages(const DynamicEmbedding& table,
                                              const std::vector<int64_t>& totals, int64_t page_rows,
                                              const TableRowSource& source);

// import_table_pages from whole shards held in memory.
[[nodiscard]] absl::Status import_table_rows(const DynamicEmbedding& table,
                                             const std::vector<DynamicTable::Rows>& rows,
                                             int64_t page_rows = kDefaultTablePageRows);

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_DYNAMIC_EMBEDDING_ROWS_H_

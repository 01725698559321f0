// Checkpoints of dynamic embedding tables on the client side: every ps
// task's rows out (DE_EXPORT) and in (DE_IMPORT), one request per task, all
// tasks in parallel (docs/embeddings.md, "Checkpoints").
#ifndef PSFLOW_STRATEGY_DYNAMIC_EMBEDDING_ROWS_H_
#define PSFLOW_STRATEGY_DYNAMIC_EMBEDDING_ROWS_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "embedding/dynamic_table.h"
#include "psflow/dynamic_embedding.h"

namespace psflow::internal {

// The rows of `table` on each of its ps tasks (index = task), each copied
// on its task as one consistent state. INTERNAL for an answer that does
// not match the table's definition.
[[nodiscard]] absl::StatusOr<std::vector<DynamicTable::Rows>> export_table_rows(
    const DynamicEmbedding& table);

// Replaces the rows of every ps task of `table` with rows[task] (creating
// the table on a task that lost it). Each task validates its rows before
// applying them; only a task failing in the middle (UNAVAILABLE) can leave
// some tasks restored and others not.
[[nodiscard]] absl::Status import_table_rows(const DynamicEmbedding& table,
                                             const std::vector<DynamicTable::Rows>& rows);

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_DYNAMIC_EMBEDDING_ROWS_H_

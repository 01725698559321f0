#include "strategy/dynamic_embedding_rows.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "optimizer/optimizer.h"
#include "ps/client/variable_client.h"
#include "ps/request/execute_batch.h"
#include "psflow/status_macros.h"
#include "strategy/dynamic_embedding_internal.h"

namespace psflow::internal {
namespace {

using Op = v1::VariableOp;

// One page moves at most tens of MB; a shard's first export page copies
// the whole shard on its ps first.
constexpr absl::Duration kTimeout = absl::Minutes(10);

// batches[i] to ps task tasks[i], all in parallel.
absl::StatusOr<std::vector<std::vector<Tensor>>> run_on(const DynamicEmbedding& table,
                                                        const std::vector<int>& tasks,
                                                        std::vector<ExecuteBatch> batches) {
  const auto& clients = DynamicEmbeddingAccess::clients(table);
  std::vector<VariableClient*> raw;
  for (int t : tasks) raw.push_back(clients[static_cast<size_t>(t)].get());
  std::vector<absl::StatusOr<std::vector<Tensor>>> results =
      execute_batches_parallel(raw, std::move(batches), absl::Now() + kTimeout, nullptr);
  std::vector<std::vector<Tensor>> out(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) {
      return absl::Status(results[i].status().code(),
                          absl::StrCat("dynamic table '", table.name(), "' on ps task ", tasks[i],
                                       ": ", results[i].status().message()));
    }
    out[i] = *std::move(results[i]);
  }
  return out;
}

absl::Status check_page_rows(int64_t page_rows) {
  if (page_rows < 1 || page_rows > DynamicTable::kMaxPageRows) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_rows ", page_rows, " is outside [1, ", DynamicTable::kMaxPageRows, "]"));
  }
  return absl::OkStatus();
}

std::atomic<int64_t> page_rows_setting{kDefaultTablePageRows};

}  // namespace

int64_t checkpoint_table_page_rows() { return page_rows_setting.load(std::memory_order_relaxed); }

void set_checkpoint_table_page_rows(int64_t rows) {
  page_rows_setting.store(std::clamp<int64_t>(rows, 1, DynamicTable::kMaxPageRows),
                          std::memory_order_relaxed);
}

absl::Status for_each_table_page(const DynamicEmbedding& table, int64_t page_rows,
                                 const std::function<absl::Status(TablePage)>& fn) {
  if (!table.valid()) return absl::InvalidArgumentError("export of an empty DynamicEmbedding");
  PSFLOW_RETURN_IF_ERROR(check_page_rows(page_rows));
  const DynamicEmbeddingOptions& o = table.options();
  const auto k = optimizer_slot_names(o.optimizer.kind).size();
  const int n = table.num_shards();
  // Per task: the next cursor, the next page's offset, and whether done.
  std::vector<int64_t> cursor(static_cast<size_t>(n), 0);
  std::vector<int64_t> offset(static_cast<size_t>(n), 0);
  std::vector<int64_t> total(static_cast<size_t>(n), -1);
  std::vector<bool> done(static_cast<size_t>(n), false);
  // Bounded: each round reads at least one row of every unfinished task
  // (the ps answers at least min(limit, rows left) rows), or finishes it.
  for (;;) {
    std::vector<int> tasks;
    std::vector<ExecuteBatch> batches;
    for (int t = 0; t < n; ++t) {
      if (done[static_cast<size_t>(t)]) continue;
      VariableOpArgs op;
      op.kind = Op::DE_EXPORT;
      op.variable = table.name();
      op.step = cursor[static_cast<size_t>(t)];
      op.optimizer_steps = page_rows;
      ExecuteBatch b;
      b.ops.push_back(std::move(op));
      batches.push_back(std::move(b));
      tasks.push_back(t);
    }
    if (tasks.empty()) return absl::OkStatus();
    PSFLOW_ASSIGN_OR_RETURN(std::vector<std::vector<Tensor>> results,
                            run_on(table, tasks, std::move(batches)));
    for (size_t i = 0; i < tasks.size(); ++i) {
      const int t = tasks[i];
      const auto ti = static_cast<size_t>(t);
      std::vector<Tensor>& r = results[i];
      auto bad = [&](absl::string_view what) {
        return absl::InternalError(absl::StrCat("ps task ", t, " answered DE_EXPORT of table '",
                                                table.name(), "' wrongly: ", what,
                                                "; client and ps disagree on the protocol"));
      };
      if (r.size() != 4 + k) return bad(absl::StrCat(r.size(), " results, not ", 4 + k));
      if (r[0].dtype() != DType::kInt64 || r[0].num_elements() != 5 ||
          r[0].flat<int64_t>()[2] != static_cast<int64_t>(k)) {
        return bad("the head is not int64 [5] with the optimizer's slot count");
      }
      const absl::Span<const int64_t> head = r[0].flat<int64_t>();
      TablePage page;
      page.task = t;
      page.offset = offset[ti];
      page.total = head[3];
      DynamicTable::Rows& rows = page.rows;
      rows.clock = head[0];
      rows.applies = head[1];
      rows.keys = std::move(r[1]);
      rows.last_seen = std::move(r[2]);
      rows.values = std::move(r[3]);
      for (size_t s = 0; s < k; ++s) rows.slots.push_back(std::move(r[4 + s]));
      if (absl::Status s = DynamicTable::validate_import(o, rows); !s.ok()) return bad(s.message());
      const int64_t got = rows.keys.num_elements();
      if (page.total < 0 || page.total > (int64_t{1} << 32) ||
          (total[ti] >= 0 && page.total != total[ti]) || got > page_rows ||
          page.offset + got > page.total || (head[4] == 0) != (page.offset + got == page.total) ||
          (head[4] != 0 && got == 0)) {
        return bad(absl::StrCat("page of ", got, " rows at row ", page.offset, " of ", page.total,
                                " with next cursor ", head[4]));
      }
      total[ti] = page.total;
      offset[ti] += got;
      cursor[ti] = head[4];
      done[ti] = head[4] == 0;
      PSFLOW_RETURN_IF_ERROR(fn(std::move(page)));
    }
  }
}

absl::StatusOr<std::vector<DynamicTable::Rows>> export_table_rows(const DynamicEmbedding& table,
                                                                  int64_t page_rows) {
  // Each task's rows go straight into tensors of its total, allocated at
  // its first page: the table once, plus one page.
  std::vector<DynamicTable::Rows> out(table.valid() ? static_cast<size_t>(table.num_shards()) : 0);
  PSFLOW_RETURN_IF_ERROR(for_each_table_page(table, page_rows, [&](TablePage page) {
    DynamicTable::Rows& to = out[static_cast<size_t>(page.task)];
    const DynamicTable::Rows& from = page.rows;
    const int64_t dim = table.options().dim;
    if (page.offset == 0) {
      to.keys = Tensor(DType::kInt64, {page.total});
      to.last_seen = Tensor(DType::kInt64, {page.total});
      to.values = Tensor(DType::kFloat32, {page.total, dim});
      to.slots.clear();
      for (size_t s = 0; s < from.slots.size(); ++s) {
        to.slots.emplace_back(DType::kFloat32, Shape{page.total, dim});
      }
    }
    to.clock = from.clock;
    to.applies = from.applies;
    const int64_t n = from.keys.num_elements();
    if (n == 0) return absl::OkStatus();
    const auto ints = static_cast<size_t>(n) * sizeof(int64_t);
    const auto floats = static_cast<size_t>(n * dim) * sizeof(float);
    std::memcpy(to.keys.mutable_flat<int64_t>().data() + page.offset,
                from.keys.flat<int64_t>().data(), ints);
    std::memcpy(to.last_seen.mutable_flat<int64_t>().data() + page.offset,
                from.last_seen.flat<int64_t>().data(), ints);
    std::memcpy(to.values.mutable_flat<float>().data() + page.offset * dim,
                from.values.flat<float>().data(), floats);
    for (size_t s = 0; s < from.slots.size(); ++s) {
      std::memcpy(to.slots[s].mutable_flat<float>().data() + page.offset * dim,
                  from.slots[s].flat<float>().data(), floats);
    }
    return absl::OkStatus();
  }));
  return out;
}

absl::Status import_table_pages(const DynamicEmbedding& table, const std::vector<int64_t>& totals,
                                int64_t page_rows, const TableRowSource& source) {
  if (!table.valid()) return absl::InvalidArgumentError("import into an empty DynamicEmbedding");
  PSFLOW_RETURN_IF_ERROR(check_page_rows(page_rows));
  const int n = table.num_shards();
  if (totals.size() != static_cast<size_t>(n)) {
    return absl::InvalidArgumentError(absl::StrCat(totals.size(), " shards of rows for table '",
                                                   table.name(), "' on ", n, " ps tasks"));
  }
  for (int64_t total : totals) {
    if (total < 0) return absl::InvalidArgumentError(absl::StrCat("a shard of ", total, " rows"));
  }
  const DynamicEmbeddingOptions& o = table.options();
  const std::string config = table_options_to_bytes(o);
  const std::vector<std::string_view> names = optimizer_slot_names(o.optimizer.kind);
  std::vector<int64_t> offset(static_cast<size_t>(n), 0);
  std::vector<bool> done(static_cast<size_t>(n), false);
  // Bounded: each round sends one page of every unfinished task.
  for (;;) {
    std::vector<int> tasks;
    std::vector<ExecuteBatch> batches;
    for (int t = 0; t < n; ++t) {
      const auto ti = static_cast<size_t>(t);
      if (done[ti]) continue;
      const int64_t rows_now = std::min(page_rows, totals[ti] - offset[ti]);
      PSFLOW_ASSIGN_OR_RETURN(DynamicTable::Rows r, source(t, offset[ti], rows_now));
      if (r.keys.num_elements() != rows_now) {
        return absl::InternalError(absl::StrCat("the source gave ", r.keys.num_elements(),
                                                " rows for ps task ", t, ", not ", rows_now));
      }
      VariableOpArgs op;
      op.kind = Op::DE_IMPORT;
      op.variable = table.name();
      op.table = config;
      op.ids = std::move(r.keys);
      op.value = std::move(r.values);
      for (size_t s = 0; s < names.size() && s < r.slots.size(); ++s) {
        op.slot_names.emplace_back(names[s]);
        op.slots.push_back(std::move(r.slots[s]));
      }
      op.slot_names.emplace_back("last_seen");
      op.slots.push_back(std::move(r.last_seen));
      // An empty shard is one whole-shard import; others go in pages.
      if (totals[ti] > 0) {
        op.slot_names.emplace_back("page");
        op.slots.push_back(Tensor::from_vector<int64_t>({offset[ti], totals[ti]}, {2}));
      }
      op.step = r.clock;
      op.optimizer_steps = r.applies;
      ExecuteBatch b;
      b.ops.push_back(std::move(op));
      batches.push_back(std::move(b));
      tasks.push_back(t);
      offset[ti] += rows_now;
      done[ti] = offset[ti] >= totals[ti];
    }
    if (tasks.empty()) return absl::OkStatus();
    PSFLOW_RETURN_IF_ERROR(run_on(table, tasks, std::move(batches)).status());
  }
}

absl::Status import_table_rows(const DynamicEmbedding& table,
                               const std::vector<DynamicTable::Rows>& rows, int64_t page_rows) {
  std::vector<int64_t> totals;
  for (const DynamicTable::Rows& r : rows) totals.push_back(r.keys.num_elements());
  return import_table_pages(table, totals, page_rows, [&](int task, int64_t offset, int64_t n) {
    return slice_table_rows(rows[static_cast<size_t>(task)], offset, n);
  });
}

}  // namespace psflow::internal

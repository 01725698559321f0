#include "strategy/dynamic_embedding_rows.h"

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

// A checkpoint moves whole shards: allow for large ones.
constexpr absl::Duration kTimeout = absl::Minutes(10);

absl::StatusOr<std::vector<std::vector<Tensor>>> run_all(const DynamicEmbedding& table,
                                                         std::vector<ExecuteBatch> batches) {
  const auto& clients = DynamicEmbeddingAccess::clients(table);
  std::vector<VariableClient*> raw;
  for (const auto& c : clients) raw.push_back(c.get());
  std::vector<absl::StatusOr<std::vector<Tensor>>> results =
      execute_batches_parallel(raw, std::move(batches), absl::Now() + kTimeout, nullptr);
  std::vector<std::vector<Tensor>> out(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) {
      return absl::Status(results[i].status().code(),
                          absl::StrCat("dynamic table '", table.name(), "' on ps task ", i, ": ",
                                       results[i].status().message()));
    }
    out[i] = *std::move(results[i]);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<DynamicTable::Rows>> export_table_rows(const DynamicEmbedding& table) {
  if (!table.valid()) return absl::InvalidArgumentError("export of an empty DynamicEmbedding");
  std::vector<ExecuteBatch> batches(static_cast<size_t>(table.num_shards()));
  for (ExecuteBatch& b : batches) {
    VariableOpArgs op;
    op.kind = Op::DE_EXPORT;
    op.variable = table.name();
    b.ops.push_back(std::move(op));
  }
  PSFLOW_ASSIGN_OR_RETURN(std::vector<std::vector<Tensor>> results,
                          run_all(table, std::move(batches)));
  const DynamicEmbeddingOptions& o = table.options();
  const auto k = optimizer_slot_names(o.optimizer.kind).size();
  std::vector<DynamicTable::Rows> out;
  for (size_t t = 0; t < results.size(); ++t) {
    std::vector<Tensor>& r = results[t];
    auto bad = [&](absl::string_view what) {
      return absl::InternalError(absl::StrCat("ps task ", t, " answered DE_EXPORT of table '",
                                              table.name(), "' wrongly: ", what,
                                              "; client and ps disagree on the protocol"));
    };
    if (r.size() != 4 + k) return bad(absl::StrCat(r.size(), " results, not ", 4 + k));
    if (r[0].dtype() != DType::kInt64 || r[0].num_elements() != 3 ||
        r[0].flat<int64_t>()[2] != static_cast<int64_t>(k)) {
      return bad("the head is not int64 [3] with the optimizer's slot count");
    }
    DynamicTable::Rows rows;
    rows.clock = r[0].flat<int64_t>()[0];
    rows.applies = r[0].flat<int64_t>()[1];
    rows.keys = std::move(r[1]);
    rows.last_seen = std::move(r[2]);
    rows.values = std::move(r[3]);
    for (size_t s = 0; s < k; ++s) rows.slots.push_back(std::move(r[4 + s]));
    if (absl::Status s = DynamicTable::validate_import(o, rows); !s.ok()) return bad(s.message());
    out.push_back(std::move(rows));
  }
  return out;
}

absl::Status import_table_rows(const DynamicEmbedding& table,
                               const std::vector<DynamicTable::Rows>& rows) {
  if (!table.valid()) return absl::InvalidArgumentError("import into an empty DynamicEmbedding");
  if (rows.size() != static_cast<size_t>(table.num_shards())) {
    return absl::InvalidArgumentError(absl::StrCat(rows.size(), " shards of rows for table '",
                                                   table.name(), "' on ", table.num_shards(),
                                                   " ps tasks"));
  }
  const DynamicEmbeddingOptions& o = table.options();
  const std::string config = table_options_to_bytes(o);
  const std::vector<std::string_view> names = optimizer_slot_names(o.optimizer.kind);
  std::vector<ExecuteBatch> batches(rows.size());
  for (size_t t = 0; t < rows.size(); ++t) {
    const DynamicTable::Rows& r = rows[t];
    VariableOpArgs op;
    op.kind = Op::DE_IMPORT;
    op.variable = table.name();
    op.table = config;
    op.ids = r.keys;
    op.value = r.values;
    for (size_t s = 0; s < names.size() && s < r.slots.size(); ++s) {
      op.slot_names.emplace_back(names[s]);
      op.slots.push_back(r.slots[s]);
    }
    op.slot_names.emplace_back("last_seen");
    op.slots.push_back(r.last_seen);
    op.step = r.clock;
    op.optimizer_steps = r.applies;
    batches[t].ops.push_back(std::move(op));
  }
  return run_all(table, std::move(batches)).status();
}

}  // namespace psflow::internal

#include "ps/server/execute.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/strings.h"
#include "optimizer/optimizer.h"
#include "optimizer/optimizer_kernels.h"
#include "ps/request/snapshot_results.h"
#include "psflow/status_macros.h"
#include "tensor/codec.h"

namespace psflow::internal {
namespace {

using Op = v1::VariableOp;

// One DE_EXPORT answer's bytes at most (the RPC layer refuses larger
// responses anyway; this bounds the copy).
constexpr int64_t kMaxExportBytes = int64_t{4} << 30;

// One op after validation, ready to run.
struct PreparedOp {
  VariableOpArgs* args = nullptr;
  std::shared_ptr<VariableShard> shard;  // null for CREATE* and DELETE
  const OptimizerConfig* optimizer = nullptr;
  // APPLY_SPARSE: the gradient, checked and summed by prepare().
  std::optional<PreparedSparseGradient> sparse;
  // DE_LOOKUP, DE_APPLY, DE_STATS: the table; DE_CREATE: its options.
  std::shared_ptr<DynamicTable> table;
  std::optional<DynamicEmbeddingOptions> table_options;
  // DE_IMPORT: the rows, checked by prepare(), and for a page its place.
  std::optional<DynamicTable::Rows> import;
  std::optional<ImportPagePosition> import_page;
};

bool is_table_op(Op::Kind kind) {
  return kind == Op::DE_CREATE || kind == Op::DE_LOOKUP || kind == Op::DE_APPLY ||
         kind == Op::DE_STATS || kind == Op::DE_EXPORT || kind == Op::DE_IMPORT;
}

// DE_EXPORT's answer (proto/psflow/v1/variable.proto).
void append_table_rows(DynamicTable::Rows rows, int64_t total, int64_t next_cursor,
                       std::vector<Tensor>* results) {
  const std::vector<int64_t> head = {rows.clock, rows.applies,
                                     static_cast<int64_t>(rows.slots.size()), total, next_cursor};
  results->push_back(Tensor::from_vector(head, {5}));
  results->push_back(std::move(rows.keys));
  results->push_back(std::move(rows.last_seen));
  results->push_back(std::move(rows.values));
  for (Tensor& slot : rows.slots) results->push_back(std::move(slot));
}

// The last-seen steps' entry among DE_IMPORT's slots, and a page's place.
constexpr std::string_view kLastSeenSlot = "last_seen";
constexpr std::string_view kPageSlot = "page";

// DE_IMPORT's "page" slot, when present (then its last): int64 [2]
// (offset, total).
absl::StatusOr<std::optional<ImportPagePosition>> import_page_of(const VariableOpArgs& op) {
  if (op.slot_names.empty() || op.slot_names.back() != kPageSlot ||
      op.slots.size() != op.slot_names.size()) {
    return std::nullopt;
  }
  const Tensor& t = op.slots.back();
  if (!t.valid() || t.dtype() != DType::kInt64 || t.num_elements() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("DE_IMPORT's 'page' must be int64 [2] (offset, total rows), not ",
                     t.valid() ? t.debug_string(0) : std::string("absent")));
  }
  return ImportPagePosition{t.flat<int64_t>()[0], t.flat<int64_t>()[1]};
}

// DE_IMPORT's fields as a shard's rows: the optimizer's slots by name, then
// "last_seen" (then "page", read by import_page_of).
absl::StatusOr<DynamicTable::Rows> import_rows_of(const VariableOpArgs& op,
                                                  const DynamicEmbeddingOptions& options,
                                                  bool paged) {
  const std::vector<std::string_view> names = optimizer_slot_names(options.optimizer.kind);
  const size_t extra = paged ? 1 : 0;
  if (op.slot_names.size() != op.slots.size() || op.slot_names.size() != names.size() + 1 + extra ||
      op.slot_names[names.size()] != kLastSeenSlot ||
      !std::equal(names.begin(), names.end(), op.slot_names.begin())) {
    std::string want;
    for (std::string_view n : names) absl::StrAppend(&want, "'", av(n), "', ");
    return absl::InvalidArgumentError(
        absl::StrCat("DE_IMPORT carries ", op.slots.size(), " tensors named [",
                     absl::StrJoin(op.slot_names, ", "), "]; a table with the ",
                     av(optimizer_name(options.optimizer.kind)), " optimizer needs ", want,
                     "'last_seen' in that order"));
  }
  DynamicTable::Rows rows;
  rows.keys = op.ids;
  rows.values = op.value;
  rows.slots.assign(op.slots.begin(), op.slots.begin() + static_cast<ptrdiff_t>(names.size()));
  rows.last_seen = op.slots[names.size()];
  rows.clock = op.step;
  rows.applies = op.optimizer_steps;
  PSFLOW_RETURN_IF_ERROR(DynamicTable::validate_import(options, rows));
  return rows;
}

// The checks of a dynamic table op (docs/embeddings.md): nothing changes.
absl::Status prepare_table_op(VariableStore& store, VariableOpArgs& op, PreparedOp* out) {
  if (op.kind == Op::DE_CREATE || op.kind == Op::DE_IMPORT) {
    PSFLOW_ASSIGN_OR_RETURN(DynamicEmbeddingOptions options, table_options_from_bytes(op.table));
    PSFLOW_RETURN_IF_ERROR(store.check_create_table(op.variable, options));
    out->table_options = options;
    if (op.kind == Op::DE_IMPORT) {
      PSFLOW_ASSIGN_OR_RETURN(out->import_page, import_page_of(op));
      PSFLOW_ASSIGN_OR_RETURN(out->import,
                              import_rows_of(op, options, out->import_page.has_value()));
      if (out->import_page.has_value()) {
        PSFLOW_RETURN_IF_ERROR(
            store.staged_imports()
                .check(op.variable, op.table, *out->import_page, out->import->keys.num_elements())
                .status());
      }
    }
    return absl::OkStatus();
  }
  PSFLOW_ASSIGN_OR_RETURN(out->table, store.find_table(op.variable));
  switch (op.kind) {
    case Op::DE_EXPORT:
      // step = the cursor, optimizer_steps = the page's row limit (0: the
      // whole shard in one answer).
      if (op.optimizer_steps == 0 && op.step == 0) return absl::OkStatus();
      return DynamicTable::validate_export_page(op.step, op.optimizer_steps);
    case Op::DE_LOOKUP: return out->table->validate_lookup(op.ids);
    case Op::DE_APPLY:
      return out->table->validate_apply(*out->optimizer, op.learning_rate, op.ids, op.value);
    default: return absl::OkStatus();
  }
}

std::optional<ScatterOp> scatter_op(Op::Kind kind) {
  switch (kind) {
    case Op::SCATTER_UPDATE: return ScatterOp::kUpdate;
    case Op::SCATTER_ADD: return ScatterOp::kAdd;
    case Op::SCATTER_SUB: return ScatterOp::kSub;
    case Op::SCATTER_MUL: return ScatterOp::kMul;
    case Op::SCATTER_DIV: return ScatterOp::kDiv;
    case Op::SCATTER_MIN: return ScatterOp::kMin;
    case Op::SCATTER_MAX: return ScatterOp::kMax;
    default: return std::nullopt;
  }
}

// How errors say what the value of an arithmetic update holds; null for ops
// whose value is stored outright (NonFinitePolicy leaves those alone).
const char* update_value_holds(Op::Kind kind) {
  switch (kind) {
    case Op::ASSIGN_ADD:
    case Op::ASSIGN_SUB: return "the delta holds ";
    case Op::APPLY_DENSE:
    case Op::APPLY_SPARSE:
    case Op::DE_APPLY: return "the gradient holds ";
    case Op::SCATTER_ADD:
    case Op::SCATTER_SUB:
    case Op::SCATTER_MUL:
    case Op::SCATTER_DIV:
    case Op::SCATTER_MIN:
    case Op::SCATTER_MAX: return "the updates hold ";
    default: return nullptr;
  }
}

// NonFinitePolicy::kReject for one op, after prepare() checked its dtype.
absl::Status check_finite_update(const VariableOpArgs& op) {
  const char* holds = update_value_holds(op.kind);
  if (holds == nullptr || !op.value.valid()) return absl::OkStatus();
  const int64_t n = op.value.num_elements();
  int64_t at = -1;
  double bad = 0;
  if (op.value.dtype() == DType::kFloat32) {
    at = internal::first_non_finite(op.value.flat<float>().data(), n);
    if (at >= 0) bad = op.value.flat<float>()[static_cast<size_t>(at)];
  } else if (op.value.dtype() == DType::kFloat64) {
    at = internal::first_non_finite(op.value.flat<double>().data(), n);
    if (at >= 0) bad = op.value.flat<double>()[static_cast<size_t>(at)];
  }
  if (at < 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      holds, bad, " at element ", at, " of ", n,
      "; this ps rejects non-finite updates (NonFinitePolicy::kReject), so nothing in the "
      "request was applied: find the step that produced it, or start the ps with "
      "--non-finite-updates=allow to apply such updates as TensorFlow does"));
}

absl::Status prepare(VariableStore& store, VariableOpArgs& op,
                     const std::vector<OptimizerConfig>& optimizers, PreparedOp* out) {
  out->args = &op;
  if (!Op::Kind_IsValid(op.kind)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown variable op kind ", static_cast<int>(op.kind),
                     "; this ps knows kinds 0 to ", static_cast<int>(Op::Kind_MAX)));
  }
  if (op_needs_value(op.kind) && !op.value.valid()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Op::Kind_Name(op.kind), " needs a value tensor; set the op's value"));
  }
  if (op_needs_ids(op.kind) && !op.ids.valid()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Op::Kind_Name(op.kind), " needs row ids; set the op's ids"));
  }
  if (op.kind == Op::APPLY_DENSE || op.kind == Op::APPLY_SPARSE || op.kind == Op::DE_APPLY) {
    if (op.optimizer < 0 || op.optimizer >= static_cast<int>(optimizers.size())) {
      return absl::InvalidArgumentError(absl::StrCat("optimizer index ", op.optimizer,
                                                     " is out of range; the request carries ",
                                                     optimizers.size(), " optimizers"));
    }
    out->optimizer = &optimizers[static_cast<size_t>(op.optimizer)];
  }
  if (is_table_op(op.kind)) return prepare_table_op(store, op, out);
  if (op.kind == Op::CREATE || op.kind == Op::CREATE_IF_ABSENT) {
    if (op.variable.empty()) {
      return absl::InvalidArgumentError("CREATE needs a variable name");
    }
    // CREATE_IF_ABSENT of a variable stored with another dtype or shape
    // fails: found here, before any op of the batch runs.
    if (op.kind == Op::CREATE_IF_ABSENT) {
      absl::StatusOr<std::shared_ptr<VariableShard>> existing = store.find(op.variable);
      if (existing.ok()) {
        return VariableStore::keep_conflict(**existing, op.value.dtype(), op.value.shape());
      }
    }
    return absl::OkStatus();
  }
  if (op.kind == Op::DELETE) return absl::OkStatus();
  if (op.kind == Op::RESTORE) {
    // The variable may be absent (RESTORE creates it).
    absl::StatusOr<std::shared_ptr<VariableShard>> existing = store.find(op.variable);
    if (existing.ok()) out->shard = *std::move(existing);
    PSFLOW_ASSIGN_OR_RETURN(VariableShard::Snapshot state, restore_state(op));
    return VariableStore::validate_restore(op.variable, state, out->shard.get());
  }
  PSFLOW_ASSIGN_OR_RETURN(out->shard, store.find(op.variable));
  const VariableShard& shard = *out->shard;
  switch (op.kind) {
    case Op::READ:
    case Op::SNAPSHOT: return absl::OkStatus();
    case Op::GATHER: return shard.validate_gather(op.ids).status();
    case Op::ASSIGN: return shard.validate_assign(op.value);
    case Op::ASSIGN_ADD:
    case Op::ASSIGN_SUB: return shard.validate_arith(op.value);
    case Op::APPLY_DENSE:
      return shard.validate_apply_dense(*out->optimizer, op.learning_rate, op.value);
    case Op::APPLY_SPARSE: {
      PSFLOW_ASSIGN_OR_RETURN(
          out->sparse,
          shard.prepare_apply_sparse(*out->optimizer, op.learning_rate, op.ids, op.value));
      return absl::OkStatus();
    }
    default: return shard.validate_scatter(*scatter_op(op.kind), op.ids, op.value).status();
  }
}

absl::Status run(VariableStore& store, PreparedOp& prepared, bool replay,
                 std::vector<Tensor>* results) {
  VariableOpArgs& op = *prepared.args;
  VariableShard* shard = prepared.shard.get();
  switch (op.kind) {
    case Op::DE_CREATE: return store.create_table(op.variable, *prepared.table_options).status();
    case Op::DE_IMPORT: {
      std::vector<DynamicTable::Rows> pages;
      if (prepared.import_page.has_value()) {
        StagedTableImports& staged = store.staged_imports();
        PSFLOW_ASSIGN_OR_RETURN(std::optional<std::vector<DynamicTable::Rows>> complete,
                                staged.stage(op.variable, op.table, *prepared.import_page,
                                             *std::move(prepared.import)));
        if (!complete.has_value()) return absl::OkStatus();
        pages = *std::move(complete);
        if (absl::Status s = DynamicTable::validate_import_pages(*prepared.table_options, pages);
            !s.ok()) {
          staged.forget(op.variable);
          return s;
        }
      } else {
        pages.push_back(*std::move(prepared.import));
      }
      PSFLOW_RETURN_IF_ERROR(store.create_table(op.variable, *prepared.table_options).status());
      PSFLOW_ASSIGN_OR_RETURN(std::shared_ptr<DynamicTable> table, store.find_table(op.variable));
      table->import_pages(pages);
      return absl::OkStatus();
    }
    case Op::DE_EXPORT: {
      if (op.optimizer_steps == 0) {
        PSFLOW_ASSIGN_OR_RETURN(DynamicTable::Rows rows,
                                prepared.table->export_rows(kMaxExportBytes));
        const int64_t n = rows.keys.num_elements();
        append_table_rows(std::move(rows), n, 0, results);
        return absl::OkStatus();
      }
      PSFLOW_ASSIGN_OR_RETURN(
          DynamicTable::ExportPage page,
          prepared.table->export_page(op.step, op.optimizer_steps, kMaxExportBytes));
      append_table_rows(std::move(page.rows), page.total, page.next_cursor, results);
      return absl::OkStatus();
    }
    case Op::DE_LOOKUP:
      results->push_back(prepared.table->lookup(op.ids, op.step, replay));
      return absl::OkStatus();
    case Op::DE_APPLY:
      prepared.table->apply(*prepared.optimizer, op.learning_rate, op.ids, op.value, op.step);
      return absl::OkStatus();
    case Op::DE_STATS: {
      const std::vector<int64_t> stats = prepared.table->stats().to_vector();
      results->push_back(Tensor::from_vector(stats, {static_cast<int64_t>(stats.size())}));
      return absl::OkStatus();
    }
    case Op::READ: results->push_back(shard->read_shared()); return absl::OkStatus();
    case Op::GATHER: {
      PSFLOW_ASSIGN_OR_RETURN(Tensor rows, shard->gather(op.ids));
      results->push_back(std::move(rows));
      return absl::OkStatus();
    }
    case Op::ASSIGN: return shard->assign(std::move(op.value));
    case Op::ASSIGN_ADD: return shard->assign_add(op.value);
    case Op::ASSIGN_SUB: return shard->assign_sub(op.value);
    case Op::APPLY_DENSE:
      return shard->apply_dense_gradient(*prepared.optimizer, op.learning_rate, op.value);
    case Op::APPLY_SPARSE: return shard->apply_sparse_gradient(*prepared.sparse);
    case Op::CREATE:
    case Op::CREATE_IF_ABSENT:
      return store
          .create(op.variable, std::move(op.value),
                  op.kind == Op::CREATE ? VariableStore::IfExists::kReplace
                                        : VariableStore::IfExists::kKeep)
          .status();
    case Op::DELETE: store.erase(op.variable); return absl::OkStatus();
    case Op::SNAPSHOT: append_snapshot_results(shard->snapshot(), results); return absl::OkStatus();
    case Op::RESTORE: {
      PSFLOW_ASSIGN_OR_RETURN(VariableShard::Snapshot state, restore_state(op));
      // Only `state` holds the decoded tensors now, so the shard adopts them.
      op.value = Tensor();
      op.slots.clear();
      return store.restore(op.variable, std::move(state)).status();
    }
    default: return shard->scatter(*scatter_op(op.kind), op.ids, op.value);
  }
}

}  // namespace

absl::Status execute_variable_ops(VariableStore& store, ExecuteBatch& batch,
                                  std::vector<Tensor>* results,
                                  std::vector<WireDType>* result_wire) {
  for (size_t i = 0; i < batch.optimizers.size(); ++i) {
    absl::Status s = validate_optimizer(batch.optimizers[i]);
    if (!s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("optimizer ", i, ": ", s.message()));
    }
  }
  std::vector<PreparedOp> prepared(batch.ops.size());
  // What earlier ops of this batch will do to a variable, which validation
  // against the stored state cannot see: a second creation or restore of it
  // (whose checks would pass against the state before the first) and
  // updates by two optimizers (the first would create the slots the second
  // then conflicts with). Refused here, so that nothing runs.
  absl::flat_hash_set<std::string_view> created;
  absl::flat_hash_map<std::string_view, OptimizerConfig::Kind> applied_by;
  absl::flat_hash_set<std::string_view> deleted;
  absl::flat_hash_set<std::string_view> tables_created;
  for (size_t i = 0; i < batch.ops.size(); ++i) {
    VariableOpArgs& op = batch.ops[i];
    PSFLOW_RETURN_IF_ERROR(with_op_context(prepare(store, op, batch.optimizers, &prepared[i]), i,
                                           op.kind, op.variable));
    absl::Status in_batch;
    if (op.kind == Op::DE_CREATE || op.kind == Op::DE_IMPORT) {
      if (!tables_created.insert(op.variable).second) {
        in_batch = absl::InvalidArgumentError(
            "the batch creates or restores this dynamic table twice; send one DE_CREATE or "
            "DE_IMPORT per table and batch");
      }
    } else if (is_table_op(op.kind)) {
      // Tables check their own optimizer kind.
    } else if (op.kind == Op::CREATE || op.kind == Op::CREATE_IF_ABSENT || op.kind == Op::RESTORE) {
      if (!created.insert(op.variable).second) {
        in_batch = absl::InvalidArgumentError(
            "the batch creates or restores this variable twice; send one CREATE or RESTORE "
            "per variable and batch");
      }
    } else if (op.kind == Op::DELETE) {
      // As TF's DestroyResourceOp: deleting what is not there is NOT_FOUND,
      // not silently nothing (a typo would otherwise go unnoticed).
      if (!deleted.insert(op.variable).second ||
          (!created.contains(op.variable) && !store.find(op.variable).ok())) {
        in_batch = absl::NotFoundError(
            "no such variable on this ps (never created, already deleted, or deleted earlier in "
            "this batch); list the ps's variables (ListVariables) for the names it holds");
      }
    } else if (prepared[i].optimizer != nullptr) {
      const auto [it, first] = applied_by.try_emplace(op.variable, prepared[i].optimizer->kind);
      if (!first && it->second != prepared[i].optimizer->kind) {
        in_batch = absl::FailedPreconditionError(absl::StrCat(
            "the batch updates this variable with two optimizers (", av(optimizer_name(it->second)),
            " and ", av(optimizer_name(prepared[i].optimizer->kind)),
            "); use one optimizer per variable"));
      }
    }
    PSFLOW_RETURN_IF_ERROR(with_op_context(in_batch, i, op.kind, op.variable));
    if (store.non_finite_updates() == NonFinitePolicy::kReject) {
      PSFLOW_RETURN_IF_ERROR(with_op_context(check_finite_update(op), i, op.kind, op.variable));
    }
  }
  // Claimed only once everything validated, so a rejected request never
  // uses up its key; a duplicate skips its updates but answers its reads.
  bool skip_updates = false;
  if (batch.update_key.has_value() &&
      std::any_of(batch.ops.begin(), batch.ops.end(),
                  [](const VariableOpArgs& op) { return is_mutating(op.kind); })) {
    skip_updates = !store.claim_update(*batch.update_key);
  }
  for (size_t i = 0; i < prepared.size(); ++i) {
    const VariableOpArgs& op = batch.ops[i];
    // A duplicate's lookups still answer, as reads that change nothing.
    if (skip_updates && is_mutating(op.kind) && op.kind != Op::DE_LOOKUP) continue;
    const size_t before = results->size();
    PSFLOW_RETURN_IF_ERROR(
        with_op_context(run(store, prepared[i], skip_updates, results), i, op.kind, op.variable));
    if (result_wire != nullptr) {
      const bool reads = op.kind == Op::READ || op.kind == Op::GATHER || op.kind == Op::DE_LOOKUP;
      result_wire->resize(results->size(), reads ? op.wire_dtype : WireDType::kFloat32);
      (void)before;
    }
  }
  return absl::OkStatus();
}

}  // namespace psflow::internal

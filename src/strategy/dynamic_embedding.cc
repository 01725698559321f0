#include "psflow/dynamic_embedding.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "embedding/dynamic_table.h"
#include "embedding/key_hash.h"
#include "ps/request/execute_batch.h"
#include "psflow/status_macros.h"
#include "psflow/strategy.h"
#include "strategy/client_lookup.h"
#include "strategy/dynamic_embedding_internal.h"

namespace psflow {

using internal::DynamicEmbeddingAccess;
using internal::DynamicTableStats;
using internal::ExecuteBatch;
using internal::UpdateKeys;
using internal::VariableClient;
using internal::VariableOpArgs;
using Op = v1::VariableOp;

namespace {

constexpr char kMarker[] = "psflow_dynamic_embedding";
// How long one lookup or update may take on the ps tasks, retries included.
constexpr absl::Duration kTimeout = absl::Minutes(2);

}  // namespace

// Thread-safety: immutable.
struct DynamicEmbedding::State {
  std::string name;
  DynamicEmbeddingOptions options;
  std::vector<std::shared_ptr<VariableClient>> clients;  // index = ps task
  std::shared_ptr<UpdateKeys> update_keys;               // null: unbound
};

namespace {

// The positions of `keys` per ps task, in key order.
std::vector<std::vector<int64_t>> split_by_task(absl::Span<const int64_t> keys, int num_tasks) {
  std::vector<std::vector<int64_t>> at(static_cast<size_t>(num_tasks));
  for (size_t i = 0; i < keys.size(); ++i) {
    at[static_cast<size_t>(internal::dynamic_key_task(keys[i], num_tasks))].push_back(
        static_cast<int64_t>(i));
  }
  return at;
}

absl::Status check_keys(const Tensor& keys) {
  if (!keys.valid() || keys.dtype() != DType::kInt64 || keys.rank() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("dynamic embedding keys must be a 1-D int64 tensor, not ",
                     keys.valid() ? keys.debug_string(0) : std::string("an empty Tensor")));
  }
  return absl::OkStatus();
}

// Runs batches[i] on clients[i] (skipping empty ones) with the bound keys;
// the first error, naming its task.
absl::StatusOr<std::vector<std::vector<Tensor>>> run(
    const std::vector<std::shared_ptr<VariableClient>>& clients, std::vector<ExecuteBatch> batches,
    UpdateKeys* keys) {
  std::vector<VariableClient*> raw;
  for (size_t i = 0; i < clients.size(); ++i) {
    raw.push_back(batches[i].ops.empty() ? nullptr : clients[i].get());
  }
  std::vector<absl::StatusOr<std::vector<Tensor>>> results =
      internal::execute_batches_parallel(raw, std::move(batches), absl::Now() + kTimeout, keys);
  std::vector<std::vector<Tensor>> out(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].ok()) return results[i].status();
    out[i] = *std::move(results[i]);
  }
  return out;
}

VariableOpArgs table_op(Op::Kind kind, const std::string& name) {
  VariableOpArgs op;
  op.kind = kind;
  op.variable = name;
  return op;
}

DynamicEmbeddingStats to_public(const DynamicTableStats& s) {
  return DynamicEmbeddingStats{s.rows,
                               s.clock,
                               s.created,
                               s.evicted_ttl,
                               s.evicted_capacity,
                               s.not_admitted,
                               s.dropped_gradients,
                               s.applies,
                               s.bytes,
                               s.sketch_bytes};
}

}  // namespace

absl::StatusOr<DynamicEmbedding> DynamicEmbedding::get_variable(
    const ParameterServerStrategy& strategy, std::string name,
    const DynamicEmbeddingOptions& options) {
  std::vector<std::shared_ptr<VariableClient>> clients;
  const VariableClientLookup lookup = strategy.client_lookup();
  for (int task = 0; task < strategy.num_ps(); ++task) {
    PSFLOW_ASSIGN_OR_RETURN(std::shared_ptr<VariableClient> client,
                            internal::find_client(lookup, "ps", task));
    clients.push_back(std::move(client));
  }
  PSFLOW_ASSIGN_OR_RETURN(DynamicEmbedding table,
                          DynamicEmbeddingAccess::create(name, options, std::move(clients)));
  absl::MutexLock lock(&strategy.tables_mu_);
  strategy.tables_.insert_or_assign(std::move(name), table);
  return table;
}

std::map<std::string, DynamicEmbedding> ParameterServerStrategy::dynamic_embeddings() const {
  absl::MutexLock lock(&tables_mu_);
  return tables_;
}

Structure DynamicEmbedding::handle() const {
  if (state_ == nullptr) return Structure();
  return Structure::dict(
      {{kMarker, 1},
       {"name", state_->name},
       {"num_ps", static_cast<int64_t>(state_->clients.size())},
       {"options", absl::BytesToHexString(internal::table_options_to_bytes(state_->options))}});
}

absl::StatusOr<DynamicEmbedding> DynamicEmbedding::from_handle(
    const Structure& handle, const VariableClientLookup& clients) {
  auto field = [&](std::string_view key, Structure::Kind kind) -> const Structure* {
    if (!handle.is_dict()) return nullptr;
    auto it = handle.fields().find(key);
    if (it == handle.fields().end() || it->second.kind() != kind) return nullptr;
    return &it->second;
  };
  const Structure* marker = field(kMarker, Structure::Kind::kInt);
  const Structure* name = field("name", Structure::Kind::kString);
  const Structure* num_ps = field("num_ps", Structure::Kind::kInt);
  const Structure* options = field("options", Structure::Kind::kString);
  if (marker == nullptr || name == nullptr || num_ps == nullptr || options == nullptr ||
      num_ps->int_value() < 1 || num_ps->int_value() > 1 << 16) {
    return absl::InvalidArgumentError(
        "not a dynamic embedding handle (DynamicEmbedding::handle() makes one: a dict with "
        "psflow_dynamic_embedding, name, num_ps >= 1 and options)");
  }
  const std::string& hex = options->string_value();
  if (hex.size() % 2 != 0 ||
      !std::all_of(hex.begin(), hex.end(), [](char c) { return std::isxdigit(c) != 0; })) {
    return absl::InvalidArgumentError("the dynamic embedding handle's options are not hex");
  }
  const std::string bytes = absl::HexStringToBytes(hex);
  PSFLOW_ASSIGN_OR_RETURN(DynamicEmbeddingOptions parsed,
                          internal::table_options_from_bytes(bytes));
  PSFLOW_RETURN_IF_ERROR(internal::DynamicTable::validate_options(parsed));
  std::vector<std::shared_ptr<VariableClient>> ps;
  for (int64_t task = 0; task < num_ps->int_value(); ++task) {
    PSFLOW_ASSIGN_OR_RETURN(std::shared_ptr<VariableClient> client,
                            internal::find_client(clients, "ps", static_cast<int>(task)));
    ps.push_back(std::move(client));
  }
  return DynamicEmbeddingAccess::attach(name->string_value(), parsed, std::move(ps));
}

const std::string& DynamicEmbedding::name() const {
  static const std::string* const kEmpty = new std::string();
  return state_ == nullptr ? *kEmpty : state_->name;
}

const DynamicEmbeddingOptions& DynamicEmbedding::options() const {
  static const DynamicEmbeddingOptions* const kNone = new DynamicEmbeddingOptions();
  return state_ == nullptr ? *kNone : state_->options;
}

int DynamicEmbedding::num_shards() const {
  return state_ == nullptr ? 0 : static_cast<int>(state_->clients.size());
}

absl::StatusOr<Tensor> DynamicEmbedding::lookup(const Tensor& keys, int64_t step) const {
  if (state_ == nullptr)
    return absl::FailedPreconditionError("lookup on an empty DynamicEmbedding");
  PSFLOW_RETURN_IF_ERROR(check_keys(keys));
  const int num_tasks = num_shards();
  const absl::Span<const int64_t> k = keys.flat<int64_t>();
  const std::vector<std::vector<int64_t>> at = split_by_task(k, num_tasks);
  std::vector<ExecuteBatch> batches(static_cast<size_t>(num_tasks));
  for (size_t t = 0; t < at.size(); ++t) {
    if (at[t].empty()) continue;
    VariableOpArgs op = table_op(Op::DE_LOOKUP, state_->name);
    std::vector<int64_t> part(at[t].size());
    for (size_t i = 0; i < part.size(); ++i) part[i] = k[static_cast<size_t>(at[t][i])];
    op.ids = Tensor::from_vector(part, {static_cast<int64_t>(part.size())});
    op.step = step;
    batches[t].ops.push_back(std::move(op));
  }
  PSFLOW_ASSIGN_OR_RETURN(std::vector<std::vector<Tensor>> results,
                          run(state_->clients, std::move(batches), state_->update_keys.get()));
  const int64_t dim = state_->options.dim;
  Tensor out(DType::kFloat32, {static_cast<int64_t>(k.size()), dim});
  float* dst = out.mutable_flat<float>().data();
  for (size_t t = 0; t < at.size(); ++t) {
    if (at[t].empty()) continue;
    if (results[t].size() != 1 || results[t][0].dtype() != DType::kFloat32 ||
        results[t][0].num_elements() != static_cast<int64_t>(at[t].size()) * dim) {
      return absl::InternalError(absl::StrCat("ps task ", t, " answered a lookup of ", at[t].size(),
                                              " keys with the wrong rows"));
    }
    const float* src = results[t][0].flat<float>().data();
    for (size_t i = 0; i < at[t].size(); ++i) {
      std::memcpy(dst + at[t][i] * dim, src + static_cast<int64_t>(i) * dim,
                  static_cast<size_t>(dim) * sizeof(float));
    }
  }
  return out;
}

absl::Status DynamicEmbedding::apply_gradients(const Tensor& keys, const Tensor& grads,
                                               double learning_rate, int64_t step) const {
  if (state_ == nullptr) {
    return absl::FailedPreconditionError("apply_gradients on an empty DynamicEmbedding");
  }
  PSFLOW_RETURN_IF_ERROR(check_keys(keys));
  const int64_t dim = state_->options.dim;
  if (!grads.valid() || grads.dtype() != DType::kFloat32 || grads.rank() != 2 ||
      grads.dim(0) != keys.num_elements() || grads.dim(1) != dim) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gradients of dynamic table '", state_->name, "' must be float32 [", keys.num_elements(),
        ", ", dim, "], not ", grads.valid() ? grads.debug_string(0) : std::string("empty")));
  }
  const int num_tasks = num_shards();
  const absl::Span<const int64_t> k = keys.flat<int64_t>();
  const float* g = grads.flat<float>().data();
  const std::vector<std::vector<int64_t>> at = split_by_task(k, num_tasks);
  std::vector<ExecuteBatch> batches(static_cast<size_t>(num_tasks));
  for (size_t t = 0; t < at.size(); ++t) {
    if (at[t].empty()) continue;
    const auto n = static_cast<int64_t>(at[t].size());
    VariableOpArgs op = table_op(Op::DE_APPLY, state_->name);
    std::vector<int64_t> part(at[t].size());
    Tensor rows(DType::kFloat32, {n, dim});
    float* r = rows.mutable_flat<float>().data();
    for (size_t i = 0; i < part.size(); ++i) {
      part[i] = k[static_cast<size_t>(at[t][i])];
      std::memcpy(r + static_cast<int64_t>(i) * dim, g + at[t][i] * dim,
                  static_cast<size_t>(dim) * sizeof(float));
    }
    op.ids = Tensor::from_vector(part, {n});
    op.value = std::move(rows);
    op.optimizer = 0;
    op.learning_rate = learning_rate;
    op.step = step;
    batches[t].ops.push_back(std::move(op));
    batches[t].optimizers.push_back(state_->options.optimizer);
  }
  return run(state_->clients, std::move(batches), state_->update_keys.get()).status();
}

absl::StatusOr<std::vector<DynamicEmbeddingStats>> DynamicEmbedding::stats_per_shard() const {
  if (state_ == nullptr) return absl::FailedPreconditionError("stats of an empty DynamicEmbedding");
  std::vector<ExecuteBatch> batches(state_->clients.size());
  for (ExecuteBatch& b : batches) b.ops.push_back(table_op(Op::DE_STATS, state_->name));
  PSFLOW_ASSIGN_OR_RETURN(std::vector<std::vector<Tensor>> results,
                          run(state_->clients, std::move(batches), nullptr));
  std::vector<DynamicEmbeddingStats> out;
  for (size_t t = 0; t < results.size(); ++t) {
    if (results[t].size() != 1 || results[t][0].dtype() != DType::kInt64 ||
        results[t][0].num_elements() != DynamicTableStats::kFields) {
      return absl::InternalError(absl::StrCat("ps task ", t, " answered DE_STATS wrongly"));
    }
    const absl::Span<const int64_t> v = results[t][0].flat<int64_t>();
    out.push_back(
        to_public(DynamicTableStats::from_vector(std::vector<int64_t>(v.begin(), v.end()))));
  }
  return out;
}

absl::StatusOr<DynamicEmbeddingStats> DynamicEmbedding::stats() const {
  PSFLOW_ASSIGN_OR_RETURN(std::vector<DynamicEmbeddingStats> shards, stats_per_shard());
  DynamicEmbeddingStats sum;
  for (const DynamicEmbeddingStats& s : shards) {
    sum.rows += s.rows;
    sum.clock = std::max(sum.clock, s.clock);
    sum.created += s.created;
    sum.evicted_ttl += s.evicted_ttl;
    sum.evicted_capacity += s.evicted_capacity;
    sum.not_admitted += s.not_admitted;
    sum.dropped_gradients += s.dropped_gradients;
    sum.applies += s.applies;
    sum.bytes += s.bytes;
    sum.sketch_bytes += s.sketch_bytes;
  }
  return sum;
}

absl::StatusOr<Tensor> embedding_lookup(const DynamicEmbedding& table, const Tensor& keys,
                                        int64_t step) {
  return table.lookup(keys, step);
}

namespace internal {

DynamicEmbedding DynamicEmbeddingAccess::attach(
    std::string name, const DynamicEmbeddingOptions& options,
    std::vector<std::shared_ptr<VariableClient>> ps_clients) {
  auto state = std::make_shared<DynamicEmbedding::State>();
  state->name = std::move(name);
  state->options = options;
  state->clients = std::move(ps_clients);
  return DynamicEmbedding(std::move(state));
}

absl::StatusOr<DynamicEmbedding> DynamicEmbeddingAccess::create(
    std::string name, const DynamicEmbeddingOptions& options,
    std::vector<std::shared_ptr<VariableClient>> ps_clients) {
  PSFLOW_RETURN_IF_ERROR(DynamicTable::validate_options(options));
  if (ps_clients.empty()) {
    return absl::FailedPreconditionError(
        "a dynamic embedding table needs parameter servers; the strategy has none");
  }
  std::vector<ExecuteBatch> batches(ps_clients.size());
  const std::string bytes = table_options_to_bytes(options);
  for (ExecuteBatch& b : batches) {
    VariableOpArgs op = table_op(Op::DE_CREATE, name);
    op.table = bytes;
    b.ops.push_back(std::move(op));
  }
  PSFLOW_RETURN_IF_ERROR(run(ps_clients, std::move(batches), nullptr).status());
  return attach(std::move(name), options, std::move(ps_clients));
}

const std::vector<std::shared_ptr<VariableClient>>& DynamicEmbeddingAccess::clients(
    const DynamicEmbedding& table) {
  static const auto* const kNone = new std::vector<std::shared_ptr<VariableClient>>();
  return table.state_ == nullptr ? *kNone : table.state_->clients;
}

DynamicEmbedding DynamicEmbeddingAccess::bind(const DynamicEmbedding& table,
                                              std::shared_ptr<UpdateKeys> keys) {
  if (table.state_ == nullptr) return table;
  auto state = std::make_shared<DynamicEmbedding::State>(*table.state_);
  state->update_keys = std::move(keys);
  return DynamicEmbedding(std::move(state));
}

}  // namespace internal
}  // namespace psflow

// DynamicEmbedding: an embedding table of int64 keys held by the ps tasks,
// whose rows are created on first lookup (TensorFlow Recommenders-Addons'
// tfra.dynamic_embedding.get_variable and embedding_lookup). Semantics,
// admission and expiry rules, hashing and memory: docs/embeddings.md.
//
//   // chief, once:
//   DynamicEmbeddingOptions o;
//   o.dim = 16;
//   o.optimizer.kind = OptimizerConfig::Kind::kAdagrad;
//   PSFLOW_ASSIGN_OR_RETURN(DynamicEmbedding table,
//                           DynamicEmbedding::get_variable(strategy, "user_ids", o));
//   coordinator.schedule("my_step", {table.handle(), ...});
//   // in the scheduled function, on a worker:
//   PSFLOW_ASSIGN_OR_RETURN(DynamicEmbedding t,
//                           DynamicEmbedding::from_handle(args[0], *ctx.variable_clients()));
//   t = ctx.bind(t);  // lookups and updates carry the closure's update keys
//   PSFLOW_ASSIGN_OR_RETURN(Tensor rows, embedding_lookup(t, ids, step));
//   ...
//   PSFLOW_RETURN_IF_ERROR(t.apply_gradients(ids, grads, learning_rate, step));
#ifndef PSFLOW_DYNAMIC_EMBEDDING_H_
#define PSFLOW_DYNAMIC_EMBEDDING_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/dynamic_embedding_options.h"
#include "psflow/structure.h"
#include "psflow/tensor.h"
#include "psflow/variable_handle.h"

namespace psflow {

class ParameterServerStrategy;
namespace internal {
struct DynamicEmbeddingAccess;  // the runtime's constructor and binding
}  // namespace internal

// Counters of a table (summed over its ps tasks by stats()). All exact.
// Thread-safety: a value type.
struct DynamicEmbeddingStats {
  int64_t rows = 0;               // live rows
  int64_t clock = 0;              // the largest step seen (the largest of the tasks')
  int64_t created = 0;            // rows ever created
  int64_t evicted_ttl = 0;        // rows evicted for not being touched for ttl_steps
  int64_t evicted_capacity = 0;   // rows evicted, least recently used, beyond capacity
  int64_t not_admitted = 0;       // looked-up keys answered with zeros (no row)
  int64_t dropped_gradients = 0;  // gradient rows of keys without a row
  int64_t applies = 0;            // apply_gradients calls applied (per task, summed)
  int64_t bytes = 0;              // memory of rows, index and admission sketch
  int64_t sketch_bytes = 0;       // of which the sketch
};

// A handle on one dynamic table: cheap to copy (copies share the clients).
// Thread-safety: thread-safe; calls from many threads may be in flight.
// Handles bound to a closure (WorkerContext::bind) hand out that closure's
// update keys in call order, so bind one per thread for exactly-once.
class DynamicEmbedding {
 public:
  DynamicEmbedding() = default;

  // Defines the table `name` on every ps task of `strategy` (TFRA's
  // get_variable). Run on the chief: workers may not create tables.
  // Calling it again with the same options reaches the same rows; other
  // options for an existing name are ALREADY_EXISTS. Options are checked
  // first: INVALID_ARGUMENT names the bad one.
  [[nodiscard]] static absl::StatusOr<DynamicEmbedding> get_variable(
      const ParameterServerStrategy& strategy, std::string name,
      const DynamicEmbeddingOptions& options);

  // The table as a Structure, for the arguments of a scheduled function.
  [[nodiscard]] Structure handle() const;
  // The table `handle` describes, reached through `clients`
  // (WorkerContext::variable_clients()); INVALID_ARGUMENT for a malformed
  // handle. Unbound: see WorkerContext::bind.
  [[nodiscard]] static absl::StatusOr<DynamicEmbedding> from_handle(
      const Structure& handle, const VariableClientLookup& clients);

  [[nodiscard]] bool valid() const { return state_ != nullptr; }
  [[nodiscard]] const std::string& name() const;
  [[nodiscard]] const DynamicEmbeddingOptions& options() const;
  [[nodiscard]] int num_shards() const;

  // The rows of `keys` (1-D int64) as float32 [n, dim], in key order: one
  // request per ps task holding some of the keys, in parallel. Keys that
  // are not (yet) admitted read as zeros. `step` (>= 0) is the training
  // step the lookup belongs to, which the expiry rules count in; -1: none.
  [[nodiscard]] absl::StatusOr<Tensor> lookup(const Tensor& keys, int64_t step = -1) const;
  // Applies the gradient rows `grads` (float32 [n, dim]) of `keys` with
  // the table's optimizer (options().optimizer) on the ps tasks. Gradients
  // of keys without a row are dropped.
  [[nodiscard]] absl::Status apply_gradients(const Tensor& keys, const Tensor& grads,
                                             double learning_rate, int64_t step = -1) const;
  [[nodiscard]] absl::StatusOr<DynamicEmbeddingStats> stats() const;
  // Index = ps task.
  [[nodiscard]] absl::StatusOr<std::vector<DynamicEmbeddingStats>> stats_per_shard() const;

 private:
  friend struct internal::DynamicEmbeddingAccess;
  struct State;
  explicit DynamicEmbedding(std::shared_ptr<const State> state) : state_(std::move(state)) {}

  std::shared_ptr<const State> state_;
};

// TFRA's embedding_lookup: table.lookup(keys, step).
[[nodiscard]] absl::StatusOr<Tensor> embedding_lookup(const DynamicEmbedding& table,
                                                      const Tensor& keys, int64_t step = -1);

}  // namespace psflow

#endif  // PSFLOW_DYNAMIC_EMBEDDING_H_

// ParameterServerStrategy: where variables live (TF's
// tf.distribute.experimental.ParameterServerStrategy, variables part).
//
//   auto strategy = ParameterServerStrategy::create(resolver, partitioner);
//   ShardedVariable v1 = *create_variable(Tensor::scalar(0.0f));  // coordinator
//   {
//     StrategyScope scope = (*strategy)->scope();
//     ShardedVariable v2 = *create_variable(Tensor::scalar(1.0f));  // ps0
//     ShardedVariable w = *create_variable(embeddings, {.name = "w"});  // sharded
//   }
#ifndef PSFLOW_STRATEGY_H_
#define PSFLOW_STRATEGY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "psflow/cluster_resolver.h"
#include "psflow/cluster_spec.h"
#include "psflow/dynamic_embedding.h"
#include "psflow/partitioners.h"
#include "psflow/tensor.h"
#include "psflow/variable.h"
#include "psflow/variable_handle.h"
#include "psflow/variable_policy.h"

namespace psflow {

class ParameterServerStrategy;
namespace internal {
class NameRegistry;
struct PsLoad;                   // strategy/placement.h
class VariableClient;            // one ps task's VariableService client (runtime)
struct StrategyAccess;           // the runtime's constructor with its own clients (tests)
struct StrategyCoordinatorSlot;  // the strategy's coordinator (ClusterCoordinator::create)
}  // namespace internal

// A partition-aware initial value (TF's callable `initial_value` taking
// `partition_shape` and `partition_offset`): `fn` is called once per part
// with the part's shape and its offset in the full variable ({row, 0, ...}),
// so a large variable is never materialised in one piece. For an unsharded
// variable it is called once with the full shape and a zero offset. It may
// return the full value instead of the part, which is then sliced (TF's
// slow path).
// Thread-safety: a value type; `fn` runs on the creating thread, during
// create_variable.
struct Initializer {
  DType dtype = DType::kInvalid;
  Shape shape = {};
  std::function<absl::StatusOr<Tensor>(const Shape& part_shape, const Shape& part_offset)> fn =
      nullptr;
};

// Options of one variable creation.
// Thread-safety: a value type.
struct VariableOptions {
  // TF's `name`; empty means "Variable". Names are made unique per
  // strategy (and per coordinator process for variables outside any
  // scope) as TF's graph names are: "w", then "w_1", "w_2", ... so that
  // stored names never collide. Parts are "<name>/part_<i>".
  std::string name = "";
  // TF's colocate_with (strategy.extended.colocate_vars_with): place the
  // new variable on the task of this one-part variable, unsharded, without
  // advancing the round-robin counter.
  std::optional<ShardedVariable> colocate_with = std::nullopt;
  // TF's `aggregation`: what an assign made inside a replica function with
  // several replicas writes (variable_policy.h). Stored in the variable and
  // its handle, so that workers apply it too.
  VariableAggregation aggregation = VariableAggregation::kNone;
  // TF's `synchronization`: every kind is accepted and stores one copy on a
  // ps task (TF's ParameterServerStrategy does not mirror); kOnRead makes
  // `trainable` default to false, as in TF.
  VariableSynchronization synchronization = VariableSynchronization::kAuto;
  // TF's `trainable`; unset means synchronization != kOnRead.
  std::optional<bool> trainable = std::nullopt;
};

// Where ParameterServerStrategy puts each new variable, and each shard of
// a partitioned one. Neither rule splits a variable: only a partitioner
// does (TF's contract).
enum class VariablePlacement {
  // The default: on the ps task holding the fewest bytes of this
  // strategy's variables so far (colocated ones included), ties to the
  // lowest index. Equal-sized variables land as TF's round robin puts them
  // (3 ps, four scalars: ps 0, 1, 2, 0); a large variable no longer takes
  // the same task as every other one that follows the counter (TF's
  // "unbalanced ps load"). The shards of one variable go to distinct tasks
  // when there are at most num_ps of them (any num_ps consecutive shards
  // otherwise), each to the least loaded task not yet taken, so a shard may
  // follow its predecessor on any task, not on the next index. Optimizer
  // slots live beside their variable on the ps (they are not placed here)
  // and grow with it, so balancing the variables balances them too. The
  // same creations in the same order give the same placement: a coordinator
  // that re-creates its model after a restart finds every part where the
  // previous one put it.
  kFewestBytes,
  // TF's exact rule: the strategy's counter, (count % num_ps), one step per
  // variable or shard (TF says this order "should not be relied on"; code
  // that does rely on it sets this).
  kRoundRobin,
};

// "fewest_bytes" / "round_robin"; empty for a value outside the enum.
[[nodiscard]] std::string_view variable_placement_name(VariablePlacement placement);

// Thread-safety: a value type.
struct ParameterServerStrategyOptions {
  // Bound on each variable operation made through this strategy's
  // variables (creation included).
  absl::Duration variable_timeout = kDefaultVariableTimeout;
  VariablePlacement placement = VariablePlacement::kFewestBytes;
};

// Makes `strategy` the thread's current strategy until destroyed; variables
// created meanwhile on this thread with create_variable() go to its ps
// tasks (TF's `with strategy.scope():`). Scopes nest; entering the scope of
// a different strategy inside one makes creation fail (TF: "Mixing
// different tf.distribute.Strategy objects"). Must not outlive the
// strategy.
// Thread-safety: a thread-local guard; use it on the thread that made it.
class StrategyScope {
 public:
  StrategyScope(const StrategyScope&) = delete;
  StrategyScope& operator=(const StrategyScope&) = delete;
  ~StrategyScope();

 private:
  friend class ParameterServerStrategy;
  explicit StrategyScope(ParameterServerStrategy* strategy);

  ParameterServerStrategy* previous_;
  bool previous_mixed_;
};

// Places variables made through the strategy on this thread beside one
// variable (TF's `with strategy.extended.colocate_vars_with(v):`). Must not
// outlive the strategy.
// Thread-safety: a thread-local guard; use it on the thread that made it.
class ColocationScope {
 public:
  ColocationScope(const ColocationScope&) = delete;
  ColocationScope& operator=(const ColocationScope&) = delete;
  ~ColocationScope();

 private:
  friend class ParameterServerStrategy;
  ColocationScope(const ParameterServerStrategy* strategy, ShardedVariable target);

  const ParameterServerStrategy* previous_owner_;
  std::optional<ShardedVariable> previous_target_;
};

// The coordinator's view of a parameter-server cluster: places variables
// on ps tasks (ParameterServerStrategyOptions::placement), sharding them
// with the variable partitioner.
// Variables outlive the strategy (they hold their own clients); a new
// strategy starts its counter and names afresh.
// Thread-safety: all methods are thread-safe; creations from several
// threads are placed in the order they take the strategy's lock.
class ParameterServerStrategy {
 public:
  // Reads and validates the cluster (validate_parameter_server_cluster:
  // TF's messages, INVALID_ARGUMENT) and connects one client per ps task.
  // ps tasks must be numbered 0..n-1. A null partitioner: no sharding.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ParameterServerStrategy>> create(
      const ClusterResolver& cluster_resolver, Partitioner variable_partitioner = nullptr,
      ParameterServerStrategyOptions options = {});

  ParameterServerStrategy(const ParameterServerStrategy&) = delete;
  ParameterServerStrategy& operator=(const ParameterServerStrategy&) = delete;
  ~ParameterServerStrategy();

  // TF's strategy.scope().
  [[nodiscard]] StrategyScope scope();
  // TF's strategy.extended.colocate_vars_with(v). `v` must have one part.
  [[nodiscard]] ColocationScope colocate_vars_with(const ShardedVariable& v) const;

  // Creates a variable on this strategy's ps tasks whether or not a scope
  // is active (TF's tf.Variable inside strategy.scope()):
  //  * with colocation (options or ColocationScope): on that variable's
  //    task, never sharded, counter unchanged (its bytes count towards
  //    that task's);
  //  * else, unless the partitioner shards it: on the task the placement
  //    rule picks (VariablePlacement), and the counter grows by one;
  //  * sharded: n = min(partitions[0], shape[0]) parts of TF's div layout
  //    (13 rows over 5 -> 3,3,3,2,2), each placed as above in turn.
  // The partitioner must return a non-empty list with a non-zero first
  // element and 1 elsewhere, else INVALID_ARGUMENT with TF's message.
  // Scalars are never sharded. The CREATE requests go one per task, in
  // parallel; when one fails, the names, counter slots and bytes stay
  // used.
  [[nodiscard]] absl::StatusOr<ShardedVariable> create_variable(Tensor initial_value,
                                                                VariableOptions options = {})
      ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] absl::StatusOr<ShardedVariable> create_variable(Initializer initial_value,
                                                                VariableOptions options = {})
      ABSL_LOCKS_EXCLUDED(mu_);

  [[nodiscard]] const ClusterSpec& cluster_spec() const { return spec_; }
  [[nodiscard]] int num_ps() const { return static_cast<int>(ps_clients_.size()); }
  [[nodiscard]] const Partitioner& variable_partitioner() const { return partitioner_; }
  [[nodiscard]] VariablePlacement placement() const { return placement_; }
  // Bytes of the variables this strategy has placed on each ps task, by
  // index (elements times dtype size; 16 per string): what the placement
  // rule balances.
  [[nodiscard]] std::vector<int64_t> placed_bytes() const ABSL_LOCKS_EXCLUDED(mu_);
  // Clients for ("ps", i) and, for variables made outside any scope,
  // ("chief", 0): rebuilds variables from handles in this process.
  [[nodiscard]] VariableClientLookup client_lookup() const;
  // The dynamic embedding tables made through this strategy
  // (DynamicEmbedding::get_variable), by name: what a checkpoint of the
  // model holds beside its variables (`psflow train` saves them all).
  [[nodiscard]] std::map<std::string, DynamicEmbedding> dynamic_embeddings() const
      ABSL_LOCKS_EXCLUDED(tables_mu_);

 private:
  friend class DynamicEmbedding;
  friend struct internal::StrategyAccess;
  friend struct internal::StrategyCoordinatorSlot;
  ParameterServerStrategy(ClusterSpec spec, Partitioner partitioner,
                          std::vector<std::shared_ptr<internal::VariableClient>> ps_clients,
                          const ParameterServerStrategyOptions& options);
  // Exactly one of `value` and `init` is non-null.
  absl::StatusOr<ShardedVariable> create_impl(const Tensor* value, const Initializer* init,
                                              VariableOptions options);

  const ClusterSpec spec_;
  const Partitioner partitioner_;
  const std::vector<std::shared_ptr<internal::VariableClient>> ps_clients_;
  const absl::Duration timeout_;
  const VariablePlacement placement_;
  mutable absl::Mutex mu_;
  // TF's extended._variable_count (variables and shards placed so far) and
  // the bytes placed on each task.
  std::unique_ptr<internal::PsLoad> load_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<internal::NameRegistry> names_ ABSL_GUARDED_BY(mu_);
  // The coordinator made for this strategy while it lives (TF keeps one
  // per strategy), weakly: the coordinator layer's own record, type-erased
  // because that layer sits above this one.
  mutable absl::Mutex coordinator_mu_;
  mutable std::weak_ptr<void> coordinator_ ABSL_GUARDED_BY(coordinator_mu_);
  // Recorded by DynamicEmbedding::get_variable, which takes the strategy
  // as const.
  mutable absl::Mutex tables_mu_;
  mutable std::map<std::string, DynamicEmbedding> tables_ ABSL_GUARDED_BY(tables_mu_);
};

// TF's tf.Variable(initial_value, name=...): inside a strategy scope, the
// scope's strategy->create_variable; outside any scope, a variable in this
// coordinator process (device "/job:chief/replica:0/task:0/device:CPU:0"),
// never sharded. FAILED_PRECONDITION inside mixed scopes of two
// strategies.
[[nodiscard]] absl::StatusOr<ShardedVariable> create_variable(Tensor initial_value,
                                                              VariableOptions options = {});
[[nodiscard]] absl::StatusOr<ShardedVariable> create_variable(Initializer initial_value,
                                                              VariableOptions options = {});

// TF's tf.distribute.has_strategy / get_strategy: the strategy whose scope
// this thread is in, or nullptr (TF returns a default strategy there).
[[nodiscard]] ParameterServerStrategy* get_strategy();
[[nodiscard]] bool has_strategy();

}  // namespace psflow

#endif  // PSFLOW_STRATEGY_H_

// How a variable is updated from replicas (TF's tf.VariableAggregation and
// tf.VariableSynchronization), and TF's cache_variable_reads scope.
//
// With ParameterServerStrategy every variable is one copy on a ps task,
// whatever its synchronization (TF's ParameterServerStrategy passes the
// synchronization through and never mirrors): the aggregation decides what
// an assign made inside ReplicaGroup::run with several replicas writes.
// There, as TF's AggregatingVariable does, the replicas meet (every replica
// must make the same call, as for a collective), their values are combined
// and the variable is updated once:
//   * kNone: refused, INVALID_ARGUMENT with TF's message ("You must specify
//     an aggregation method to update a ... in Replica Context"); nothing
//     is written and no replica waits for the others;
//   * kSum: the elementwise sum of the replicas' values;
//   * kMean: that sum divided by the replica count (float variables only,
//     else INVALID_ARGUMENT with TF's message);
//   * kOnlyFirstReplica: replica 0's value.
// A value every replica passes from one buffer (a Tensor made outside the
// replica function and captured by all of them) is TF's non-distributed
// value (TF's regroup finds `v is v0` for every replica): SUM and MEAN
// write it unchanged, as TF's ParameterServerStrategy reduce_to returns a
// non-distributed value as is. Outside a replica function, or with one
// replica, every assign writes its value directly (TF wraps nothing then).
// Scatter operations are never aggregated.
#ifndef PSFLOW_VARIABLE_POLICY_H_
#define PSFLOW_VARIABLE_POLICY_H_

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"

namespace psflow {

namespace internal {
struct ReadCache;
}  // namespace internal

// TF's tf.VariableAggregation.
enum class VariableAggregation { kNone = 0, kSum = 1, kMean = 2, kOnlyFirstReplica = 3 };
// TF's tf.VariableSynchronization. kAuto is kOnWrite for a strategy that
// mirrors; on ps every kind stores one copy.
enum class VariableSynchronization { kAuto = 0, kNone = 1, kOnWrite = 2, kOnRead = 3 };

// TF's names: "NONE", "SUM", "MEAN", "ONLY_FIRST_REPLICA"; "AUTO", "NONE",
// "ON_WRITE", "ON_READ". An out-of-range value gives "".
[[nodiscard]] std::string_view variable_aggregation_name(VariableAggregation a);
[[nodiscard]] std::string_view variable_synchronization_name(VariableSynchronization s);
// Inverses of the above (exact TF names); INVALID_ARGUMENT otherwise.
[[nodiscard]] absl::StatusOr<VariableAggregation> variable_aggregation_from_name(
    std::string_view name);
[[nodiscard]] absl::StatusOr<VariableSynchronization> variable_synchronization_from_name(
    std::string_view name);

// TF's distribute_utils.cache_variable_reads(): while alive, the first
// read_value() of each variable part on this thread (and on the replica
// threads of ReplicaGroup::run calls made from it) reads the task, and
// later reads return that value, even after assigns (TF's CachingVariable).
// Only read_value / read_values are cached; a new scope starts with an
// empty cache. Obtain it from cache_variable_reads(); destroy it on the
// thread that made it. Move-only; a moved-from scope does nothing.
// Thread-safety: the cache it installs is thread-safe (replica threads
// share it); the guard itself belongs to its thread.
class VariableReadCacheScope {
 public:
  VariableReadCacheScope(VariableReadCacheScope&& other) noexcept;
  VariableReadCacheScope& operator=(VariableReadCacheScope&&) = delete;
  VariableReadCacheScope(const VariableReadCacheScope&) = delete;
  VariableReadCacheScope& operator=(const VariableReadCacheScope&) = delete;
  ~VariableReadCacheScope();

 private:
  friend absl::StatusOr<VariableReadCacheScope> cache_variable_reads();
  VariableReadCacheScope() = default;
  bool active_ = false;
};

// Enters the scope. FAILED_PRECONDITION, with TF's "cache_variable_reads
// scope cannot be nested", when this thread is already inside one (TF
// raises ValueError).
[[nodiscard]] absl::StatusOr<VariableReadCacheScope> cache_variable_reads();

}  // namespace psflow

#endif  // PSFLOW_VARIABLE_POLICY_H_

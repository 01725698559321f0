// What a function sees of the replica it runs on (TF's
// tf.distribute.ReplicaContext, ValueContext and InputContext).
#ifndef PSFLOW_REPLICA_CONTEXT_H_
#define PSFLOW_REPLICA_CONTEXT_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "psflow/reduce_op.h"
#include "psflow/structure.h"

namespace psflow {

namespace internal {
class ReplicaCollective;
struct ReplicaContextAccess;  // aggregated variable updates (runtime)
}  // namespace internal

// The argument of experimental_distribute_values_from_function's value_fn
// (TF's tf.distribute.experimental.ValueContext).
// Thread-safety: a value type.
class ValueContext {
 public:
  ValueContext(int replica_id_in_sync_group = 0, int num_replicas_in_sync = 1)
      : replica_id_(replica_id_in_sync_group), num_replicas_(num_replicas_in_sync) {}
  [[nodiscard]] int replica_id_in_sync_group() const { return replica_id_; }
  [[nodiscard]] int num_replicas_in_sync() const { return num_replicas_; }

 private:
  int replica_id_;
  int num_replicas_;
};

// The argument of distribute_datasets_from_function's dataset_fn (TF's
// tf.distribute.InputContext). A ReplicaGroup is one input pipeline (one
// worker) feeding all of its replicas.
// Thread-safety: a value type.
class InputContext {
 public:
  InputContext(int num_input_pipelines = 1, int input_pipeline_id = 0, int num_replicas_in_sync = 1)
      : num_input_pipelines_(num_input_pipelines),
        input_pipeline_id_(input_pipeline_id),
        num_replicas_(num_replicas_in_sync) {}
  [[nodiscard]] int num_input_pipelines() const { return num_input_pipelines_; }
  [[nodiscard]] int input_pipeline_id() const { return input_pipeline_id_; }
  [[nodiscard]] int num_replicas_in_sync() const { return num_replicas_; }
  // global_batch_size / num_replicas_in_sync. INVALID_ARGUMENT (TF's
  // message) unless it divides evenly.
  [[nodiscard]] absl::StatusOr<int64_t> get_per_replica_batch_size(int64_t global_batch_size) const;

 private:
  int num_input_pipelines_;
  int input_pipeline_id_;
  int num_replicas_;
};

// Handed to the function of ReplicaGroup::run on each replica (TF's
// ReplicaContext). Collectives (all_reduce, all_gather) are barriers: every
// replica of the run must make the same collective calls in the same order.
// A collective that can no longer complete returns an error on every
// replica that waits in it: ABORTED when another replica's function failed,
// FAILED_PRECONDITION when one returned without making the call,
// DEADLINE_EXCEEDED after ReplicaGroupOptions::collective_timeout.
// Thread-safety: use it on its replica's thread, during the run only.
class ReplicaContext {
 public:
  ReplicaContext(const ReplicaContext&) = delete;
  ReplicaContext& operator=(const ReplicaContext&) = delete;

  [[nodiscard]] int replica_id_in_sync_group() const { return replica_id_; }
  [[nodiscard]] int num_replicas_in_sync() const { return num_replicas_; }

  // Every replica contributes `value` (a tensor or a nest of tensors; ints
  // and floats count as int64 / float64 scalars) and every replica gets the
  // elementwise SUM, or the SUM divided by the replica count for MEAN.
  // Nesting, dtypes and shapes must match across replicas, else every
  // replica gets INVALID_ARGUMENT naming the replicas. Supports float32,
  // float64, int32, int64; MEAN of integers gives float64 (true division).
  [[nodiscard]] absl::StatusOr<Structure> all_reduce(ReduceOp op, const Structure& value) const;
  // `op` is "sum" or "mean", case-insensitive; any other string is
  // INVALID_ARGUMENT at once, without joining the collective.
  [[nodiscard]] absl::StatusOr<Structure> all_reduce(std::string_view op,
                                                     const Structure& value) const;
  // Every replica gets the replicas' values concatenated along `axis` in
  // replica order (shape rules as ReplicaGroup::gather).
  [[nodiscard]] absl::StatusOr<Structure> all_gather(const Structure& value, int axis) const;

 private:
  friend class ReplicaGroup;
  friend struct internal::ReplicaContextAccess;
  ReplicaContext(internal::ReplicaCollective* collective, int replica_id, int num_replicas)
      : collective_(collective), replica_id_(replica_id), num_replicas_(num_replicas) {}

  internal::ReplicaCollective* collective_;
  int replica_id_;
  int num_replicas_;
};

// TF's tf.distribute.get_replica_context(), inside a function run by
// ReplicaGroup::run: that replica's context. nullptr elsewhere (TF returns
// the default replica context there; psflow has none).
[[nodiscard]] const ReplicaContext* get_replica_context();

}  // namespace psflow

#endif  // PSFLOW_REPLICA_CONTEXT_H_

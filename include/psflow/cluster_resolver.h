// Cluster resolvers: where the cluster description comes from.
#ifndef PSFLOW_CLUSTER_RESOLVER_H_
#define PSFLOW_CLUSTER_RESOLVER_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/cluster_spec.h"

namespace psflow {

// The cluster this process belongs to, and its own role in it.
// Thread-safety: implementations are safe for concurrent const calls.
class ClusterResolver {
 public:
  virtual ~ClusterResolver() = default;
  [[nodiscard]] virtual absl::StatusOr<ClusterSpec> cluster_spec() const = 0;
  // nullopt when the source names no task type / index / rpc layer.
  [[nodiscard]] virtual absl::StatusOr<std::optional<std::string>> task_type() const = 0;
  [[nodiscard]] virtual absl::StatusOr<std::optional<int>> task_id() const = 0;
  [[nodiscard]] virtual absl::StatusOr<std::optional<std::string>> rpc_layer() const = 0;

  // TF's ClusterResolver.master: "" for an empty cluster or one job with one
  // task (TF counts max index + 1, so a lone sparse job {"1": ...} is not
  // one task), else "<rpc_layer>://<address>" (bare address when the layer is
  // unset or "") of the given task; each argument defaults to this resolver's
  // own value. NOT_FOUND for an unknown job or index; INVALID_ARGUMENT when
  // neither the arguments nor the resolver name a task type or id.
  [[nodiscard]] virtual absl::StatusOr<std::string> master(
      std::optional<std::string> task_type = std::nullopt,
      std::optional<int> task_id = std::nullopt,
      std::optional<std::string> rpc_layer = std::nullopt) const;
};

// A resolver over a ClusterSpec built in code.
// Thread-safety: immutable after construction; all methods may run concurrently.
class SimpleClusterResolver final : public ClusterResolver {
 public:
  explicit SimpleClusterResolver(ClusterSpec spec,
                                 std::optional<std::string> task_type = std::nullopt,
                                 std::optional<int> task_id = std::nullopt,
                                 std::optional<std::string> rpc_layer = std::nullopt);
  [[nodiscard]] absl::StatusOr<ClusterSpec> cluster_spec() const override { return spec_; }
  [[nodiscard]] absl::StatusOr<std::optional<std::string>> task_type() const override {
    return task_type_;
  }
  [[nodiscard]] absl::StatusOr<std::optional<int>> task_id() const override { return task_id_; }
  [[nodiscard]] absl::StatusOr<std::optional<std::string>> rpc_layer() const override {
    return rpc_layer_;
  }

 private:
  ClusterSpec spec_;
  std::optional<std::string> task_type_;
  std::optional<int> task_id_;
  std::optional<std::string> rpc_layer_;
};

// Reads the TF_CONFIG JSON exactly as TF's TFConfigClusterResolver: the
// variable is re-read on every call (nothing cached; one call reads it once),
// overrides given here win over TF_CONFIG, `task.type` is cast to a string
// as Python's str() (123456 -> "123456") and `task.index` to an int as int()
// ("1" -> 1). No "cluster" key gives an empty ClusterSpec; an unset TF_CONFIG
// reads as "{}", but a set-but-empty one is malformed, as in TF. Malformed
// JSON is INVALID_ARGUMENT naming the byte position; so are, unlike TF's
// late TypeErrors, a non-object TF_CONFIG or task and a non-string rpc_layer
// or session_master (null counts as absent). master() returns
// TF_CONFIG.session_master when present.
// Thread-safety: immutable after construction; all methods may run
// concurrently, provided nothing calls setenv/putenv at the same time.
class TFConfigClusterResolver final : public ClusterResolver {
 public:
  // Initialized members, so that designated initializers may name only some
  // ({.task_type = "ps"}) without -Wmissing-field-initializers.
  struct Options {
    std::optional<std::string> task_type = std::nullopt;
    std::optional<int> task_id = std::nullopt;
    std::optional<std::string> rpc_layer = std::nullopt;
    // When set, parsed instead of the TF_CONFIG environment variable.
    std::optional<std::string> tf_config_json = std::nullopt;
  };

  TFConfigClusterResolver() : TFConfigClusterResolver(Options{}) {}
  explicit TFConfigClusterResolver(Options options);

  [[nodiscard]] absl::StatusOr<ClusterSpec> cluster_spec() const override;
  [[nodiscard]] absl::StatusOr<std::optional<std::string>> task_type() const override;
  [[nodiscard]] absl::StatusOr<std::optional<int>> task_id() const override;
  [[nodiscard]] absl::StatusOr<std::optional<std::string>> rpc_layer() const override;
  [[nodiscard]] absl::StatusOr<std::string> master(
      std::optional<std::string> task_type = std::nullopt,
      std::optional<int> task_id = std::nullopt,
      std::optional<std::string> rpc_layer = std::nullopt) const override;

  // True when TF_CONFIG is set and non-empty (or tf_config_json is given).
  [[nodiscard]] bool is_configured() const;

 private:
  Options options_;
};

// Finds the cluster from the variables Slurm sets in every task of a job step
// (`srun`), as TF's tf.distribute.cluster_resolver.SlurmClusterResolver:
//   SLURM_PROCID                this task's rank, 0 .. tasks - 1;
//   SLURM_STEP_NODELIST         the step's nodes, e.g. "n[1-2],m5" (falls back
//                               to SLURM_JOB_NODELIST);
//   SLURM_STEP_TASKS_PER_NODE   tasks on each of those nodes, e.g. "2(x2),1"
//                               (falls back to SLURM_TASKS_PER_NODE);
//   SLURM_STEP_NUM_TASKS        the step's task count (falls back to
//                               SLURM_NTASKS); read only for the default jobs.
// The nodes are walked in list order: node k runs tasks_per_node[k] tasks on
// ports port_base, port_base + 1, ..., and ranks count through them in that
// order, as Slurm's default block distribution places them (run the step with
// `srun --distribution=block`; a cyclic distribution puts ranks elsewhere).
// The jobs then take consecutive ranks in the order given: {{"chief", 1},
// {"ps", 2}, {"worker", 2}} makes rank 0 the chief, ranks 1-2 ps 0-1 and ranks
// 3-4 worker 0-1. task_type() and task_id() are the job whose ranks hold
// SLURM_PROCID and the offset in it.
//
// Differences from TF: the GPU options (gpus_per_node, gpus_per_task,
// auto_set_gpu, and so CUDA_VISIBLE_DEVICES) are left out, psflow has no GPU
// support yet; TF sorts the hosts and the job names alphabetically, which
// misplaces ranks for lists like "n[9-10]" (ranks follow Slurm's order, not
// the alphabet), so here both keep their given order; TF's tasks_per_node may
// also map host names to counts, here it is one count for every node; TF
// sets the task only once cluster_spec() ran, here the resolver knows it from
// the start. Everything is read and checked once, by create(); errors, each
// naming the variable, its value and the fix: FAILED_PRECONDITION for a
// missing variable (not inside a Slurm step?), INVALID_ARGUMENT for a
// malformed value (an unbalanced bracket, a range like 5-3, a list expanding
// to more than 1,000,000 hosts), a tasks-per-node list whose
// node count differs from the node list's, a node listed twice, jobs that
// ask for more or fewer tasks than the step has (TF's "Requested N tasks but
// only M were assigned"), a duplicate or empty job name, a negative job size,
// a rank outside the tasks, or ports beyond 65535.
// Thread-safety: immutable after create(); all methods may run concurrently.
class SlurmClusterResolver final : public ClusterResolver {
 public:
  // Initialized members, so that designated initializers may name only some.
  struct Options {
    // (job name, task count) in rank order. Empty: one job "worker" with
    // every task of the step (SLURM_STEP_NUM_TASKS), as TF's default.
    std::vector<std::pair<std::string, int>> jobs = {};
    // The first port on every node; a node's i-th task listens on port_base + i.
    int port_base = 8888;
    // Tasks on every node, instead of SLURM_STEP_TASKS_PER_NODE.
    std::optional<int> tasks_per_node = std::nullopt;
    // The scheme of master(); nullopt or "" gives bare addresses.
    std::optional<std::string> rpc_layer = "grpc";
    // When set, the variables are read from this map (a missing key is an
    // unset variable) instead of the process environment, e.g. in tests.
    std::optional<std::map<std::string, std::string>> environment = std::nullopt;
  };

  [[nodiscard]] static absl::StatusOr<SlurmClusterResolver> create();
  [[nodiscard]] static absl::StatusOr<SlurmClusterResolver> create(Options options);

  [[nodiscard]] absl::StatusOr<ClusterSpec> cluster_spec() const override { return spec_; }
  [[nodiscard]] absl::StatusOr<std::optional<std::string>> task_type() const override {
    return std::optional<std::string>(task_type_);
  }
  [[nodiscard]] absl::StatusOr<std::optional<int>> task_id() const override {
    return std::optional<int>(task_id_);
  }
  [[nodiscard]] absl::StatusOr<std::optional<std::string>> rpc_layer() const override {
    return rpc_layer_;
  }
  // TF's SlurmClusterResolver.master: "<rpc_layer>://host:port" of the given
  // task, each argument defaulting to this task's own (an empty rpc_layer
  // too, as TF's `rpc_layer or self.rpc_layer`). Unlike the base rule, a
  // one-task cluster still gets its address, as in TF. NOT_FOUND for an
  // unknown job or index.
  [[nodiscard]] absl::StatusOr<std::string> master(
      std::optional<std::string> task_type = std::nullopt,
      std::optional<int> task_id = std::nullopt,
      std::optional<std::string> rpc_layer = std::nullopt) const override;

  // SLURM_PROCID.
  [[nodiscard]] int rank() const { return rank_; }

 private:
  SlurmClusterResolver(ClusterSpec spec, std::string task_type, int task_id, int rank,
                       std::optional<std::string> rpc_layer);

  ClusterSpec spec_;
  std::string task_type_;
  int task_id_;
  int rank_;
  std::optional<std::string> rpc_layer_;
};

// The ParameterServerStrategy checks of TF (`_verify_args_and_config` and
// `_validate_cluster_spec`), in TF's order and with TF's messages, each
// extended with the fix: empty spec, disallowed job names, unrecognized or
// absent task type, more than one chief/evaluator, task id out of range,
// no ps, no worker. INVALID_ARGUMENT on the first failure. Beyond TF, the
// task-id check also rejects a missing or negative id for a task type in the
// cluster. As in TF, an evaluator may be absent from the cluster, and the id
// is compared with the job's task count (a sparse job's high index fails).
[[nodiscard]] absl::Status validate_parameter_server_cluster(
    const ClusterSpec& spec, const std::optional<std::string>& task_type,
    const std::optional<int>& task_id);

}  // namespace psflow

#endif  // PSFLOW_CLUSTER_RESOLVER_H_

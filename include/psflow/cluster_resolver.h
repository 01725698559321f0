// Cluster resolvers: where the cluster description comes from.
#ifndef PSFLOW_CLUSTER_RESOLVER_H_
#define PSFLOW_CLUSTER_RESOLVER_H_

#include <optional>
#include <string>

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

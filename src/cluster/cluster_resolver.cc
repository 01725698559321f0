#include "psflow/cluster_resolver.h"

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "cluster/master.h"
#include "cluster/tf_json.h"
#include "psflow/status_macros.h"

namespace psflow {

using internal::av;
using internal::master_address;
using internal::master_is_local;
using internal::py_repr_string;

std::string internal::format_master_url(std::string_view address,
                                        const std::optional<std::string>& rpc_layer) {
  if (rpc_layer.has_value() && !rpc_layer->empty()) {
    return absl::StrCat(*rpc_layer, "://", av(address));
  }
  return std::string(address);
}

bool internal::master_is_local(const ClusterSpec& spec) {
  if (spec.empty()) return true;
  if (spec.as_map().size() != 1) return false;
  const ClusterSpec::Tasks& tasks = spec.as_map().begin()->second;
  // TF compares len(job_tasks(job)) == 1, i.e. max index + 1 == 1.
  return !tasks.empty() && tasks.rbegin()->first == 0;
}

absl::StatusOr<std::string> internal::master_address(const ClusterSpec& spec,
                                                     const std::optional<std::string>& task_type,
                                                     const std::optional<int>& task_id,
                                                     const std::optional<std::string>& rpc_layer) {
  if (!task_type.has_value()) {
    return absl::InvalidArgumentError(
        "master() needs a task type: none was passed and the resolver names none. Pass "
        "task_type to master() or set TF_CONFIG.task.type.");
  }
  if (!task_id.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("master() needs a task id for job ", py_repr_string(*task_type),
                     ": none was passed and the resolver names none. Pass task_id to master() or "
                     "set TF_CONFIG.task.index."));
  }
  PSFLOW_ASSIGN_OR_RETURN(std::string address, spec.task_address(*task_type, *task_id));
  return format_master_url(address, rpc_layer);
}

absl::StatusOr<std::string> ClusterResolver::master(std::optional<std::string> task_type,
                                                    std::optional<int> task_id,
                                                    std::optional<std::string> rpc_layer) const {
  PSFLOW_ASSIGN_OR_RETURN(ClusterSpec spec, cluster_spec());
  if (master_is_local(spec)) return std::string();
  // Arguments win; the resolver's own task fills the rest (TF's order).
  if (!task_type.has_value()) {
    PSFLOW_ASSIGN_OR_RETURN(task_type, this->task_type());
  }
  if (!task_id.has_value()) {
    PSFLOW_ASSIGN_OR_RETURN(task_id, this->task_id());
  }
  if (!rpc_layer.has_value()) {
    PSFLOW_ASSIGN_OR_RETURN(rpc_layer, this->rpc_layer());
  }
  return master_address(spec, task_type, task_id, rpc_layer);
}

}  // namespace psflow

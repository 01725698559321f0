// TF's ClusterResolver.master() rules, shared by the base resolver and
// TFConfigClusterResolver (which reads TF_CONFIG once per master() call).
#ifndef PSFLOW_CLUSTER_MASTER_H_
#define PSFLOW_CLUSTER_MASTER_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "psflow/cluster_spec.h"

namespace psflow::internal {

// TF's format_master_url: "<rpc_layer>://<address>", or the bare address
// when the layer is unset or empty (Python's `if rpc_layer:`).
[[nodiscard]] std::string format_master_url(std::string_view address,
                                            const std::optional<std::string>& rpc_layer);

// True when master() is "": the cluster has no jobs, or exactly one job whose
// TF job_tasks() list (max index + 1 entries, gaps included) has length one.
// So a lone sparse job {"worker": {"1": ...}} is *not* local, as in TF.
[[nodiscard]] bool master_is_local(const ClusterSpec& spec);

// The formatted address of task (task_type, task_id). NOT_FOUND for an
// unknown job or index (ClusterSpec::task_address); INVALID_ARGUMENT when the
// task type or id is unknown (TF would look up job None), naming the fix.
[[nodiscard]] absl::StatusOr<std::string> master_address(
    const ClusterSpec& spec, const std::optional<std::string>& task_type,
    const std::optional<int>& task_id, const std::optional<std::string>& rpc_layer);

}  // namespace psflow::internal

#endif  // PSFLOW_CLUSTER_MASTER_H_

#include <optional>
#include <string>
#include <utility>

#include "psflow/cluster_resolver.h"

namespace psflow {

SimpleClusterResolver::SimpleClusterResolver(ClusterSpec spec, std::optional<std::string> task_type,
                                             std::optional<int> task_id,
                                             std::optional<std::string> rpc_layer)
    : spec_(std::move(spec)),
      task_type_(std::move(task_type)),
      task_id_(task_id),
      rpc_layer_(std::move(rpc_layer)) {}

}  // namespace psflow

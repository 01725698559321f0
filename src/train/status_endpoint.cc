#include "train/status_endpoint.h"

#include <filesystem>
#include <utility>

#include "psflow/status_macros.h"
#include "train/run_files.h"

namespace psflow::internal {

absl::StatusOr<std::unique_ptr<StatusEndpoint>> StatusEndpoint::start(
    const ClusterCoordinator& coordinator, const std::string& run_dir) {
  PSFLOW_ASSIGN_OR_RETURN(
      std::unique_ptr<CoordinatorStatusServer> server,
      CoordinatorStatusServer::start([&coordinator] { return coordinator.get_task_states(); }));
  PSFLOW_RETURN_IF_ERROR(write_run_file(run_dir, kStatusAddressFile, server->address()));
  return std::unique_ptr<StatusEndpoint>(
      new StatusEndpoint(std::move(server), run_dir + "/" + kStatusAddressFile));
}

StatusEndpoint::~StatusEndpoint() {
  // First: a `psflow status` from now on finds no address rather than a
  // dead one.
  std::error_code ignored;
  std::filesystem::remove(path_, ignored);
}

}  // namespace psflow::internal

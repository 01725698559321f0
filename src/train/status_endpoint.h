// The chief's status endpoint (internal): `psflow train` serves its
// coordinator's task states (CoordinatorStatusServer, loopback, a free
// port) and writes where to <run_dir>/status_address, so that
// `psflow status --run-dir` finds it.
#ifndef PSFLOW_TRAIN_STATUS_ENDPOINT_H_
#define PSFLOW_TRAIN_STATUS_ENDPOINT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "coordinator/status_server.h"
#include "psflow/cluster_coordinator.h"

namespace psflow::internal {

// The file in a run directory that holds "host:port" of its running chief's
// status service (one line); removed when the chief stops serving.
inline constexpr char kStatusAddressFile[] = "status_address";

// Thread-safety: not thread-safe (one owner).
class StatusEndpoint {
 public:
  // `coordinator` must outlive the endpoint; `run_dir` exists.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<StatusEndpoint>> start(
      const ClusterCoordinator& coordinator, const std::string& run_dir);
  // Removes <run_dir>/status_address, then stops serving.
  ~StatusEndpoint();
  StatusEndpoint(const StatusEndpoint&) = delete;
  StatusEndpoint& operator=(const StatusEndpoint&) = delete;

  [[nodiscard]] const std::string& address() const { return server_->address(); }

 private:
  StatusEndpoint(std::unique_ptr<CoordinatorStatusServer> server, std::string path)
      : server_(std::move(server)), path_(std::move(path)) {}
  std::unique_ptr<CoordinatorStatusServer> server_;
  std::string path_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_STATUS_ENDPOINT_H_

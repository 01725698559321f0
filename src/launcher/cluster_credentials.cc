#include "launcher/cluster_credentials.h"

#include <filesystem>
#include <utility>

#include "psflow/cluster_spec.h"
#include "psflow/status_macros.h"
#include "psflow/tls_options.h"
#include "rpc/transport_credentials.h"
#include "security/private_file.h"

namespace psflow::internal {
namespace {

void remove_directory(const std::string& dir) {
  std::error_code error;
  std::filesystem::remove_all(dir, error);
}

}  // namespace

LocalClusterCredentials::LocalClusterCredentials(std::string dir, bool owned,
                                                 std::shared_ptr<const TlsCredentials> previous)
    : dir_(std::move(dir)), owned_(owned), previous_(std::move(previous)) {}

LocalClusterCredentials::~LocalClusterCredentials() {
  set_default_tls(previous_);
  if (owned_) remove_directory(dir_);
}

absl::StatusOr<std::unique_ptr<LocalClusterCredentials>> LocalClusterCredentials::install(
    std::string dir, bool owned) {
  std::shared_ptr<const TlsCredentials> previous = default_tls();
  // The chief's credentials must load before the process default changes.
  absl::Status status = set_process_tls(TlsOptions{.dir = dir}, kChiefJob, 0);
  if (!status.ok()) {
    set_default_tls(previous);
    if (owned) remove_directory(dir);
    return status;
  }
  return std::unique_ptr<LocalClusterCredentials>(
      new LocalClusterCredentials(std::move(dir), owned, std::move(previous)));
}

absl::StatusOr<std::unique_ptr<LocalClusterCredentials>> LocalClusterCredentials::make_fresh(
    const std::vector<CertifiedTask>& tasks) {
  PSFLOW_ASSIGN_OR_RETURN(std::string dir, make_private_temp_directory("psflow-tls-"));
  ClusterCertificatesOptions options;
  options.ca_name = "psflow local cluster CA (one run)";
  // The run's CA dies with the run; a week covers any run and limits
  // what a leaked key is good for.
  options.ca_validity = absl::Hours(24 * 7);
  options.task_validity = absl::Hours(24 * 7);
  absl::StatusOr<std::vector<std::string>> written =
      write_cluster_certificates(tasks, dir, options);
  if (!written.ok()) {
    remove_directory(dir);
    return written.status();
  }
  return install(std::move(dir), /*owned=*/true);
}

absl::StatusOr<std::unique_ptr<LocalClusterCredentials>> LocalClusterCredentials::use_directory(
    const std::string& dir) {
  return install(dir, /*owned=*/false);
}

}  // namespace psflow::internal

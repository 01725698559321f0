// The mutual-TLS credentials of a local cluster's run.
#ifndef PSFLOW_LAUNCHER_CLUSTER_CREDENTIALS_H_
#define PSFLOW_LAUNCHER_CLUSTER_CREDENTIALS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "security/cluster_certificates.h"
#include "security/tls_credentials.h"

namespace psflow::internal {

// Owns a credentials directory for one local cluster and makes this process
// the cluster's chief/0 for its channels: `make_fresh` writes a new CA and
// a certificate per task into a private (0700) temporary directory, removed
// on destruction; `use_directory` takes one `psflow certs` wrote and keeps
// it. While it lives, create_channel defaults to chief/0's credentials; the
// previous default comes back on destruction.
// Thread-safety: not copyable or movable; construction and destruction are
// not concurrent with other uses, and dir() is const.
class LocalClusterCredentials {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<LocalClusterCredentials>> make_fresh(
      const std::vector<CertifiedTask>& tasks);
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<LocalClusterCredentials>> use_directory(
      const std::string& dir);
  ~LocalClusterCredentials();
  LocalClusterCredentials(const LocalClusterCredentials&) = delete;
  LocalClusterCredentials& operator=(const LocalClusterCredentials&) = delete;

  // What the tasks get as --tls-dir.
  [[nodiscard]] const std::string& dir() const { return dir_; }

 private:
  LocalClusterCredentials(std::string dir, bool owned,
                          std::shared_ptr<const TlsCredentials> previous);
  static absl::StatusOr<std::unique_ptr<LocalClusterCredentials>> install(std::string dir,
                                                                          bool owned);

  const std::string dir_;
  const bool owned_;
  const std::shared_ptr<const TlsCredentials> previous_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_LAUNCHER_CLUSTER_CREDENTIALS_H_

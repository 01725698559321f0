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

// The prefix of a fresh credentials directory: "psflow-tls-<pid>-XXXXXX"
// under temp_directory_root(), <pid> the launcher's.
inline constexpr char kCredentialsDirPrefix[] = "psflow-tls-";

// Removes the fresh credentials directories under `temp_root` that this
// user owns and whose launcher process is gone (one killed with SIGKILL
// could not remove its own). Looks at the first kMaxStaleScanEntries
// entries only, so a huge temp directory costs a bounded time; directories
// of live processes, of other users, symbolic links and names that do not
// parse are left alone. Returns how many it removed.
inline constexpr int kMaxStaleScanEntries = 4096;
int remove_stale_credential_directories(const std::string& temp_root);

// Owns a credentials directory for one local cluster and makes this process
// the cluster's chief/0 for its channels: `make_fresh` writes a new CA and
// a certificate per task into a private (0700) temporary directory, removed
// on destruction (or by a later make_fresh if this process dies first);
// `use_directory` takes one `psflow certs` wrote and keeps it. While it
// lives, create_channel defaults to chief/0's credentials; the previous
// default comes back on destruction.
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

#include "launcher/cluster_credentials.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/logging.h"
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

// The launcher's pid in a fresh directory's name, "psflow-tls-<pid>-...".
std::optional<pid_t> launcher_pid(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, kCredentialsDirPrefix)) return std::nullopt;
  const size_t dash = name.find('-');
  if (dash == absl::string_view::npos) return std::nullopt;
  int pid = 0;
  if (!absl::SimpleAtoi(name.substr(0, dash), &pid) || pid <= 0) return std::nullopt;
  return static_cast<pid_t>(pid);
}

}  // namespace

int remove_stale_credential_directories(const std::string& temp_root) {
  std::error_code error;
  std::filesystem::directory_iterator entries(temp_root, error);
  if (error) return 0;
  int removed = 0;
  int scanned = 0;
  for (const std::filesystem::directory_entry& entry : entries) {
    if (++scanned > kMaxStaleScanEntries) break;
    const std::optional<pid_t> pid = launcher_pid(entry.path().filename().string());
    if (!pid.has_value()) continue;
    struct stat info {};
    // lstat: a symbolic link planted under the name is not followed.
    if (::lstat(entry.path().c_str(), &info) != 0 || !S_ISDIR(info.st_mode) ||
        info.st_uid != ::geteuid()) {
      continue;
    }
    // ESRCH: no such process. EPERM means it lives (as another user).
    if (::kill(*pid, 0) == 0 || errno != ESRCH) continue;
    std::filesystem::remove_all(entry.path(), error);
    if (error) continue;
    PSFLOW_LOG(Info, "removed ", entry.path().string(),
               ", the credentials of a local cluster whose launcher (pid ", *pid, ") is gone");
    ++removed;
  }
  return removed;
}

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
  (void)remove_stale_credential_directories(temp_directory_root());
  PSFLOW_ASSIGN_OR_RETURN(std::string dir, make_private_temp_directory(absl::StrCat(
                                               kCredentialsDirPrefix, ::getpid(), "-")));
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

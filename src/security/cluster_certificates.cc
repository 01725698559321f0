#include "security/cluster_certificates.h"

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/status_macros.h"
#include "security/private_file.h"
#include "security/task_identity_names.h"

namespace psflow::internal {
namespace {

// "host:port" / "[v6]:port" -> host.
absl::StatusOr<std::string> address_host(std::string_view address) {
  if (!address.empty() && address.front() == '[') {
    const size_t close = address.find(']');
    if (close != std::string_view::npos && close + 1 < address.size() &&
        address[close + 1] == ':') {
      return std::string(address.substr(1, close - 1));
    }
  } else if (const size_t colon = address.rfind(':');
             colon != std::string_view::npos && colon > 0 && address.find(':') == colon) {
    return std::string(address.substr(0, colon));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "address '", av(address), "' is not host:port (or [ipv6]:port); fix it in the cluster"));
}

}  // namespace

absl::StatusOr<std::vector<CertifiedTask>> certified_tasks(const ClusterSpec& spec) {
  std::vector<CertifiedTask> tasks;
  for (const std::string& job : spec.jobs()) {
    for (int index : spec.task_indices(job)) {
      PSFLOW_ASSIGN_OR_RETURN(std::string address, spec.task_address(job, index));
      PSFLOW_ASSIGN_OR_RETURN(std::string host, address_host(address));
      tasks.push_back({job, index, std::move(host)});
    }
  }
  return tasks;
}

absl::StatusOr<std::vector<std::string>> write_cluster_certificates(
    const std::vector<CertifiedTask>& tasks, const std::string& dir,
    const ClusterCertificatesOptions& options) {
  PSFLOW_RETURN_IF_ERROR(make_private_directory(dir));
  const std::filesystem::path root(dir);
  // Everything is made in memory first, so that a failure writes nothing.
  std::vector<std::pair<std::string, std::string>> files;
  PSFLOW_ASSIGN_OR_RETURN(CertifiedKey ca,
                          make_certificate_authority(options.ca_name, options.ca_validity));
  files.emplace_back((root / kCaCertFile).string(), ca.cert_pem);
  files.emplace_back((root / kCaKeyFile).string(), ca.key_pem);
  for (const CertifiedTask& task : tasks) {
    PSFLOW_ASSIGN_OR_RETURN(CertifiedKey cert,
                            issue_task_certificate(ca, task.job, task.index, task.host,
                                                   options.task_validity, options.loopback_names));
    const std::string stem = task_file_stem(task.job, task.index);
    files.emplace_back((root / (stem + ".crt")).string(), std::move(cert.cert_pem));
    files.emplace_back((root / (stem + ".key")).string(), std::move(cert.key_pem));
  }
  if (!options.force) {
    for (const auto& [path, contents] : files) {
      std::error_code error;
      if (std::filesystem::exists(path, error)) {
        return absl::AlreadyExistsError(
            absl::StrCat(path,
                         " exists; remove it, choose another --out directory, or pass --force to "
                         "replace the cluster's credentials"));
      }
    }
  }
  std::vector<std::string> written;
  for (const auto& [path, contents] : files) {
    PSFLOW_RETURN_IF_ERROR(write_private_file(path, contents, options.force));
    written.push_back(path);
  }
  return written;
}

}  // namespace psflow::internal

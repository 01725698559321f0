// A cluster's credentials directory: what `psflow certs` writes and what the
// embedded local cluster makes for each run.
#ifndef PSFLOW_SECURITY_CLUSTER_CERTIFICATES_H_
#define PSFLOW_SECURITY_CLUSTER_CERTIFICATES_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "psflow/cluster_spec.h"
#include "security/certificate_authority.h"

namespace psflow::internal {

// One task to certify.
// Thread-safety: a value type.
struct CertifiedTask {
  std::string job;
  int index = 0;
  std::string host;  // The address host, without port or brackets.
};

// Every task of `spec` (chief and evaluator included), with its host.
// INVALID_ARGUMENT for an address without a port.
[[nodiscard]] absl::StatusOr<std::vector<CertifiedTask>> certified_tasks(const ClusterSpec& spec);

// Thread-safety: a value type.
struct ClusterCertificatesOptions {
  // Replace existing files; otherwise an existing file is ALREADY_EXISTS
  // and nothing is written.
  bool force = false;
  absl::Duration ca_validity = kDefaultCaValidity;
  absl::Duration task_validity = kDefaultTaskCertValidity;
  // Subject CN of the CA.
  std::string ca_name = "psflow cluster CA";
  // Certify every task for the loopback names too (subject_alt_names).
  bool loopback_names = false;
};

// Creates `dir` (0700 when new) and writes into it, each file 0600: ca.crt
// and ca.key of a new CA, and <job>-<index>.crt/.key for every task. Checks
// for existing files before writing any. Returns the paths written, in order.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> write_cluster_certificates(
    const std::vector<CertifiedTask>& tasks, const std::string& dir,
    const ClusterCertificatesOptions& options = {});

}  // namespace psflow::internal

#endif  // PSFLOW_SECURITY_CLUSTER_CERTIFICATES_H_

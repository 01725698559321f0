// Making a cluster's certificate authority and its tasks' certificates
// (OpenSSL 3): EC P-256 keys, SHA-256 signatures.
#ifndef PSFLOW_SECURITY_CERTIFICATE_AUTHORITY_H_
#define PSFLOW_SECURITY_CERTIFICATE_AUTHORITY_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace psflow::internal {

inline constexpr absl::Duration kDefaultCaValidity = absl::Hours(24 * 3650);
inline constexpr absl::Duration kDefaultTaskCertValidity = absl::Hours(24 * 3650);

// A certificate and its private key, as PEM text.
// Thread-safety: a value type.
struct CertifiedKey {
  std::string cert_pem;
  std::string key_pem;
};

// A self-signed CA (basicConstraints CA:TRUE, keyCertSign) with Subject CN
// `common_name`, valid from a minute ago for `validity`.
[[nodiscard]] absl::StatusOr<CertifiedKey> make_certificate_authority(
    std::string_view common_name, absl::Duration validity = kDefaultCaValidity);

// A certificate for task `index` of `job` at `host`, signed by `ca`:
// Subject CN "<job>/<index>", the subject_alt_names of `host`, extended key
// usage serverAuth and clientAuth (every task both serves and calls);
// `also_loopback` adds the loopback names (subject_alt_names).
// INVALID_ARGUMENT for a CA that does not parse or whose key does not match.
[[nodiscard]] absl::StatusOr<CertifiedKey> issue_task_certificate(
    const CertifiedKey& ca, std::string_view job, int index, std::string_view host,
    absl::Duration validity = kDefaultTaskCertValidity, bool also_loopback = false);

}  // namespace psflow::internal

#endif  // PSFLOW_SECURITY_CERTIFICATE_AUTHORITY_H_

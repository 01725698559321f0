// Loading and checking a task's mutual-TLS credentials.
#ifndef PSFLOW_SECURITY_TLS_CREDENTIALS_H_
#define PSFLOW_SECURITY_TLS_CREDENTIALS_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "psflow/tls_options.h"

namespace psflow::internal {

// The three files of one task.
// Thread-safety: a value type.
struct TlsFiles {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

// Checked credentials as PEM text, ready for gRPC's SSL credentials.
// Thread-safety: a value type.
struct TlsCredentials {
  std::string ca_pem;
  std::string cert_pem;
  std::string key_pem;
  // The certificate's Subject CN ("ps/0"), for logs.
  std::string common_name;
  // The certificate's end of validity as OpenSSL prints it
  // ("Nov 27 06:00:00 2027 GMT"), for --check-config.
  std::string not_after;
};

// The files `options` names for task `index` of `job`: the directory's
// ca.crt, <job>-<index>.crt and .key, or the three files. INVALID_ARGUMENT
// for a directory together with files, for some files but not all three,
// and for empty options.
[[nodiscard]] absl::StatusOr<TlsFiles> tls_files(const TlsOptions& options, std::string_view job,
                                                 int index);

// Reads and checks the files: each exists and parses, the key matches the
// certificate, the certificate is signed by the CA and neither has expired
// nor is valid only in the future. A key every user may read is a warning
// naming chmod 600 (group access is accepted, as Kubernetes' fsGroup needs
// it). Errors name the file and the fix (`psflow certs`).
[[nodiscard]] absl::StatusOr<TlsCredentials> load_tls_credentials(const TlsFiles& files);

// OK when `tls` is the certificate of task `index` of `job`: its Subject CN
// is "<job>/<index>". FAILED_PRECONDITION naming both names and the fix
// otherwise (peers would authorise the task by the other name).
[[nodiscard]] absl::Status check_task_common_name(const TlsCredentials& tls, std::string_view job,
                                                  int index);

}  // namespace psflow::internal

#endif  // PSFLOW_SECURITY_TLS_CREDENTIALS_H_

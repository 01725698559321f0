#include "server/task_transport.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/status_macros.h"
#include "security/task_identity_names.h"

namespace psflow::internal {

absl::StatusOr<TaskTransport> plan_transport(const TlsOptions& options, std::string_view job,
                                             int index, std::string_view listen_host) {
  TaskTransport out;
  const std::string name = task_common_name(job, index);
  if (!options.empty()) {
    PSFLOW_ASSIGN_OR_RETURN(TlsFiles files, tls_files(options, job, index));
    PSFLOW_ASSIGN_OR_RETURN(TlsCredentials tls, load_tls_credentials(files));
    out.description =
        absl::StrCat("mTLS on (certificate ", files.cert_file, ", CN ", tls.common_name,
                     "; clients must be signed by ", files.ca_file, ")");
    out.tls = std::make_shared<const TlsCredentials>(std::move(tls));
    return out;
  }
  if (is_loopback_name(listen_host)) {
    out.description =
        "mTLS off: plaintext on loopback without credentials (--tls-dir turns TLS on)";
    return out;
  }
  if (options.insecure) {
    out.insecure_exposed = true;
    out.description = absl::StrCat("mTLS off (--insecure): plaintext on ", av(listen_host),
                                   ", anyone who reaches this port can read and change everything");
    return out;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      name, " listens on ", av(listen_host),
      ", which is not loopback, and has no TLS credentials: make them with `psflow certs "
      "--tf-config ... --out DIR` and pass --tls-dir DIR (or set PSFLOW_TLS_DIR, or pass "
      "--tls-ca/--tls-cert/--tls-key), or pass --insecure to serve without authentication"));
}

}  // namespace psflow::internal

// How a task's server secures its port: mutual TLS, or plaintext where that
// is allowed (loopback, or --insecure).
#ifndef PSFLOW_SERVER_TASK_TRANSPORT_H_
#define PSFLOW_SERVER_TASK_TRANSPORT_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "psflow/tls_options.h"
#include "security/tls_credentials.h"

namespace psflow::internal {

// Thread-safety: a value type.
struct TaskTransport {
  // Null: plaintext.
  std::shared_ptr<const TlsCredentials> tls;
  // Plaintext on a non-loopback address, by --insecure: warned about at
  // start and on every new connection.
  bool insecure_exposed = false;
  // One line for the log: "mTLS (ps/0, CA ...)", "plaintext (loopback ...)".
  std::string description;
};

// The transport of task `index` of `job` listening on `listen_host`: TLS
// when `options` names credentials (loaded and checked), plaintext on a
// loopback host, plaintext with a warning with options.insecure, else
// FAILED_PRECONDITION naming the flags, PSFLOW_TLS_DIR and `psflow certs`.
[[nodiscard]] absl::StatusOr<TaskTransport> plan_transport(const TlsOptions& options,
                                                           std::string_view job, int index,
                                                           std::string_view listen_host);

}  // namespace psflow::internal

#endif  // PSFLOW_SERVER_TASK_TRANSPORT_H_

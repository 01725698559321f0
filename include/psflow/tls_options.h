// psflow::TlsOptions: where a task finds its mutual-TLS credentials.
#ifndef PSFLOW_TLS_OPTIONS_H_
#define PSFLOW_TLS_OPTIONS_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace psflow {

// A task's credentials: the cluster's CA certificate, which every peer must
// be signed by, and the task's own certificate (Subject CN "<job>/<index>")
// and private key. Either a directory as `psflow certs` writes it (ca.crt,
// <job>-<index>.crt, <job>-<index>.key; the task's own files are picked by
// its job and index) or the three files named one by one (e.g. a mounted
// Kubernetes secret), not both.
// Thread-safety: a value type. Initialized members, so that designated
// initializers may name only some ({.dir = "certs"}).
struct TlsOptions {
  std::string dir = {};
  std::string ca_file = {};
  std::string cert_file = {};
  std::string key_file = {};
  // Serve and call without TLS even where the address is not loopback:
  // anyone who reaches the port can read and change everything. Logged as
  // a warning at start and for every new connection.
  bool insecure = false;

  // True when neither a directory nor files are named.
  [[nodiscard]] bool empty() const {
    return dir.empty() && ca_file.empty() && cert_file.empty() && key_file.empty();
  }
};

// Makes every channel this process opens afterwards (to ps and worker tasks,
// health checks, status) present the credentials of task `index` of `job`
// and verify its peer against the CA: what `psflow train` and `psflow
// server` do at start. Empty options make them plaintext again. Errors
// (INVALID_ARGUMENT / NOT_FOUND / FAILED_PRECONDITION) name the file and the
// fix: a missing file, a key that does not match its certificate, a
// certificate not signed by the CA, an expired one. Thread-safe, but meant
// to be called once at start: channels made before keep what they had.
[[nodiscard]] absl::Status set_process_tls(const TlsOptions& options, std::string_view job,
                                           int index);

}  // namespace psflow

#endif  // PSFLOW_TLS_OPTIONS_H_

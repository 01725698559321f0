// The transport-security flags of the psflow commands: --tls-dir,
// --tls-ca/--tls-cert/--tls-key, --insecure, and PSFLOW_TLS_DIR.
#ifndef PSFLOW_CLI_TLS_FLAGS_H_
#define PSFLOW_CLI_TLS_FLAGS_H_

#include <CLI/CLI.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "psflow/tls_options.h"

namespace psflow::internal {

inline constexpr char kTlsDirEnv[] = "PSFLOW_TLS_DIR";

// The flags, as parsed.
// Thread-safety: a value type.
struct TlsFlags {
  std::string dir;
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  bool insecure = false;
};

// Declares --tls-dir, --tls-ca, --tls-cert, --tls-key and --insecure.
void add_tls_flags(CLI::App& app, TlsFlags& flags);

// The options the flags ask for, PSFLOW_TLS_DIR standing in for --tls-dir
// when no credentials flag is given. INVALID_ARGUMENT naming the flags for
// --insecure together with credentials flags, and for a directory together
// with files. --insecure also ignores PSFLOW_TLS_DIR.
[[nodiscard]] absl::StatusOr<TlsOptions> tls_options_from_flags(const TlsFlags& flags);

}  // namespace psflow::internal

#endif  // PSFLOW_CLI_TLS_FLAGS_H_

#include "cli/tls_flags.h"

#include <cstdlib>

namespace psflow::internal {

void add_tls_flags(CLI::App& app, TlsFlags& flags) {
  app.add_option(
      "--tls-dir", flags.dir,
      "Mutual TLS with the credentials in this directory (ca.crt, "
      "<job>-<index>.crt/.key, as `psflow certs` writes them); default: $PSFLOW_TLS_DIR");
  app.add_option("--tls-ca", flags.ca_file, "Mutual TLS: the cluster's CA certificate file");
  app.add_option("--tls-cert", flags.cert_file, "Mutual TLS: this task's certificate file");
  app.add_option("--tls-key", flags.key_file, "Mutual TLS: this task's private key file");
  app.add_flag("--insecure", flags.insecure,
               "Plaintext without authentication even on a non-loopback address (anyone who "
               "reaches a port can read and change everything); warned about in the log");
}

absl::StatusOr<TlsOptions> tls_options_from_flags(const TlsFlags& flags) {
  TlsOptions options{flags.dir, flags.ca_file, flags.cert_file, flags.key_file, flags.insecure};
  if (flags.insecure) {
    if (!options.empty()) {
      return absl::InvalidArgumentError(
          "--insecure does not combine with --tls-dir/--tls-ca/--tls-cert/--tls-key: drop "
          "--insecure to use the credentials, or drop them to run in plaintext");
    }
    return options;
  }
  if (options.empty()) {
    const char* dir = std::getenv(kTlsDirEnv);
    if (dir != nullptr && *dir != '\0') options.dir = dir;
  }
  const bool any_file =
      !options.ca_file.empty() || !options.cert_file.empty() || !options.key_file.empty();
  if (!options.dir.empty() && any_file) {
    return absl::InvalidArgumentError(
        "--tls-dir and --tls-ca/--tls-cert/--tls-key do not combine: name the directory or "
        "the three files");
  }
  if (any_file &&
      (options.ca_file.empty() || options.cert_file.empty() || options.key_file.empty())) {
    return absl::InvalidArgumentError(
        "--tls-ca, --tls-cert and --tls-key go together: name all three (the CA certificate, "
        "this task's certificate and its key), or a directory with --tls-dir");
  }
  return options;
}

}  // namespace psflow::internal

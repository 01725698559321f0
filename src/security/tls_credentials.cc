#include "security/tls_credentials.h"

#include <openssl/err.h>
#include <openssl/x509_vfy.h>
#include <sys/stat.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/logging.h"
#include "base/strings.h"
#include "psflow/status_macros.h"
#include "security/openssl_util.h"
#include "security/private_file.h"
#include "security/task_identity_names.h"

namespace psflow::internal {
namespace {

constexpr char kFix[] = "make the cluster's credentials with `psflow certs`";

absl::StatusOr<std::string> read_credential(const std::string& path, std::string_view what,
                                            bool secret) {
  absl::StatusOr<std::string> text = read_small_file(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("TLS ", av(what), ": ", text.status().message(), "; ", kFix,
                                     " (or name the right file)"));
  }
  // Group access is accepted: Kubernetes gives a secret volume's files to
  // the pod's fsGroup.
  struct stat info {};
  if (secret && ::stat(path.c_str(), &info) == 0 && (info.st_mode & 007) != 0) {
    PSFLOW_LOG(Warning, "TLS ", av(what), " ", path, " is accessible by every user (mode ",
               absl::StrFormat("%03o", info.st_mode & 0777), "): chmod 600 ", path);
  }
  return text;
}

std::string common_name(X509* cert) {
  char text[256] = {};
  if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, text, sizeof(text)) <
      0) {
    return "";
  }
  return text;
}

absl::Status check_dates(X509* cert, std::string_view origin) {
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(av(origin), " has expired; ", kFix, " (or renew it with your CA)"));
  }
  if (X509_cmp_current_time(X509_get0_notBefore(cert)) >= 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        av(origin),
        " is not valid yet (its start date is in the future): check this machine's clock"));
  }
  return absl::OkStatus();
}

// OK when `cert` chains to `ca` alone.
absl::Status verify_signed_by(X509* cert, X509* ca, const TlsFiles& files) {
  std::unique_ptr<X509_STORE, OpenSslFree> store(X509_STORE_new());
  std::unique_ptr<X509_STORE_CTX, OpenSslFree> ctx(X509_STORE_CTX_new());
  if (store == nullptr || ctx == nullptr || X509_STORE_add_cert(store.get(), ca) != 1 ||
      X509_STORE_CTX_init(ctx.get(), store.get(), cert, nullptr) != 1) {
    return openssl_error("cannot set up certificate verification");
  }
  const int ok = X509_verify_cert(ctx.get());
  const int error = X509_STORE_CTX_get_error(ctx.get());
  ERR_clear_error();
  if (ok == 1) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("TLS certificate ", files.cert_file, " is not signed by the CA ", files.ca_file,
                   " (", X509_verify_cert_error_string(error),
                   "): use the certificate and CA made together by one `psflow certs` run"));
}

}  // namespace

absl::StatusOr<TlsFiles> tls_files(const TlsOptions& options, std::string_view job, int index) {
  const bool any_file =
      !options.ca_file.empty() || !options.cert_file.empty() || !options.key_file.empty();
  if (!options.dir.empty() && any_file) {
    return absl::InvalidArgumentError(
        "TLS: give either a credentials directory (--tls-dir / PSFLOW_TLS_DIR) or the three files "
        "(--tls-ca, --tls-cert, --tls-key), not both");
  }
  if (!options.dir.empty()) {
    const std::filesystem::path dir(options.dir);
    const std::string stem = task_file_stem(job, index);
    return TlsFiles{(dir / kCaCertFile).string(), (dir / (stem + ".crt")).string(),
                    (dir / (stem + ".key")).string()};
  }
  if (options.ca_file.empty() || options.cert_file.empty() || options.key_file.empty()) {
    return absl::InvalidArgumentError(
        "TLS: --tls-ca, --tls-cert and --tls-key go together (the CA certificate, this task's "
        "certificate and its key); name all three, or a directory with --tls-dir");
  }
  return TlsFiles{options.ca_file, options.cert_file, options.key_file};
}

absl::StatusOr<TlsCredentials> load_tls_credentials(const TlsFiles& files) {
  TlsCredentials out;
  PSFLOW_ASSIGN_OR_RETURN(out.ca_pem, read_credential(files.ca_file, "CA certificate", false));
  PSFLOW_ASSIGN_OR_RETURN(out.cert_pem, read_credential(files.cert_file, "certificate", false));
  PSFLOW_ASSIGN_OR_RETURN(out.key_pem, read_credential(files.key_file, "key", true));
  const std::string ca_origin = absl::StrCat("TLS CA certificate ", files.ca_file);
  const std::string cert_origin = absl::StrCat("TLS certificate ", files.cert_file);
  PSFLOW_ASSIGN_OR_RETURN(X509Ptr ca, parse_certificate(out.ca_pem, ca_origin));
  PSFLOW_ASSIGN_OR_RETURN(X509Ptr cert, parse_certificate(out.cert_pem, cert_origin));
  PSFLOW_ASSIGN_OR_RETURN(KeyPtr key,
                          parse_private_key(out.key_pem, absl::StrCat("TLS key ", files.key_file)));
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat("TLS key ", files.key_file, " does not match the certificate ",
                     files.cert_file, ": use the .key written with that .crt"));
  }
  PSFLOW_RETURN_IF_ERROR(check_dates(ca.get(), ca_origin));
  PSFLOW_RETURN_IF_ERROR(check_dates(cert.get(), cert_origin));
  PSFLOW_RETURN_IF_ERROR(verify_signed_by(cert.get(), ca.get(), files));
  out.common_name = common_name(cert.get());
  if (BioPtr bio(BIO_new(BIO_s_mem()));
      bio != nullptr && ASN1_TIME_print(bio.get(), X509_get0_notAfter(cert.get())) == 1) {
    char* data = nullptr;
    const long size = BIO_get_mem_data(bio.get(), &data);
    if (data != nullptr && size > 0) out.not_after.assign(data, static_cast<size_t>(size));
  }
  ERR_clear_error();
  return out;
}

absl::Status check_task_common_name(const TlsCredentials& tls, std::string_view job, int index) {
  const std::string expected = task_common_name(job, index);
  if (tls.common_name == expected) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "TLS certificate names task \"", tls.common_name, "\" (Subject CN) but this task is \"",
      expected, "\": give this task its own certificate (", task_file_stem(job, index),
      ".crt and .key from `psflow certs`)"));
}

}  // namespace psflow::internal

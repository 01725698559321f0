// Owning handles for OpenSSL objects and the error text of its failures.
#ifndef PSFLOW_SECURITY_OPENSSL_UTIL_H_
#define PSFLOW_SECURITY_OPENSSL_UTIL_H_

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace psflow::internal {

// Thread-safety: stateless.
struct OpenSslFree {
  void operator()(BIO* p) const { BIO_free_all(p); }
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(X509_STORE* p) const { X509_STORE_free(p); }
  void operator()(X509_STORE_CTX* p) const { X509_STORE_CTX_free(p); }
};
using BioPtr = std::unique_ptr<BIO, OpenSslFree>;
using KeyPtr = std::unique_ptr<EVP_PKEY, OpenSslFree>;
using X509Ptr = std::unique_ptr<X509, OpenSslFree>;

// INTERNAL `what` with OpenSSL's queued errors appended (and cleared).
[[nodiscard]] absl::Status openssl_error(std::string_view what);

// PEM text of a certificate / of a private key (PKCS#8, unencrypted).
[[nodiscard]] absl::StatusOr<std::string> certificate_pem(X509* cert);
[[nodiscard]] absl::StatusOr<std::string> private_key_pem(EVP_PKEY* key);

// The first certificate / private key in PEM text; INVALID_ARGUMENT naming
// `origin` (a file name) when there is none.
[[nodiscard]] absl::StatusOr<X509Ptr> parse_certificate(std::string_view pem,
                                                        std::string_view origin);
[[nodiscard]] absl::StatusOr<KeyPtr> parse_private_key(std::string_view pem,
                                                       std::string_view origin);

}  // namespace psflow::internal

#endif  // PSFLOW_SECURITY_OPENSSL_UTIL_H_

#include "security/openssl_util.h"

#include <openssl/err.h>
#include <openssl/pem.h>

#include "absl/strings/str_cat.h"
#include "base/strings.h"

namespace psflow::internal {
namespace {

absl::StatusOr<std::string> bio_text(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  if (size <= 0 || data == nullptr) return openssl_error("empty PEM output");
  return std::string(data, static_cast<size_t>(size));
}

BioPtr read_bio(std::string_view pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

}  // namespace

absl::Status openssl_error(std::string_view what) {
  std::string message(what);
  // Bounded: OpenSSL's queue is finite, and a few entries say enough.
  for (int i = 0; i < 8; ++i) {
    const unsigned long code = ERR_get_error();
    if (code == 0) break;
    char text[256];
    ERR_error_string_n(code, text, sizeof(text));
    absl::StrAppend(&message, i == 0 ? ": " : "; ", text);
  }
  ERR_clear_error();
  return absl::InternalError(message);
}

absl::StatusOr<std::string> certificate_pem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || PEM_write_bio_X509(bio.get(), cert) != 1) {
    return openssl_error("cannot encode a certificate as PEM");
  }
  return bio_text(bio.get());
}

absl::StatusOr<std::string> private_key_pem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return openssl_error("cannot encode a private key as PEM");
  }
  return bio_text(bio.get());
}

absl::StatusOr<X509Ptr> parse_certificate(std::string_view pem, std::string_view origin) {
  BioPtr bio = read_bio(pem);
  X509Ptr cert(bio == nullptr ? nullptr : PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (cert == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(av(origin), " holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\")"));
  }
  return cert;
}

absl::StatusOr<KeyPtr> parse_private_key(std::string_view pem, std::string_view origin) {
  BioPtr bio = read_bio(pem);
  KeyPtr key(bio == nullptr ? nullptr
                            : PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (key == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        av(origin), " holds no unencrypted PEM private key (\"-----BEGIN PRIVATE KEY-----\")"));
  }
  return key;
}

}  // namespace psflow::internal

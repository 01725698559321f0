#include "security/certificate_authority.h"

#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "psflow/status_macros.h"
#include "security/openssl_util.h"
#include "security/task_identity_names.h"

namespace psflow::internal {
namespace {

absl::StatusOr<KeyPtr> new_ec_key() {
  KeyPtr key(EVP_EC_gen("P-256"));
  if (key == nullptr) return openssl_error("cannot generate an EC P-256 key");
  return key;
}

// A new certificate for `key` with a random 127-bit serial, Subject CN
// `common_name`, valid from a minute ago (clock skew) for `validity`.
absl::StatusOr<X509Ptr> new_certificate(EVP_PKEY* key, std::string_view common_name,
                                        absl::Duration validity) {
  X509Ptr cert(X509_new());
  if (cert == nullptr || X509_set_version(cert.get(), X509_VERSION_3) != 1) {
    return openssl_error("cannot create a certificate");
  }
  std::unique_ptr<BIGNUM, decltype(&BN_free)> serial(BN_new(), &BN_free);
  if (serial == nullptr || BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) == nullptr) {
    return openssl_error("cannot draw a certificate serial number");
  }
  const long seconds = static_cast<long>(absl::ToInt64Seconds(validity));
  X509_NAME* name = X509_get_subject_name(cert.get());
  const std::string cn(common_name);
  if (X509_gmtime_adj(X509_getm_notBefore(cert.get()), -60) == nullptr ||
      X509_time_adj_ex(X509_getm_notAfter(cert.get()), static_cast<int>(seconds / 86400),
                       seconds % 86400, nullptr) == nullptr ||
      X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                                 0) != 1 ||
      X509_set_pubkey(cert.get(), key) != 1) {
    return openssl_error(absl::StrCat("cannot fill the certificate of ", cn));
  }
  return cert;
}

absl::Status add_extension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_nconf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) {
    return openssl_error(absl::StrCat("cannot make the extension ", OBJ_nid2sn(nid), "=", value));
  }
  const int added = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (added != 1) return openssl_error(absl::StrCat("cannot add ", OBJ_nid2sn(nid)));
  return absl::OkStatus();
}

absl::StatusOr<CertifiedKey> sign_and_encode(X509* cert, EVP_PKEY* signer, EVP_PKEY* key) {
  if (X509_sign(cert, signer, EVP_sha256()) == 0) {
    return openssl_error("cannot sign a certificate");
  }
  CertifiedKey out;
  PSFLOW_ASSIGN_OR_RETURN(out.cert_pem, certificate_pem(cert));
  PSFLOW_ASSIGN_OR_RETURN(out.key_pem, private_key_pem(key));
  return out;
}

}  // namespace

absl::StatusOr<CertifiedKey> make_certificate_authority(std::string_view common_name,
                                                        absl::Duration validity) {
  PSFLOW_ASSIGN_OR_RETURN(KeyPtr key, new_ec_key());
  PSFLOW_ASSIGN_OR_RETURN(X509Ptr cert, new_certificate(key.get(), common_name, validity));
  // Self-signed: the issuer is the subject.
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get())) != 1) {
    return openssl_error("cannot set the CA's issuer");
  }
  PSFLOW_RETURN_IF_ERROR(
      add_extension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE"));
  PSFLOW_RETURN_IF_ERROR(
      add_extension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign"));
  PSFLOW_RETURN_IF_ERROR(add_extension(cert.get(), cert.get(), NID_subject_key_identifier, "hash"));
  return sign_and_encode(cert.get(), key.get(), key.get());
}

absl::StatusOr<CertifiedKey> issue_task_certificate(const CertifiedKey& ca, std::string_view job,
                                                    int index, std::string_view host,
                                                    absl::Duration validity, bool also_loopback) {
  PSFLOW_ASSIGN_OR_RETURN(X509Ptr ca_cert, parse_certificate(ca.cert_pem, "the CA certificate"));
  PSFLOW_ASSIGN_OR_RETURN(KeyPtr ca_key, parse_private_key(ca.key_pem, "the CA key"));
  if (X509_check_private_key(ca_cert.get(), ca_key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        "the CA key does not match the CA certificate; use the ca.key made with this ca.crt");
  }
  PSFLOW_ASSIGN_OR_RETURN(KeyPtr key, new_ec_key());
  PSFLOW_ASSIGN_OR_RETURN(X509Ptr cert,
                          new_certificate(key.get(), task_common_name(job, index), validity));
  if (X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get())) != 1) {
    return openssl_error("cannot set a certificate's issuer");
  }
  X509* c = cert.get();
  X509* issuer = ca_cert.get();
  PSFLOW_RETURN_IF_ERROR(add_extension(c, issuer, NID_basic_constraints, "critical,CA:FALSE"));
  PSFLOW_RETURN_IF_ERROR(
      add_extension(c, issuer, NID_key_usage, "critical,digitalSignature,keyAgreement"));
  PSFLOW_RETURN_IF_ERROR(add_extension(c, issuer, NID_ext_key_usage, "serverAuth,clientAuth"));
  PSFLOW_RETURN_IF_ERROR(add_extension(c, issuer, NID_subject_key_identifier, "hash"));
  PSFLOW_RETURN_IF_ERROR(add_extension(c, issuer, NID_authority_key_identifier, "keyid:always"));
  const std::vector<std::string> names = subject_alt_names(host, also_loopback);
  if (!names.empty()) {
    PSFLOW_RETURN_IF_ERROR(
        add_extension(c, issuer, NID_subject_alt_name, absl::StrJoin(names, ",")));
  }
  return sign_and_encode(c, ca_key.get(), key.get());
}

}  // namespace psflow::internal

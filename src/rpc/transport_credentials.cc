#include "rpc/transport_credentials.h"

#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "base/logging.h"
#include "psflow/status_macros.h"
#include "psflow/tls_options.h"

namespace psflow {
namespace internal {
namespace {

// The process's default credentials.
// Thread-safety: every method may run concurrently.
class DefaultTls {
 public:
  void set(std::shared_ptr<const TlsCredentials> tls) {
    absl::MutexLock lock(&mu_);
    tls_ = std::move(tls);
  }
  std::shared_ptr<const TlsCredentials> get() const {
    absl::MutexLock lock(&mu_);
    return tls_;
  }

 private:
  mutable absl::Mutex mu_;
  std::shared_ptr<const TlsCredentials> tls_ ABSL_GUARDED_BY(mu_);
};

DefaultTls& default_tls_holder() {
  static auto* holder = new DefaultTls();
  return *holder;
}

}  // namespace

void set_default_tls(std::shared_ptr<const TlsCredentials> tls) {
  default_tls_holder().set(std::move(tls));
}

std::shared_ptr<const TlsCredentials> default_tls() { return default_tls_holder().get(); }

std::shared_ptr<grpc::ChannelCredentials> channel_credentials(const TlsCredentials* tls) {
  if (tls == nullptr) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = tls->ca_pem;
  options.pem_private_key = tls->key_pem;
  options.pem_cert_chain = tls->cert_pem;
  return grpc::SslCredentials(options);
}

std::shared_ptr<grpc::ServerCredentials> server_credentials(const TlsCredentials* tls) {
  if (tls == nullptr) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(
      GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = tls->ca_pem;
  options.pem_key_cert_pairs.push_back({tls->key_pem, tls->cert_pem});
  return grpc::SslServerCredentials(options);
}

}  // namespace internal

absl::Status set_process_tls(const TlsOptions& options, std::string_view job, int index) {
  if (options.empty()) {
    internal::set_default_tls(nullptr);
    return absl::OkStatus();
  }
  PSFLOW_ASSIGN_OR_RETURN(internal::TlsFiles files, internal::tls_files(options, job, index));
  PSFLOW_ASSIGN_OR_RETURN(internal::TlsCredentials tls, internal::load_tls_credentials(files));
  internal::set_default_tls(std::make_shared<const internal::TlsCredentials>(std::move(tls)));
  return absl::OkStatus();
}

}  // namespace psflow

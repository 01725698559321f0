// gRPC credentials for psflow's channels and servers: mutual TLS against the
// cluster's CA, or plaintext.
#ifndef PSFLOW_RPC_TRANSPORT_CREDENTIALS_H_
#define PSFLOW_RPC_TRANSPORT_CREDENTIALS_H_

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include <memory>

#include "security/tls_credentials.h"

namespace psflow::internal {

// The credentials create_channel uses when its options name none: those of
// this process's task, set once at start (set_process_tls); null means
// plaintext. Thread-safe (a mutex guards the pointer); channels made
// earlier keep the credentials they were made with.
void set_default_tls(std::shared_ptr<const TlsCredentials> tls);
[[nodiscard]] std::shared_ptr<const TlsCredentials> default_tls();

// SSL channel credentials presenting `tls`'s certificate and verifying the
// server against its CA; plaintext for null.
[[nodiscard]] std::shared_ptr<grpc::ChannelCredentials> channel_credentials(
    const TlsCredentials* tls);

// SSL server credentials that require and verify a client certificate
// signed by `tls`'s CA (GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
// plaintext for null.
[[nodiscard]] std::shared_ptr<grpc::ServerCredentials> server_credentials(
    const TlsCredentials* tls);

}  // namespace psflow::internal

#endif  // PSFLOW_RPC_TRANSPORT_CREDENTIALS_H_

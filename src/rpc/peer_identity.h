// Who is calling: the task named by the peer's certificate.
#ifndef PSFLOW_RPC_PEER_IDENTITY_H_
#define PSFLOW_RPC_PEER_IDENTITY_H_

#include <string>
#include <string_view>

#include "grpcpp/server_context.h"

namespace psflow::internal {

// The caller of one RPC. Over mutual TLS the peer's certificate (verified
// against the cluster's CA by gRPC before any handler runs) names its task
// in its Subject CN, "<job>/<index>"; that name is the caller's identity.
struct PeerIdentity {
  // "chief", "ps", "worker", "evaluator", ...; empty when the CN does not
  // name a task (an authenticated peer with no role) or the peer is
  // unauthenticated.
  std::string job;
  // The task's index; -1 when `job` is empty.
  int index = -1;
  // Whether the peer presented a certificate the server verified. False
  // over an insecure channel, where no role is enforced.
  bool authenticated = false;
  // The certificate's CN as presented (bounded and escaped), for messages;
  // empty when unauthenticated.
  std::string common_name;
  // The connection's peer address as gRPC reports it ("ipv4:127.0.0.1:5123").
  std::string peer;

  // Whether the CN named a task (authenticated with a role).
  [[nodiscard]] bool has_role() const { return authenticated && !job.empty(); }
  // How messages name the caller: "worker/1", "an unnamed peer (CN
  // 'x')", or "an unauthenticated peer (ipv4:...)".
  [[nodiscard]] std::string describe() const;
  // Who owns what this caller creates (worker values): the task name when
  // authenticated ("cn:worker/1", "cn:?<cn>" for a CN with no role);
  // unauthenticated callers are scoped by the peer's host only, since a
  // client's port changes whenever gRPC reconnects ("host:ipv4:127.0.0.1").
  [[nodiscard]] std::string owner() const;
};

// The identity of the caller of `context`'s RPC: authenticated when gRPC's
// auth context carries an "x509_common_name" property (mutual TLS), with
// job and index parsed by identity_from_common_name(); unauthenticated
// otherwise.
[[nodiscard]] PeerIdentity peer_identity(const grpc::ServerContextBase& context);

// An authenticated identity for the certificate CN `common_name`. The CN
// must be exactly "<job>/<index>": job a non-empty name of [a-z0-9_-]
// letters (at most 64), index a decimal in [0, 1000000) without sign or
// leading zeros. Anything else leaves job empty (no role).
[[nodiscard]] PeerIdentity identity_from_common_name(std::string_view common_name);

// Whether a peer address (gRPC's "ipv4:127.0.0.1:5123" form) is on the
// loopback network or a unix socket.
[[nodiscard]] bool is_loopback_peer(std::string_view peer);

}  // namespace psflow::internal

#endif  // PSFLOW_RPC_PEER_IDENTITY_H_

// Client side of talking to a task: channels tuned to fail fast, plus the
// two calls every client needs first (health, GetStatus).
#ifndef PSFLOW_RPC_CHANNEL_H_
#define PSFLOW_RPC_CHANNEL_H_

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "psflow/v1/task.pb.h"
#include "security/tls_credentials.h"

namespace psflow::internal {

// Keepalive: a client pings an idle connection every kKeepaliveTime and
// drops it when no ack arrives within kKeepaliveTimeout, so a task whose
// machine vanished (no RST) is noticed in ~20 s instead of the TCP default
// of hours. Servers must accept pings this often (see kMinPingInterval),
// else they answer with GOAWAY "too_many_pings".
inline constexpr absl::Duration kKeepaliveTime = absl::Seconds(10);
inline constexpr absl::Duration kKeepaliveTimeout = absl::Seconds(10);
inline constexpr absl::Duration kMinPingInterval = absl::Seconds(5);
// Default largest message, matching ServerOptions::max_message_bytes.
inline constexpr int kDefaultMaxMessageBytes = 1 << 30;

struct ChannelOptions {
  // Reconnect backoff after a failed connection attempt: starts at
  // `initial_reconnect_backoff` and grows to `max_reconnect_backoff`, so a
  // task that comes (back) up is reached within about a second.
  absl::Duration initial_reconnect_backoff = absl::Milliseconds(100);
  absl::Duration max_reconnect_backoff = absl::Seconds(1);
  // Longest a single TCP connect may take (a refused connection fails at
  // once; this bounds a peer that silently drops packets).
  absl::Duration connect_timeout = absl::Seconds(5);
  int max_message_bytes = kDefaultMaxMessageBytes;
  // How long a connection may go without answering before its calls fail
  // with UNAVAILABLE: a ping after keepalive_time, dropped after
  // keepalive_timeout without an ack. This is what notices a peer that is
  // paused (SIGSTOP) or whose machine vanished. keepalive_time must stay at
  // or above the servers' kMinPingInterval.
  absl::Duration keepalive_time = kKeepaliveTime;
  absl::Duration keepalive_timeout = kKeepaliveTimeout;
  // Transport security: mutual TLS with `tls` when set, else with the
  // process's credentials (default_tls(), transport_credentials.h), else
  // plaintext. `plaintext` forces plaintext (tests of refusals).
  std::shared_ptr<const TlsCredentials> tls;
  bool plaintext = false;
};

// A channel to `target` ("host:port") with the options above: mutual TLS
// when credentials are set (see ChannelOptions::tls), else plaintext.
// Channels connect lazily; creating one never blocks or fails.
[[nodiscard]] std::shared_ptr<grpc::Channel> create_channel(std::string_view target,
                                                            const ChannelOptions& options = {});

// Prepares a context for one call: the deadline is mandatory so that no call
// can hang. wait_for_ready=false (fail fast) makes a call to a task that is
// down fail at once with UNAVAILABLE; true queues it until the connection is
// up or the deadline passes (for start-up, as TF's GetStatus).
void configure_context(grpc::ClientContext& context, absl::Time deadline,
                       bool wait_for_ready = false);

// Blocks until the task at `target` answers grpc.health.v1 Check with
// SERVING, waiting for it to come up (wait_for_ready) until `deadline`.
// DEADLINE_EXCEEDED when it did not; UNAVAILABLE when it answered
// NOT_SERVING (shutting down). Errors are prefixed with task name and target.
[[nodiscard]] absl::Status wait_for_healthy(std::string_view target, std::string_view task_name,
                                            absl::Time deadline,
                                            const ChannelOptions& options = {});

// Calls GetStatus on the task service of `job` ("ps": VariableService,
// "worker": ExecutorService), failing fast: a task that is down gives
// UNAVAILABLE naming the task at once. INVALID_ARGUMENT for other jobs.
[[nodiscard]] absl::StatusOr<v1::GetStatusResponse> get_status(
    const std::shared_ptr<grpc::Channel>& channel, std::string_view target, std::string_view job,
    int task_index, absl::Time deadline);
[[nodiscard]] absl::StatusOr<v1::GetStatusResponse> get_status(std::string_view target,
                                                               std::string_view job, int task_index,
                                                               absl::Time deadline);

}  // namespace psflow::internal

#endif  // PSFLOW_RPC_CHANNEL_H_

// psflow::Server: one task (ps or worker) of a training cluster.
#ifndef PSFLOW_SERVER_H_
#define PSFLOW_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "psflow/cluster_spec.h"
#include "psflow/tls_options.h"

namespace psflow {

// What a ps does with an update that carries a NaN or an infinity.
// TensorFlow applies it, and from then on the variable is NaN for every
// worker: in asynchronous training one bad step (a corrupt example, an
// overflow) poisons the shared model for good. Updates are the arithmetic
// ops: assign_add / assign_sub, scatter_add / sub / mul / div / min / max,
// and the optimizers' dense and sparse gradients. Values set outright
// (variable creation, assign, scatter_update, checkpoint restore) are
// stored as given under either policy, and a finite update that overflows
// a variable is not caught.
enum class NonFinitePolicy {
  // INVALID_ARGUMENT naming the variable, the op and the first bad element;
  // nothing in the request is applied. The closure fails like any
  // application error, so training stops and says where.
  kReject,
  // Applied as given, as TensorFlow does.
  kAllow,
};

struct ServerOptions {
  // Where to listen, "host:port" ("[v6]:port"; a bracketed IPv4 address is
  // accepted too). Empty: the address the cluster spec names for the task,
  // never every interface unless it says so: a loopback host ("localhost",
  // 127.0.0.0/8, ::1) or an IP literal as given, a name (a Kubernetes
  // service such as "job-ps-0.job.default.svc") resolved to the first of its
  // addresses that belongs to this machine. "0.0.0.0:<port>" or
  // "[::]:<port>" accepts on every interface, deliberately. An explicit
  // address may use another port than the spec (one forwarded by a
  // container runtime); the spec's address stays what clients use.
  std::string bind_address;
  // Largest message accepted or sent, in bytes. gRPC (as of 1.51, and
  // still upstream) receives a message whole before it checks this, so it
  // bounds what a handler sees, not what a hostile client makes the task
  // buffer: max_buffered_bytes does that.
  int max_message_bytes = 1 << 30;
  // The memory gRPC may hold for this task's connections and the messages
  // being received, over all clients (a grpc::ResourceQuota). Past it gRPC
  // cancels the calls whose messages fill its buffers (RESOURCE_EXHAUSTED
  // "Buffers full") and closes idle connections, so that concurrent
  // oversized or slow-drip messages cannot take the machine's memory. 0:
  // 2 x max_message_bytes + 256 MiB, which lets two messages of the
  // largest size arrive at once.
  int64_t max_buffered_bytes = 0;
  // Connections, so that clients that connect and go silent cannot hold
  // sockets and memory for good. A client must complete the HTTP/2
  // handshake (its preface and SETTINGS) within handshake_timeout. The
  // server pings a connection every keepalive_time and closes it when no
  // ack arrives within keepalive_timeout (a half-open connection: the peer
  // vanished or stopped reading). A connection without calls for
  // max_connection_idle is closed with GOAWAY; psflow's clients reconnect
  // on their next call, transparently. A connection older than
  // max_connection_age is closed once its calls finish (infinite: never;
  // the default, as long-running computes and streams must not be cut).
  absl::Duration handshake_timeout = absl::Seconds(20);
  absl::Duration keepalive_time = absl::Seconds(30);
  absl::Duration keepalive_timeout = absl::Seconds(20);
  absl::Duration max_connection_idle = absl::Minutes(30);
  absl::Duration max_connection_age = absl::InfiniteDuration();
  // Share the port with other sockets of this user that set SO_REUSEPORT.
  // Off by default so that a second server on the same port fails with
  // UNAVAILABLE instead of silently splitting the connections; LocalCluster
  // turns it on for its tasks, whose ports it keeps reserved that way.
  bool reuse_port = false;
  // How long stop() lets running calls finish before cancelling them.
  absl::Duration shutdown_grace = absl::Seconds(2);
  // A worker's cache of function results for same-worker chaining
  // (ClusterCoordinatorOptions::same_worker_chaining): the most results it
  // keeps and their most encoded bytes, least recently used evicted first.
  // 0 keeps none (chained inputs then always travel as values). A larger
  // cache helps long chains of big results on one worker; its memory is
  // the worker's. Ignored by a ps.
  int64_t result_cache_entries = 1024;
  int64_t result_cache_bytes = int64_t{64} << 20;
  // A worker's bound on the bytes (encoded) of the executor-protocol values
  // its clients created (CreateValue) and have not disposed, over all
  // clients: beyond it CreateValue is RESOURCE_EXHAUSTED naming it. At
  // least 1. Ignored by a ps.
  int64_t max_value_bytes = int64_t{16} << 30;
  // A ps's answer to NaN and infinite updates (see NonFinitePolicy).
  // Ignored by a worker.
  NonFinitePolicy non_finite_updates = NonFinitePolicy::kReject;
  // Mutual TLS: the server presents this task's certificate and accepts
  // only clients whose certificate the cluster's CA signed. Empty: plaintext,
  // which Server::create allows only on a loopback address unless
  // tls.insecure (see TlsOptions). The task's own calls (a worker's to the
  // ps) use the process's credentials (set_process_tls).
  TlsOptions tls;
};

// Largest result_cache_entries and result_cache_bytes Server::create
// accepts: beyond them a typo, not a plan.
inline constexpr int64_t kMaxResultCacheEntries = 10'000'000;
inline constexpr int64_t kMaxResultCacheBytes = int64_t{64} << 30;

// A gRPC server playing one task of the cluster: a "ps" task serves the
// VariableService, a "worker" task the ExecutorService; both serve
// grpc.health.v1 and GetStatus. As tf.distribute.Server.
// Thread-safety: stop() may be called from any thread (or a signal-watching
// thread) while another thread is in join(); other calls are not concurrent.
class Server {
 public:
  // INVALID_ARGUMENT when the job is not "ps" or "worker", the task is not
  // in `spec`, or its address has no numeric port. Without a bind address,
  // FAILED_PRECONDITION when the spec's host is not this machine (an IP
  // literal of another machine, a name that resolves elsewhere or not at
  // all), naming the host, what it resolved to and the fix (a bind
  // address). Port 0 picks a free port at start(); target() then reports it.
  // TLS: the credentials' errors (see set_process_tls); FAILED_PRECONDITION
  // for a task listening on a non-loopback address without credentials
  // and without tls.insecure.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<Server>> create(const ClusterSpec& spec,
                                                                      std::string job_name,
                                                                      int task_index,
                                                                      ServerOptions options = {});
  virtual ~Server() = default;

  // Binds and starts serving. UNAVAILABLE names the address when it cannot
  // be bound (e.g. in use). FAILED_PRECONDITION when called twice or after
  // stop().
  [[nodiscard]] virtual absl::Status start() = 0;
  // Blocks until stop() has completed (also when start() was never called).
  virtual void join() = 0;
  // Stops accepting calls, lets running calls finish within a short grace
  // period, then returns. Idempotent.
  virtual void stop() = 0;
  // "/job:ps/replica:0/task:0".
  [[nodiscard]] virtual std::string task_name() const = 0;
  // The address clients use ("127.0.0.1:40123"): the task's address in the
  // spec, with the chosen port once started if the spec said port 0.
  [[nodiscard]] virtual std::string target() const = 0;
};

}  // namespace psflow

#endif  // PSFLOW_SERVER_H_

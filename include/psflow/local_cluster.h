// LocalCluster: ps and worker tasks as child processes on loopback.
#ifndef PSFLOW_LOCAL_CLUSTER_H_
#define PSFLOW_LOCAL_CLUSTER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "psflow/cluster_spec.h"

namespace psflow {

struct LocalClusterOptions {
  int num_ps = 2;
  int num_workers = 2;
  // The psflow binary each task runs (`<binary> server`, role from
  // TF_CONFIG). Empty: this process's own executable.
  std::string binary_path;
  // Loopback IP address the tasks listen on ("127.0.0.1", "::1"); anything
  // else is INVALID_ARGUMENT: a cluster across machines is started task by
  // task (`psflow server`), with certificates from `psflow certs`.
  std::string host = "127.0.0.1";
  // Every task must answer a health check within this bound, or start()
  // fails naming the tasks that did not (DEADLINE_EXCEEDED), and kills them
  // all. A task that exits during start-up fails it at once (UNAVAILABLE).
  absl::Duration startup_timeout = absl::Seconds(30);
  // Add a "chief" entry (the calling process, as coordinator) to the spec;
  // its port is reserved like the tasks' ports.
  bool include_chief = true;
  // Directory for each task's log file (<job>-<index>.log). Empty: the tasks
  // inherit this process's stderr.
  std::string log_dir;
  // Restarts of a task that exits while the cluster runs, on the same
  // address, as Kubernetes restarts a pod: at most this many per task (0:
  // a dead task stays dead), each after a backoff that doubles from
  // `restart_backoff` up to 10 s with every exit that follows a restart
  // quickly (a crash loop), and starts over once the task stayed up 10
  // times its last backoff (at least 1 s). A task that exits during
  // start-up fails start() instead.
  int max_restarts = 0;
  absl::Duration restart_backoff = absl::Milliseconds(100);
  // Added to every task's command line after `server` (see `psflow server
  // --help`), e.g. {"--non-finite-updates=allow"}. A flag the tasks refuse
  // makes start() fail with their error in the task logs.
  std::vector<std::string> server_flags;
  // Transport security. By default every connection is mutual TLS: a fresh
  // CA and one certificate per task (and chief/0 for this process) are made
  // for each cluster in a private (0700) temporary directory, removed when
  // the cluster is destroyed; while the cluster lives, this process's
  // channels (create_channel) present chief/0's certificate, and the
  // previous credentials come back afterwards. `tls_dir`: the certificates
  // in this directory instead (`psflow certs` for a loopback cluster of at
  // least these tasks; kept). `insecure`: plaintext, as before.
  std::string tls_dir;
  bool insecure = false;
};

// Starts M ps and N worker tasks as children of this process, waits until
// each answers grpc.health.v1, and stops them all on destruction. Children
// die with this process even when it is killed with SIGKILL (they are bound
// to it through PR_SET_PDEATHSIG), so no task is ever orphaned. Each task's
// port stays reserved (SO_REUSEPORT, see ServerOptions::reuse_port) for the
// cluster's lifetime, so no other process takes it, even after the task died.
// Thread-safety: all methods may be called from any thread.
class LocalCluster {
 public:
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<LocalCluster>> start(
      LocalClusterOptions options = {});
  virtual ~LocalCluster() = default;

  // The cluster, including the chief entry when include_chief.
  [[nodiscard]] virtual const ClusterSpec& cluster_spec() const = 0;
  // Process id of a task (also after it exited); NOT_FOUND for an unknown
  // one and for the chief entry, which is the calling process.
  [[nodiscard]] virtual absl::StatusOr<pid_t> pid(std::string_view job, int index) const = 0;
  [[nodiscard]] virtual std::vector<pid_t> pids() const = 0;
  // Sends `signal` to one task (fault tests use SIGKILL / SIGSTOP).
  // NOT_FOUND for an unknown task, FAILED_PRECONDITION once it has exited.
  // Immune to pid reuse (signals go through a pidfd).
  [[nodiscard]] virtual absl::Status signal_task(std::string_view job, int index, int signal) = 0;
  // How many times the task was restarted so far.
  [[nodiscard]] virtual absl::StatusOr<int> restart_count(std::string_view job,
                                                          int index) const = 0;
  // Waits until the task has been restarted at least `restarts` times (its
  // new process started; it may not answer yet), then returns its pid.
  // DEADLINE_EXCEEDED after `timeout`; FAILED_PRECONDITION when the task
  // has used up max_restarts or the cluster is stopping.
  [[nodiscard]] virtual absl::StatusOr<pid_t> wait_for_restart(std::string_view job, int index,
                                                               int restarts,
                                                               absl::Duration timeout) = 0;
  // SIGTERM (and SIGCONT, for stopped tasks) to every task, SIGKILL after
  // `grace`, and reaps them all. Idempotent; concurrent callers return once
  // the tasks are gone.
  virtual void stop(absl::Duration grace = absl::Seconds(5)) = 0;
};

}  // namespace psflow

#endif  // PSFLOW_LOCAL_CLUSTER_H_

// A LocalCluster run by a command-line program until it is told to stop.
#ifndef PSFLOW_CLI_LOCAL_CLUSTER_SESSION_H_
#define PSFLOW_CLI_LOCAL_CLUSTER_SESSION_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/signals.h"
#include "psflow/local_cluster.h"

namespace psflow::internal {

// How long the tasks of a local cluster have to exit after SIGTERM when
// the program stops on a signal, before SIGKILL (they stop within their
// own 2 s server grace).
inline constexpr absl::Duration kLocalClusterStopGrace = absl::Seconds(3);

// Starts a LocalCluster under a SignalShutdown. A signal during start-up
// exits the process at once with 128+signo, naming what was starting
// (LocalCluster::start cannot be interrupted; the tasks die with this
// process through PR_SET_PDEATHSIG); afterwards the signal requests the
// shutdown's stop, and the session stops the cluster when it goes.
// Thread-safety: use from one thread.
class LocalClusterSession {
 public:
  // `shutdown` must outlive the session.
  explicit LocalClusterSession(SignalShutdown& shutdown) : shutdown_(shutdown) {}
  // Stops the cluster (if started): its tasks get SIGTERM, and SIGKILL
  // after kLocalClusterStopGrace.
  ~LocalClusterSession();
  LocalClusterSession(const LocalClusterSession&) = delete;
  LocalClusterSession& operator=(const LocalClusterSession&) = delete;

  // The cluster stays owned by the session.
  [[nodiscard]] absl::StatusOr<LocalCluster*> start(LocalClusterOptions options);

 private:
  SignalShutdown& shutdown_;
  std::unique_ptr<LocalCluster> cluster_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_CLI_LOCAL_CLUSTER_SESSION_H_

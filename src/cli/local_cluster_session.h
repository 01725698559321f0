// A LocalCluster run by a command-line program until it is told to stop.
#ifndef PSFLOW_CLI_LOCAL_CLUSTER_SESSION_H_
#define PSFLOW_CLI_LOCAL_CLUSTER_SESSION_H_

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "cli/signals.h"
#include "psflow/local_cluster.h"

namespace psflow::internal {

// Starts a LocalCluster under a TerminationSignalWatcher. A signal during
// start-up exits the process at once with 128+signo (LocalCluster::start
// cannot be interrupted; the tasks die with this process through
// PR_SET_PDEATHSIG); afterwards it only wakes wait_for_termination_signal().
// Thread-safety: use from one thread; the watcher's thread only touches the
// guarded state.
class LocalClusterSession {
 public:
  LocalClusterSession();
  // Stops the cluster (if started) after the watcher is gone.
  ~LocalClusterSession();

  // The cluster stays owned by the session.
  [[nodiscard]] absl::StatusOr<LocalCluster*> start(LocalClusterOptions options)
      ABSL_LOCKS_EXCLUDED(mu_);
  void wait_for_termination_signal();

 private:
  void on_signal(int signo);

  absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  absl::Notification signalled_;
  std::unique_ptr<LocalCluster> cluster_;
  // Last: destroyed first, as its callback uses the members above.
  std::unique_ptr<TerminationSignalWatcher> watcher_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_CLI_LOCAL_CLUSTER_SESSION_H_

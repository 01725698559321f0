#include "cli/local_cluster_session.h"

#include <unistd.h>

#include "base/logging.h"

namespace psflow::internal {

LocalClusterSession::LocalClusterSession()
    : watcher_(
          std::make_unique<TerminationSignalWatcher>([this](int signo) { on_signal(signo); })) {}

LocalClusterSession::~LocalClusterSession() {
  watcher_.reset();
  cluster_.reset();
}

absl::StatusOr<LocalCluster*> LocalClusterSession::start(LocalClusterOptions options) {
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(std::move(options));
  if (!cluster.ok()) return cluster.status();
  cluster_ = *std::move(cluster);
  absl::MutexLock lock(&mu_);
  started_ = true;
  return cluster_.get();
}

void LocalClusterSession::wait_for_termination_signal() { signalled_.WaitForNotification(); }

void LocalClusterSession::on_signal(int signo) {
  absl::MutexLock lock(&mu_);
  if (!started_) {
    PSFLOW_LOG(Warning, "interrupted while the local cluster was starting; exiting");
    _exit(128 + signo);
  }
  signalled_.Notify();
}

}  // namespace psflow::internal

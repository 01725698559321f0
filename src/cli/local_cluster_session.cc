#include "cli/local_cluster_session.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace psflow::internal {

LocalClusterSession::~LocalClusterSession() {
  if (cluster_ == nullptr) return;
  (void)shutdown_.stop_request().set_activity(
      {"stopping the local cluster's tasks", /*at_once=*/false});
  cluster_->stop(kLocalClusterStopGrace);
}

absl::StatusOr<LocalCluster*> LocalClusterSession::start(LocalClusterOptions options) {
  const std::string what = absl::StrCat("starting the local cluster (", options.num_ps, " ps, ",
                                        options.num_workers, " workers)");
  if (!shutdown_.stop_request().set_activity({what, /*at_once=*/true})) {
    return shutdown_.stop_request().reason();
  }
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(std::move(options));
  if (!cluster.ok()) return cluster.status();
  cluster_ = *std::move(cluster);
  return cluster_.get();
}

}  // namespace psflow::internal

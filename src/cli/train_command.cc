// `psflow train`: the coordinator. For now it only brings up the embedded
// local cluster and checks it; the training job arrives with the
// coordinator work.
#include <cstdio>
#include <memory>

#include "absl/time/clock.h"
#include "cli/commands.h"
#include "cli/local_cluster_session.h"
#include "psflow/cluster_resolver.h"
#include "rpc/channel.h"

namespace psflow {
namespace {

int run_train(const LocalClusterFlags& flags) {
  if (TFConfigClusterResolver().is_configured()) {
    std::fputs(
        "psflow train: TF_CONFIG is set, but training on a cluster described by TF_CONFIG is "
        "not implemented yet. Unset TF_CONFIG to use the embedded local cluster.\n",
        stderr);
    return kExitFailure;
  }
  LocalClusterSession session;
  absl::StatusOr<LocalCluster*> cluster = session.start(to_local_cluster_options(flags));
  if (!cluster.ok()) {
    std::fprintf(stderr, "psflow train: %s\n", cluster.status().ToString().c_str());
    return kExitFailure;
  }
  std::printf("local cluster is up (%d ps, %d workers):\n", flags.num_ps, flags.num_workers);
  print_tasks(**cluster, stdout);
  // Each task answers GetStatus: the same call the coordinator will make.
  const ClusterSpec& spec = (*cluster)->cluster_spec();
  int failures = 0;
  for (std::string_view job : {kPsJob, kWorkerJob}) {
    for (int index : spec.task_indices(job)) {
      absl::StatusOr<std::string> address = spec.task_address(job, index);
      if (!address.ok()) continue;
      absl::StatusOr<v1::GetStatusResponse> status =
          get_status(*address, job, index, absl::Now() + absl::Seconds(10));
      if (!status.ok()) {
        std::fprintf(stderr, "psflow train: %s\n", status.status().ToString().c_str());
        ++failures;
      }
    }
  }
  std::puts(
      "Model training is not implemented yet: this build starts and checks the cluster, then "
      "stops it.");
  std::fflush(stdout);
  (*cluster)->stop();
  return failures == 0 ? kExitOk : kExitFailure;
}

}  // namespace

Command add_train_command(CLI::App& parent) {
  auto flags = std::make_shared<LocalClusterFlags>();
  CLI::App* app = parent.add_subcommand(
      "train", "Train as the coordinator (chief); without TF_CONFIG on a local cluster");
  app->footer(
      "Without TF_CONFIG, starts an embedded local cluster of ps and worker tasks on\n"
      "loopback and coordinates it. Model training itself is not implemented yet:\n"
      "for now the command brings the cluster up, checks every task, says so, and\n"
      "stops the cluster.");
  add_local_cluster_flags(*app, *flags);
  return Command{app, [flags] { return run_train(*flags); }};
}

}  // namespace psflow

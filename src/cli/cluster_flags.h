// Where `psflow server` and `psflow train` find their cluster: TF_CONFIG, as
// before, or with --cluster-resolver slurm the variables Slurm sets in every
// task of a job step (SlurmClusterResolver).
#ifndef PSFLOW_CLI_CLUSTER_FLAGS_H_
#define PSFLOW_CLI_CLUSTER_FLAGS_H_

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "psflow/cluster_resolver.h"

namespace psflow::internal {

inline constexpr std::string_view kTfConfigResolver = "tf_config";
inline constexpr std::string_view kSlurmResolver = "slurm";

// The flags, as parsed.
// Thread-safety: a value type.
struct ClusterResolverFlags {
  std::string resolver = std::string(kTfConfigResolver);
  std::string slurm_jobs;  // "chief:1,ps:2,worker:2"; "" is TF's default.
  int slurm_port_base = 8888;
};

// Declares --cluster-resolver, --slurm-jobs and --slurm-port-base.
void add_cluster_resolver_flags(CLI::App& app, ClusterResolverFlags& flags);

// "chief:1,ps:2,worker:2" -> {{"chief", 1}, {"ps", 2}, {"worker", 2}}, in
// order; "" -> {} (SlurmClusterResolver's default). INVALID_ARGUMENT naming
// --slurm-jobs, the item and the expected form for anything else (an empty
// item or name, a count that is not 0 to 999999999).
[[nodiscard]] absl::StatusOr<std::vector<std::pair<std::string, int>>> parse_slurm_jobs(
    std::string_view jobs);

// nullopt with --cluster-resolver tf_config (the default: the caller reads
// TF_CONFIG as before), else the Slurm resolver of this task. INVALID_ARGUMENT
// for --slurm-* flags without --cluster-resolver slurm, for Slurm while
// TF_CONFIG is set (which one would be meant?), and for bad --slurm-jobs;
// the resolver's own errors (a missing SLURM_* variable, jobs that do not
// add up to the step's tasks, ...) come back with their codes, prefixed
// "Slurm: ". `app` tells which flags were given.
[[nodiscard]] absl::StatusOr<std::optional<SlurmClusterResolver>> slurm_resolver_from_flags(
    const ClusterResolverFlags& flags, const CLI::App& app);

}  // namespace psflow::internal

#endif  // PSFLOW_CLI_CLUSTER_FLAGS_H_

#include "cli/cluster_flags.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/strings.h"

namespace psflow::internal {
namespace {

constexpr std::string_view kJobsExample = "chief:1,ps:2,worker:2";
constexpr size_t kMaxCountDigits = 9;

absl::Status jobs_error(std::string_view jobs, std::string_view detail) {
  return absl::InvalidArgumentError(absl::StrCat("--slurm-jobs '", av(jobs), "': ", av(detail),
                                                 "; list job:count pairs in rank order, like ",
                                                 av(kJobsExample), "."));
}

}  // namespace

void add_cluster_resolver_flags(CLI::App& app, ClusterResolverFlags& flags) {
  app.add_option("--cluster-resolver", flags.resolver,
                 "Where the cluster and this task's role come from: tf_config (the TF_CONFIG "
                 "variable) or slurm (SLURM_PROCID, SLURM_STEP_NODELIST and "
                 "SLURM_STEP_TASKS_PER_NODE of an srun step, as TensorFlow's "
                 "SlurmClusterResolver; TF_CONFIG must be unset)")
      ->capture_default_str()
      ->check(CLI::IsMember({std::string(kTfConfigResolver), std::string(kSlurmResolver)}));
  app.add_option("--slurm-jobs", flags.slurm_jobs,
                 "Slurm: the jobs in rank order, as job:count pairs, e.g. chief:1,ps:2,worker:2 "
                 "(rank 0 the chief, ranks 1-2 ps, 3-4 workers); the counts add up to the "
                 "step's tasks. Default: every task a worker, as TensorFlow");
  app.add_option("--slurm-port-base", flags.slurm_port_base,
                 "Slurm: the port of each node's first task; its i-th task listens on "
                 "port base + i")
      ->capture_default_str()
      ->check(CLI::Range(1, 65535));
}

absl::StatusOr<std::vector<std::pair<std::string, int>>> parse_slurm_jobs(std::string_view jobs) {
  std::vector<std::pair<std::string, int>> parsed;
  if (jobs.empty()) return parsed;
  size_t start = 0;
  while (true) {
    const size_t comma = jobs.find(',', start);
    const std::string_view item = jobs.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const size_t colon = item.rfind(':');
    if (item.empty()) return jobs_error(jobs, "an item is empty");
    if (colon == std::string_view::npos || colon == 0) {
      return jobs_error(jobs, absl::StrCat("'", av(item), "' is not job:count"));
    }
    const std::string_view count = item.substr(colon + 1);
    const bool digits = !count.empty() && count.size() <= kMaxCountDigits &&
                        count.find_first_not_of("0123456789") == std::string_view::npos;
    if (!digits) {
      return jobs_error(
          jobs, absl::StrCat("the count of '", av(item), "' is not a number from 0 to 999999999"));
    }
    parsed.emplace_back(std::string(item.substr(0, colon)), std::stoi(std::string(count)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return parsed;
}

absl::StatusOr<std::optional<SlurmClusterResolver>> slurm_resolver_from_flags(
    const ClusterResolverFlags& flags, const CLI::App& app) {
  if (flags.resolver != kSlurmResolver) {
    for (const char* flag : {"--slurm-jobs", "--slurm-port-base"}) {
      if (app.count(flag) > 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            flag, " applies to Slurm's environment only; add --cluster-resolver slurm, or drop ",
            flag, "."));
      }
    }
    return std::nullopt;
  }
  if (TFConfigClusterResolver().is_configured()) {
    return absl::InvalidArgumentError(
        "--cluster-resolver slurm reads the cluster from Slurm's environment, but TF_CONFIG is "
        "set too; unset TF_CONFIG (e.g. `env -u TF_CONFIG srun ...`), or drop "
        "--cluster-resolver slurm to use TF_CONFIG.");
  }
  absl::StatusOr<std::vector<std::pair<std::string, int>>> jobs =
      parse_slurm_jobs(flags.slurm_jobs);
  if (!jobs.ok()) return jobs.status();
  SlurmClusterResolver::Options options;
  options.jobs = *std::move(jobs);
  options.port_base = flags.slurm_port_base;
  absl::StatusOr<SlurmClusterResolver> resolver = SlurmClusterResolver::create(std::move(options));
  if (!resolver.ok()) {
    return absl::Status(resolver.status().code(),
                        absl::StrCat("Slurm: ", resolver.status().message()));
  }
  return std::optional<SlurmClusterResolver>(*std::move(resolver));
}

}  // namespace psflow::internal

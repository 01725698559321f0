// Slurm's hostlists and tasks-per-node (src/cluster/slurm_hostlist.cc,
// slurm_cluster_resolver.cc): the input is split at its first two
// newlines into a node list, a tasks-per-node value and a rank; each is
// expanded alone and then resolved together as a task in a Slurm step
// would (SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE, SLURM_PROCID).
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "cluster/slurm_hostlist.h"
#include "fuzz_input.h"
#include "psflow/cluster_resolver.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace psflow;
  using namespace psflow::fuzz;
  std::string_view rest = as_bytes(data, size);
  auto next = [&rest]() {
    const size_t end = rest.find('\n');
    const std::string_view part = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    return std::string(part);
  };
  const std::string nodes = next();
  const std::string tasks = next();
  const std::string rank = next();
  absl::StatusOr<std::vector<std::string>> hosts = internal::expand_hostlist(nodes);
  if (hosts.ok()) check(static_cast<int64_t>(hosts->size()) <= internal::kMaxSlurmHosts);
  (void)internal::expand_tasks_per_node(tasks);
  (void)internal::quote_slurm_value(nodes);
  std::map<std::string, std::string> env = {
      {"SLURM_STEP_NODELIST", nodes}, {"SLURM_STEP_TASKS_PER_NODE", tasks}, {"SLURM_PROCID", rank}};
  absl::StatusOr<SlurmClusterResolver> resolver =
      SlurmClusterResolver::create(SlurmClusterResolver::Options{.environment = env});
  if (resolver.ok()) {
    (void)resolver->cluster_spec();
    (void)resolver->master();
  }
  return 0;
}

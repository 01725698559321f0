// SlurmClusterResolver: TF's slurm_cluster_resolver.py without the GPU
// options. This file, the TF_CONFIG resolver and the launcher are the only
// places allowed to call getenv.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/strings.h"
#include "cluster/master.h"
#include "cluster/slurm_hostlist.h"
#include "psflow/cluster_resolver.h"
#include "psflow/status_macros.h"

namespace psflow {

using internal::av;
using internal::expand_hostlist;
using internal::expand_tasks_per_node;
using internal::kMaxSlurmHosts;
using internal::kMaxSlurmTasksPerNode;
using internal::master_address;
using internal::quote_slurm_value;

namespace {

constexpr std::string_view kProcId = "SLURM_PROCID";
constexpr std::string_view kStepNodeList = "SLURM_STEP_NODELIST";
constexpr std::string_view kJobNodeList = "SLURM_JOB_NODELIST";
constexpr std::string_view kStepTasksPerNode = "SLURM_STEP_TASKS_PER_NODE";
constexpr std::string_view kJobTasksPerNode = "SLURM_TASKS_PER_NODE";
constexpr std::string_view kStepNumTasks = "SLURM_STEP_NUM_TASKS";
constexpr std::string_view kJobNumTasks = "SLURM_NTASKS";
constexpr int kMaxPort = 65535;
// Ranks and task counts have at most this many digits (so fit an int).
constexpr size_t kMaxCountDigits = 9;

// One variable as read: its name and value.
struct Variable {
  std::string_view name;
  std::string value;

  // NAME="value", for messages.
  [[nodiscard]] std::string show() const {
    return absl::StrCat(av(name), "=", quote_slurm_value(value));
  }
};

// The process environment, or the map that stands in for it.
// Thread-safety: not shared; the process environment must not change while
// it is read.
class Environment {
 public:
  explicit Environment(const std::optional<std::map<std::string, std::string>>& given)
      : given_(given) {}

  [[nodiscard]] std::optional<std::string> get(std::string_view name) const {
    if (given_.has_value()) {
      const auto it = given_->find(std::string(name));
      if (it == given_->end()) return std::nullopt;
      return it->second;
    }
    const char* value = std::getenv(std::string(name).c_str());
    if (value == nullptr) return std::nullopt;
    return std::string(value);  // Copied at once: a later setenv may free it.
  }

  // The first of `names` that is set; FAILED_PRECONDITION naming them all
  // when none is, with `example` a value Slurm would give the first.
  [[nodiscard]] absl::StatusOr<Variable> require(std::initializer_list<std::string_view> names,
                                                 std::string_view example) const {
    for (std::string_view name : names) {
      if (std::optional<std::string> value = get(name); value.has_value()) {
        return Variable{name, *std::move(value)};
      }
    }
    const std::string_view first = *names.begin();
    std::vector<std::string> others;
    for (auto it = names.begin() + 1; it != names.end(); ++it) others.emplace_back(*it);
    return absl::FailedPreconditionError(absl::StrCat(
        av(first), " not found in environment",
        others.empty() ? "" : absl::StrCat(" (nor ", absl::StrJoin(others, " nor "), ")"),
        ". Not running inside a SLURM step? Start every task with srun (e.g. `srun psflow "
        "server ...` in an sbatch script), which sets ",
        av(first), " (like ", av(first), "=", av(example), ")."));
  }

 private:
  const std::optional<std::map<std::string, std::string>>& given_;
};

// A rank or task count: 1 to kMaxCountDigits digits, nothing else.
absl::StatusOr<int> parse_count(const Variable& variable, std::string_view what) {
  const std::string& value = variable.value;
  const bool digits_only =
      !value.empty() && value.size() <= kMaxCountDigits &&
      std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits_only) {
    return absl::InvalidArgumentError(
        absl::StrCat(variable.show(), " is not ", av(what), " (a non-negative integer of at most ",
                     kMaxCountDigits,
                     " digits). Slurm sets it in every task of a step; unset it, or set it "
                     "as Slurm would, like ",
                     av(variable.name), "=3."));
  }
  return std::stoi(value);
}

// "chief: 1, ps: 2, worker: 2".
std::string show_jobs(const std::vector<std::pair<std::string, int>>& jobs) {
  return absl::StrJoin(jobs, ", ", [](std::string* out, const std::pair<std::string, int>& job) {
    absl::StrAppend(out, quote_slurm_value(job.first), ": ", job.second);
  });
}

// Job names non-empty and distinct, sizes non-negative; the total.
absl::StatusOr<int64_t> check_jobs(const std::vector<std::pair<std::string, int>>& jobs) {
  std::set<std::string_view> seen;
  int64_t total = 0;
  for (const auto& [name, count] : jobs) {
    if (name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("SlurmClusterResolver jobs {", show_jobs(jobs),
                       "} hold an empty job name; name every job, like {\"ps\", 2}."));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("SlurmClusterResolver jobs {", show_jobs(jobs), "} name job ",
                       quote_slurm_value(name), " twice; list each job once with its total size."));
    }
    if (count < 0) {
      return absl::InvalidArgumentError(absl::StrCat("SlurmClusterResolver jobs {", show_jobs(jobs),
                                                     "} give job ", quote_slurm_value(name), " ",
                                                     count, " tasks; a job has 0 or more tasks."));
    }
    total += count;
  }
  return total;
}

}  // namespace

SlurmClusterResolver::SlurmClusterResolver(ClusterSpec spec, std::string task_type, int task_id,
                                           int rank, std::optional<std::string> rpc_layer)
    : spec_(std::move(spec)),
      task_type_(std::move(task_type)),
      task_id_(task_id),
      rank_(rank),
      rpc_layer_(std::move(rpc_layer)) {}

absl::StatusOr<SlurmClusterResolver> SlurmClusterResolver::create() { return create(Options{}); }

absl::StatusOr<SlurmClusterResolver> SlurmClusterResolver::create(Options options) {
  const Environment env(options.environment);
  PSFLOW_ASSIGN_OR_RETURN(const Variable procid, env.require({kProcId}, "0"));
  PSFLOW_ASSIGN_OR_RETURN(const int rank, parse_count(procid, "a rank"));

  // The nodes of the step, in Slurm's order.
  PSFLOW_ASSIGN_OR_RETURN(const Variable node_list,
                          env.require({kStepNodeList, kJobNodeList}, "\"n[1-3]\""));
  absl::StatusOr<std::vector<std::string>> hosts = expand_hostlist(node_list.value);
  if (!hosts.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(av(node_list.name), ": ", hosts.status().message(),
                     " Slurm writes this variable for the step; unset it, or set it as Slurm "
                     "would."));
  }
  if (hosts->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(node_list.show(), " lists no nodes; set it to the step's nodes, like ",
                     av(node_list.name), "=\"n[1-3]\", or unset it."));
  }
  std::set<std::string_view> seen;
  for (const std::string& host : *hosts) {
    if (!seen.insert(host).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          node_list.show(), " lists node ", quote_slurm_value(host),
          " twice; the tasks of one node take consecutive ports from port_base, so each node may "
          "appear once. List every node once, as Slurm does."));
    }
  }

  // How many tasks each node runs.
  std::vector<int> tasks_per_node;
  std::string tasks_source;  // For messages.
  if (options.tasks_per_node.has_value()) {
    const int n = *options.tasks_per_node;
    if (n < 1 || n > kMaxSlurmTasksPerNode) {
      return absl::InvalidArgumentError(absl::StrCat(
          "SlurmClusterResolver tasks_per_node is ", n, "; use 1 to ", kMaxSlurmTasksPerNode,
          ", or leave it unset to read ", av(kStepTasksPerNode), "."));
    }
    tasks_per_node.assign(hosts->size(), n);
    tasks_source = absl::StrCat("tasks_per_node=", n);
  } else {
    PSFLOW_ASSIGN_OR_RETURN(const Variable tasks,
                            env.require({kStepTasksPerNode, kJobTasksPerNode}, "\"2(x3),1\""));
    absl::StatusOr<std::vector<int>> expanded = expand_tasks_per_node(tasks.value);
    if (!expanded.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(av(tasks.name), ": ", expanded.status().message(),
                       " Slurm writes this variable for the step; unset it, or set it as Slurm "
                       "would, or pass tasks_per_node."));
    }
    if (expanded->size() != hosts->size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          tasks.show(), " covers ", expanded->size(), " node(s) but ", node_list.show(), " lists ",
          hosts->size(),
          "; both describe the same nodes, one count per node in "
          "list order. Set them from the same step (srun sets both), or pass tasks_per_node."));
    }
    tasks_per_node = *std::move(expanded);
    tasks_source = tasks.show();
  }
  int64_t num_tasks = 0;
  for (int n : tasks_per_node) num_tasks += n;
  if (num_tasks > kMaxSlurmHosts) {
    return absl::InvalidArgumentError(absl::StrCat(
        tasks_source, " over ", node_list.show(), " makes ", num_tasks, " tasks, more than the ",
        kMaxSlurmHosts, " psflow supports; ask Slurm for fewer tasks."));
  }

  // The jobs, in rank order.
  std::vector<std::pair<std::string, int>> jobs = std::move(options.jobs);
  std::string jobs_source;
  if (jobs.empty()) {
    PSFLOW_ASSIGN_OR_RETURN(const Variable step_tasks,
                            env.require({kStepNumTasks, kJobNumTasks}, "5"));
    PSFLOW_ASSIGN_OR_RETURN(const int n, parse_count(step_tasks, "a task count"));
    jobs.emplace_back(std::string(kWorkerJob), n);
    jobs_source = absl::StrCat(" (the default: every task of ", step_tasks.show(), " a worker)");
  }
  PSFLOW_ASSIGN_OR_RETURN(const int64_t requested, check_jobs(jobs));
  if (requested != num_tasks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Requested ", requested, " tasks but ", requested > num_tasks ? "only " : "", num_tasks,
        " were assigned: jobs {", show_jobs(jobs), "}", jobs_source, " take ", requested,
        " tasks, while ", tasks_source, " over ", node_list.show(), " gives the step ", num_tasks,
        ". Every Slurm task plays one task of a job: run the step with ", requested,
        " tasks (srun --ntasks=", requested, "), or change the jobs to add up to ", num_tasks,
        "."));
  }
  if (rank >= num_tasks) {
    return absl::InvalidArgumentError(absl::StrCat(
        procid.show(), " is outside the step's ", num_tasks, " tasks (ranks 0 to ", num_tasks - 1,
        ", from ", tasks_source, " over ", node_list.show(),
        "). Slurm sets it in every task of the step; unset it, or set it as Slurm would."));
  }

  // Ports: port_base + i for the i-th task of a node.
  const int most_per_node = *std::max_element(tasks_per_node.begin(), tasks_per_node.end());
  const int64_t last_port = static_cast<int64_t>(options.port_base) + most_per_node - 1;
  if (options.port_base < 1 || options.port_base > kMaxPort || last_port > kMaxPort) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SlurmClusterResolver port_base is ", options.port_base, ", and a node runs up to ",
        most_per_node, " task(s) on ports port_base to port_base + ", most_per_node - 1,
        "; choose port_base from 1 to ", std::max(1, kMaxPort - most_per_node + 1),
        " (the default is 8888)."));
  }

  // Addresses in rank order, then consecutive ranks to each job in turn.
  std::vector<std::string> addresses;
  addresses.reserve(static_cast<size_t>(num_tasks));
  for (size_t node = 0; node < hosts->size(); ++node) {
    for (int i = 0; i < tasks_per_node[node]; ++i) {
      addresses.push_back(absl::StrCat((*hosts)[node], ":", options.port_base + i));
    }
  }
  std::map<std::string, std::vector<std::string>> cluster;
  std::string task_type;
  int task_id = 0;
  int first = 0;
  for (const auto& [name, count] : jobs) {
    std::vector<std::string>& job = cluster[name];
    job.assign(addresses.begin() + first, addresses.begin() + first + count);
    if (rank >= first && rank < first + count) {
      task_type = name;
      task_id = rank - first;
    }
    first += count;
  }
  return SlurmClusterResolver(ClusterSpec(cluster), std::move(task_type), task_id, rank,
                              std::move(options.rpc_layer));
}

absl::StatusOr<std::string> SlurmClusterResolver::master(
    std::optional<std::string> task_type, std::optional<int> task_id,
    std::optional<std::string> rpc_layer) const {
  // TF: argument if not None, else the resolver's; `rpc_layer or
  // self.rpc_layer`. No "local" case: a one-task cluster has an address too.
  if (!task_type.has_value()) task_type = task_type_;
  if (!task_id.has_value()) task_id = task_id_;
  if (!rpc_layer.has_value() || rpc_layer->empty()) rpc_layer = rpc_layer_;
  return master_address(spec_, task_type, task_id, rpc_layer);
}

}  // namespace psflow

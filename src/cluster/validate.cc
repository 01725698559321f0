// validate_parameter_server_cluster: TF's ParameterServerStrategyV2
// `_verify_args_and_config` plus multi_worker_util `_validate_cluster_spec`,
// check for check and message for message, each message followed by the fix.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/strings.h"
#include "cluster/tf_json.h"
#include "psflow/cluster_resolver.h"
#include "psflow/cluster_spec.h"

namespace psflow {

using internal::av;
using internal::py_repr_string;

namespace {

// Python's repr of TF's allowed_task_types tuple, quoted verbatim in messages.
constexpr std::string_view kAllowedTaskTypesRepr = "('chief', 'worker', 'evaluator', 'ps', None)";

bool is_allowed_job(std::string_view job) {
  return job == kChiefJob || job == kWorkerJob || job == kEvaluatorJob || job == kPsJob;
}

// TF's ClusterSpec.__repr__: "ClusterSpec({'ps': ['a:1'], 'worker': {1: 'b:2'}})",
// dense jobs as lists, sparse ones as {index: address}.
std::string cluster_spec_repr(const ClusterSpec& spec) {
  std::vector<std::string> items;
  for (const auto& [job, tasks] : spec.as_map()) {
    const bool dense = !tasks.empty() && tasks.begin()->first == 0 &&
                       tasks.rbegin()->first + 1 == static_cast<int>(tasks.size());
    std::vector<std::string> entries;
    for (const auto& [index, address] : tasks) {
      entries.push_back(dense ? py_repr_string(address)
                              : absl::StrCat(index, ": ", py_repr_string(address)));
    }
    items.push_back(absl::StrCat(py_repr_string(job), ": ", dense ? "[" : "{",
                                 absl::StrJoin(entries, ", "), dense ? "]" : "}"));
  }
  return absl::StrCat("ClusterSpec({", absl::StrJoin(items, ", "), "})");
}

std::string tasks_phrase(int count) {
  return count == 1 ? "1 task" : absl::StrCat(count, " tasks");
}

absl::Status at_most_one(const ClusterSpec& spec, std::string_view job) {
  const int count = spec.num_tasks(job);
  if (count <= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("There must be at most one '", av(job), "' job. TF_CONFIG.cluster.", av(job),
                   " lists ", tasks_phrase(count), "; keep exactly one address there."));
}

absl::Status at_least_one(const ClusterSpec& spec, std::string_view job) {
  if (spec.num_tasks(job) >= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "There must be at least one ", av(job), ". Add a \"", av(job),
      "\" job with one or more addresses to the cluster spec (TF_CONFIG.cluster.", av(job), ")."));
}

}  // namespace

absl::Status validate_parameter_server_cluster(const ClusterSpec& spec,
                                               const std::optional<std::string>& task_type,
                                               const std::optional<int>& task_id) {
  // 1. _verify_args_and_config: `if not cluster_resolver.cluster_spec()`.
  if (spec.empty()) {
    return absl::InvalidArgumentError(
        "Cluster spec must be non-empty in `tf.distribute.cluster_resolver.ClusterResolver`. "
        "Set TF_CONFIG.cluster to the cluster's jobs, like {\"chief\": [\"host:port\"], "
        "\"worker\": [\"host:port\"], \"ps\": [\"host:port\"]}.");
  }
  // 2. Every job must be one ParameterServerStrategy knows.
  for (const std::string& job : spec.jobs()) {
    if (is_allowed_job(job)) continue;
    return absl::InvalidArgumentError(
        absl::StrCat("Disallowed task type found in cluster spec. Allowed types are ",
                     av(kAllowedTaskTypesRepr), " and the cluster spec is ",
                     cluster_spec_repr(spec), ". Rename or remove job ", py_repr_string(job),
                     " (TF_CONFIG.cluster); the known jobs are chief, worker, ps and evaluator."));
  }
  // 3. This task's own type must be one of them too (or absent).
  if (task_type.has_value() && !is_allowed_job(*task_type)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Unrecognized task_type: ", *task_type, ", valid task types are: ",
        av(kAllowedTaskTypesRepr), ". Set TF_CONFIG.task.type to chief, worker, ps or evaluator."));
  }
  // 4. ...and present in the cluster, except an evaluator, which TF allows to
  //    run outside the training cluster.
  if (task_type.has_value() && !task_type->empty() && !spec.has_job(*task_type) &&
      *task_type != kEvaluatorJob) {
    return absl::InvalidArgumentError(absl::StrCat(
        "`task_type` ", py_repr_string(*task_type), " not found in cluster_spec. Add a \"",
        *task_type, "\" job to TF_CONFIG.cluster or correct TF_CONFIG.task.type."));
  }
  // 5. One coordinator, one evaluator at most.
  if (absl::Status status = at_most_one(spec, kChiefJob); !status.ok()) return status;
  if (absl::Status status = at_most_one(spec, kEvaluatorJob); !status.ok()) return status;
  // 6. The task id must name a task of its job. TF compares against the
  //    number of tasks (so a sparse job's high index fails, as in TF). psflow
  //    also rejects what TF lets through to fail later: a missing or negative
  //    id.
  if (task_type.has_value() && spec.has_job(*task_type)) {
    const int count = spec.num_tasks(*task_type);
    const std::string fix =
        count == 0
            ? absl::StrCat("Job ", py_repr_string(*task_type),
                           " has no tasks; add its addresses to TF_CONFIG.cluster.", *task_type,
                           ".")
            : absl::StrCat("Set TF_CONFIG.task.index to a value from 0 to ", count - 1, " (job ",
                           py_repr_string(*task_type), " has ", tasks_phrase(count), ").");
    if (!task_id.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("The `task_id` is missing for task_type ",
                                                     py_repr_string(*task_type), ". ", fix));
    }
    if (*task_id < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("The `task_id` ", *task_id, " is negative. ", fix));
    }
    if (*task_id >= count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "The `task_id` ", *task_id, " exceeds the maximum id of ", *task_type, ". ", fix));
    }
  }
  // 7. A parameter-server cluster needs both roles.
  if (absl::Status status = at_least_one(spec, kPsJob); !status.ok()) return status;
  return at_least_one(spec, kWorkerJob);
}

}  // namespace psflow

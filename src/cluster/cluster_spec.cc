#include "psflow/cluster_spec.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/strings.h"
#include "cluster/cluster_spec_json.h"
#include "cluster/tf_json.h"
#include "psflow/status_macros.h"

namespace psflow {

using internal::av;
using internal::cluster_spec_from_json_value;
using internal::parse_tf_json;
using internal::py_int_from_string;
using internal::py_repr_abbrev;
using internal::py_repr_string;
using internal::TfJson;

namespace {

constexpr std::string_view kClusterExample =
    R"({"chief": ["host:port"], "worker": ["host:port", ...], "ps": ["host:port", ...]})";

std::string job_path(std::string_view job) { return absl::StrCat("TF_CONFIG.cluster.", av(job)); }

}  // namespace

ClusterSpec::ClusterSpec(const std::map<std::string, std::vector<std::string>>& jobs) {
  for (const auto& [job, addresses] : jobs) {
    Tasks& tasks = jobs_[job];
    for (std::size_t i = 0; i < addresses.size(); ++i) {
      tasks.emplace(static_cast<int>(i), addresses[i]);
    }
  }
}

absl::StatusOr<ClusterSpec> ClusterSpec::from_json(std::string_view json) {
  PSFLOW_ASSIGN_OR_RETURN(
      TfJson cluster,
      parse_tf_json(json, "The cluster spec",
                    absl::StrCat("pass a JSON object mapping job names to addresses, like ",
                                 av(kClusterExample))));
  return cluster_spec_from_json_value(cluster);
}

absl::StatusOr<ClusterSpec> internal::cluster_spec_from_json_value(const TfJson& cluster) {
  if (!cluster.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("`cluster` must be a dictionary mapping one or more job names to lists of "
                     "network addresses, got ",
                     py_repr_abbrev(cluster), ". Set TF_CONFIG.cluster to a JSON object like ",
                     av(kClusterExample), "."));
  }
  // Pass 1, document order (as TF's dict iteration): each job's shape and
  // indices. Pointers into `cluster`, which outlives this function.
  std::map<std::string, std::map<int, const TfJson*>> raw;
  for (const auto& [job, tasks] : cluster.items()) {
    std::map<int, const TfJson*>& indexed = raw[job];
    if (tasks.is_array()) {
      int index = 0;
      for (const TfJson& address : tasks) indexed.emplace(index++, &address);
    } else if (tasks.is_object()) {
      std::map<int, std::string> key_of_index;
      for (const auto& [key, address] : tasks.items()) {
        absl::StatusOr<int> index = py_int_from_string(key);
        if (!index.ok()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "Task index ", py_repr_string(key), " of job ", py_repr_string(job),
              index.status().code() == absl::StatusCode::kOutOfRange ? " is out of range: "
                                                                     : " is not an integer: ",
              index.status().message(),
              ". Keys of a sparse job are 0-based task indices, like "
              R"({"0": "host:port", "2": "host:port"} ()",
              job_path(job), ")."));
        }
        if (*index < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("Task index ", *index, " of job ", py_repr_string(job),
                           " is negative. Task indices start at 0 (", job_path(job), ")."));
        }
        if (auto [it, inserted] = key_of_index.emplace(*index, key); !inserted) {
          return absl::InvalidArgumentError(
              absl::StrCat("Task index ", *index, " of job ", py_repr_string(job),
                           " is given twice, as ", py_repr_string(it->second), " and ",
                           py_repr_string(key), ". List each task once (", job_path(job), ")."));
        }
        indexed.emplace(*index, &address);
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "The tasks for job ", py_repr_string(job),
          " must be a list or a dictionary from integers to strings. Got ", py_repr_abbrev(tasks),
          "; write ", job_path(job),
          R"( as a list like ["host:port", ...] or an object like {"0": "host:port"}.)"));
    }
  }
  // Pass 2, sorted by job then index (as TF's _make_cluster_def): addresses.
  std::map<std::string, ClusterSpec::Tasks> jobs;
  for (const auto& [job, indexed] : raw) {
    ClusterSpec::Tasks& tasks = jobs[job];
    for (const auto& [index, address] : indexed) {
      if (!address->is_string()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "Task address ", py_repr_abbrev(*address), " must be bytes or unicode. Write task ",
            index, " of job ", py_repr_string(job), R"( as a "host:port" string ()", job_path(job),
            ")."));
      }
      tasks.emplace(index, address->get<std::string>());
    }
  }
  return ClusterSpec(std::move(jobs));
}

std::string ClusterSpec::to_json() const {
  TfJson out = TfJson::object();
  for (const auto& [job, tasks] : jobs_) {
    const bool dense =
        tasks.empty() ||
        (tasks.begin()->first == 0 && tasks.rbegin()->first + 1 == static_cast<int>(tasks.size()));
    if (dense) {
      TfJson list = TfJson::array();
      for (const auto& [index, address] : tasks) list.push_back(address);
      out[job] = std::move(list);
    } else {
      TfJson sparse = TfJson::object();
      for (const auto& [index, address] : tasks) sparse[std::to_string(index)] = address;
      out[job] = std::move(sparse);
    }
  }
  // Invalid UTF-8 (possible only in a spec built in code) is replaced rather
  // than thrown: to_json has no error channel.
  return out.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

std::vector<std::string> ClusterSpec::jobs() const {
  std::vector<std::string> names;
  names.reserve(jobs_.size());
  for (const auto& [job, tasks] : jobs_) names.push_back(job);
  return names;
}

bool ClusterSpec::has_job(std::string_view job) const {
  return jobs_.find(std::string(job)) != jobs_.end();
}

int ClusterSpec::num_tasks(std::string_view job) const {
  const auto it = jobs_.find(std::string(job));
  return it == jobs_.end() ? 0 : static_cast<int>(it->second.size());
}

std::vector<int> ClusterSpec::task_indices(std::string_view job) const {
  std::vector<int> indices;
  const auto it = jobs_.find(std::string(job));
  if (it == jobs_.end()) return indices;
  indices.reserve(it->second.size());
  for (const auto& [index, address] : it->second) indices.push_back(index);
  return indices;
}

absl::StatusOr<std::string> ClusterSpec::task_address(std::string_view job, int index) const {
  const auto job_it = jobs_.find(std::string(job));
  if (job_it == jobs_.end()) {
    std::vector<std::string> known;
    for (const auto& [name, tasks] : jobs_) known.push_back(py_repr_string(name));
    return absl::NotFoundError(absl::StrCat(
        "No such job in cluster: ", py_repr_string(job), " (the cluster has ",
        known.empty() ? "no jobs" : absl::StrCat("jobs ", absl::StrJoin(known, ", ")), ")"));
  }
  const auto task_it = job_it->second.find(index);
  if (task_it == job_it->second.end()) {
    return absl::NotFoundError(absl::StrCat(
        "No task with index ", index, " in job ", py_repr_string(job), " (its indices are ",
        job_it->second.empty() ? "none" : absl::StrJoin(task_indices(job), ", "), ")"));
  }
  return task_it->second;
}

std::string task_name(std::string_view job, int index) {
  return absl::StrCat("/job:", av(job), "/replica:0/task:", index);
}

}  // namespace psflow

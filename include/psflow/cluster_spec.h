// ClusterSpec: the jobs of a training cluster and the addresses of their tasks.
#ifndef PSFLOW_CLUSTER_SPEC_H_
#define PSFLOW_CLUSTER_SPEC_H_

#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace psflow {

// Job names psflow's ParameterServerStrategy knows (TF's set).
inline constexpr std::string_view kChiefJob = "chief";
inline constexpr std::string_view kWorkerJob = "worker";
inline constexpr std::string_view kPsJob = "ps";
inline constexpr std::string_view kEvaluatorJob = "evaluator";

// Maps job name -> task index -> "host:port", as tf.train.ClusterSpec.
// Indices may be sparse (TF_CONFIG allows `{"worker": {"1": "h:p"}}`).
// Thread-safety: a value type; const methods may run concurrently.
class ClusterSpec {
 public:
  using Tasks = std::map<int, std::string>;

  ClusterSpec() = default;
  // Dense job lists: {"ps": {"a:1", "b:2"}} gives ps tasks 0 and 1.
  explicit ClusterSpec(const std::map<std::string, std::vector<std::string>>& jobs);
  // The same from a braced list, ClusterSpec({{"ps", {"a:1", "b:2"}}}); without
  // it that call is ambiguous (a two-string list also reads as an iterator
  // range for the sparse map below).
  explicit ClusterSpec(
      std::initializer_list<std::pair<const std::string, std::vector<std::string>>> jobs)
      : ClusterSpec(std::map<std::string, std::vector<std::string>>(jobs)) {}
  explicit ClusterSpec(std::map<std::string, Tasks> jobs) : jobs_(std::move(jobs)) {}

  // Parses the "cluster" object of TF_CONFIG (already extracted as JSON
  // text). INVALID_ARGUMENT, with TF's wording plus the fix, for malformed
  // JSON (naming the byte), a non-object, a job whose tasks are not a list or
  // an {index: address} object, non-string addresses, or keys int() rejects.
  // Stricter than TF: negative indices and two keys for one index ("1" and
  // "01") are rejected too.
  [[nodiscard]] static absl::StatusOr<ClusterSpec> from_json(std::string_view json);
  // Compact JSON that from_json reads back to an equal spec (given UTF-8
  // names and non-negative indices). Dense jobs (indices 0..n-1, or none)
  // become lists, sparse ones objects keyed by index.
  [[nodiscard]] std::string to_json() const;

  [[nodiscard]] bool empty() const { return jobs_.empty(); }
  [[nodiscard]] std::vector<std::string> jobs() const;
  [[nodiscard]] bool has_job(std::string_view job) const;
  // Both are 0 / empty for an unknown job (TF raises there; here has_job
  // tells the cases apart).
  [[nodiscard]] int num_tasks(std::string_view job) const;
  [[nodiscard]] std::vector<int> task_indices(std::string_view job) const;
  [[nodiscard]] const std::map<std::string, Tasks>& as_map() const { return jobs_; }
  // NOT_FOUND: "No such job in cluster: 'x'" / "No task with index 3 in job
  // 'ps'", each followed by the jobs or indices that do exist.
  [[nodiscard]] absl::StatusOr<std::string> task_address(std::string_view job, int index) const;

  friend bool operator==(const ClusterSpec&, const ClusterSpec&) = default;

 private:
  std::map<std::string, Tasks> jobs_;
};

// TF's device-style name of a task: "/job:ps/replica:0/task:1".
[[nodiscard]] std::string task_name(std::string_view job, int index);

}  // namespace psflow

#endif  // PSFLOW_CLUSTER_SPEC_H_

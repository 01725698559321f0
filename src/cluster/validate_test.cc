// validate_parameter_server_cluster: TF's checks, order and messages.
#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/cluster_resolver.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

ClusterSpec good_spec() {
  return ClusterSpec({{"chief", {"c:1"}}, {"ps", {"p0:1", "p1:1"}}, {"worker", {"w0:1", "w1:1"}}});
}

// The validation error for (spec, type, id); fails the test if it passes.
std::string error_of(const ClusterSpec& spec, std::optional<std::string> type,
                     std::optional<int> id) {
  const absl::Status status = validate_parameter_server_cluster(spec, type, id);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  return std::string(status.message());
}

TEST(ValidateParameterServerClusterTest, AcceptsEveryRoleOfAGoodCluster) {
  const ClusterSpec spec = good_spec();
  EXPECT_TRUE(validate_parameter_server_cluster(spec, "chief", 0).ok());
  EXPECT_TRUE(validate_parameter_server_cluster(spec, "ps", 1).ok());
  EXPECT_TRUE(validate_parameter_server_cluster(spec, "worker", 1).ok());
  EXPECT_TRUE(validate_parameter_server_cluster(spec, std::nullopt, std::nullopt).ok());
  // A task id without a task type is ignored, as in TF.
  EXPECT_TRUE(validate_parameter_server_cluster(spec, std::nullopt, 99).ok());
}

TEST(ValidateParameterServerClusterTest, ChiefIsOptional) {
  const ClusterSpec spec({{"ps", {"p:1"}}, {"worker", {"w:1"}}});
  EXPECT_TRUE(validate_parameter_server_cluster(spec, "worker", 0).ok());
}

TEST(ValidateParameterServerClusterTest, EvaluatorMayBeOutsideTheCluster) {
  EXPECT_TRUE(validate_parameter_server_cluster(good_spec(), "evaluator", 0).ok());
  EXPECT_TRUE(validate_parameter_server_cluster(good_spec(), "evaluator", 5).ok());
  ClusterSpec::Tasks evaluator = {{0, "e:1"}};
  std::map<std::string, ClusterSpec::Tasks> jobs = good_spec().as_map();
  jobs["evaluator"] = evaluator;
  EXPECT_TRUE(validate_parameter_server_cluster(ClusterSpec(jobs), "evaluator", 0).ok());
}

TEST(ValidateParameterServerClusterTest, Step1EmptySpec) {
  EXPECT_EQ(error_of(ClusterSpec(), "worker", 0),
            "Cluster spec must be non-empty in `tf.distribute.cluster_resolver.ClusterResolver`. "
            "Set TF_CONFIG.cluster to the cluster's jobs, like {\"chief\": [\"host:port\"], "
            "\"worker\": [\"host:port\"], \"ps\": [\"host:port\"]}.");
}

TEST(ValidateParameterServerClusterTest, Step2DisallowedJobName) {
  const ClusterSpec spec(std::map<std::string, ClusterSpec::Tasks>{
      {"ps", {{0, "p:1"}}}, {"worker", {{0, "w:1"}}}, {"trainer", {{2, "t:1"}}}});
  EXPECT_EQ(error_of(spec, "worker", 0),
            "Disallowed task type found in cluster spec. Allowed types are ('chief', 'worker', "
            "'evaluator', 'ps', None) and the cluster spec is ClusterSpec({'ps': ['p:1'], "
            "'trainer': {2: 't:1'}, 'worker': ['w:1']}). Rename or remove job 'trainer' "
            "(TF_CONFIG.cluster); the known jobs are chief, worker, ps and evaluator.");
}

TEST(ValidateParameterServerClusterTest, Step3UnrecognizedTaskType) {
  EXPECT_EQ(error_of(good_spec(), "foobar", 0),
            "Unrecognized task_type: foobar, valid task types are: ('chief', 'worker', "
            "'evaluator', 'ps', None). Set TF_CONFIG.task.type to chief, worker, ps or "
            "evaluator.");
  EXPECT_THAT(error_of(good_spec(), "", 0), StartsWith("Unrecognized task_type: , valid"));
  EXPECT_THAT(error_of(good_spec(), "Worker", 0), StartsWith("Unrecognized task_type: Worker"));
}

TEST(ValidateParameterServerClusterTest, Step4TaskTypeNotInCluster) {
  const ClusterSpec spec({{"ps", {"p:1"}}, {"worker", {"w:1"}}});
  EXPECT_EQ(error_of(spec, "chief", 0),
            "`task_type` 'chief' not found in cluster_spec. Add a \"chief\" job to "
            "TF_CONFIG.cluster or correct TF_CONFIG.task.type.");
}

TEST(ValidateParameterServerClusterTest, Step5AtMostOneChiefThenEvaluator) {
  std::map<std::string, ClusterSpec::Tasks> jobs = good_spec().as_map();
  jobs["chief"] = {{0, "c0:1"}, {1, "c1:1"}};
  jobs["evaluator"] = {{0, "e0:1"}, {1, "e1:1"}};
  EXPECT_EQ(error_of(ClusterSpec(jobs), "worker", 0),
            "There must be at most one 'chief' job. TF_CONFIG.cluster.chief lists 2 tasks; "
            "keep exactly one address there.");
  jobs["chief"] = {{0, "c0:1"}};
  EXPECT_EQ(error_of(ClusterSpec(jobs), "worker", 0),
            "There must be at most one 'evaluator' job. TF_CONFIG.cluster.evaluator lists 2 "
            "tasks; keep exactly one address there.");
}

TEST(ValidateParameterServerClusterTest, Step6TaskIdOutOfRange) {
  EXPECT_EQ(error_of(good_spec(), "worker", 2),
            "The `task_id` 2 exceeds the maximum id of worker. Set TF_CONFIG.task.index to a "
            "value from 0 to 1 (job 'worker' has 2 tasks).");
  EXPECT_EQ(error_of(good_spec(), "chief", 1),
            "The `task_id` 1 exceeds the maximum id of chief. Set TF_CONFIG.task.index to a "
            "value from 0 to 0 (job 'chief' has 1 task).");
}

TEST(ValidateParameterServerClusterTest, Step6SparseJobComparesWithTheTaskCountAsTf) {
  const ClusterSpec spec(
      std::map<std::string, ClusterSpec::Tasks>{{"ps", {{0, "p:1"}}}, {"worker", {{1, "w1:1"}}}});
  EXPECT_THAT(error_of(spec, "worker", 1),
              StartsWith("The `task_id` 1 exceeds the maximum id of worker."));
}

TEST(ValidateParameterServerClusterTest, Step6MissingOrNegativeTaskId) {
  EXPECT_EQ(error_of(good_spec(), "ps", std::nullopt),
            "The `task_id` is missing for task_type 'ps'. Set TF_CONFIG.task.index to a value "
            "from 0 to 1 (job 'ps' has 2 tasks).");
  EXPECT_EQ(error_of(good_spec(), "ps", -1),
            "The `task_id` -1 is negative. Set TF_CONFIG.task.index to a value from 0 to 1 "
            "(job 'ps' has 2 tasks).");
}

TEST(ValidateParameterServerClusterTest, Step6TaskOfAJobWithoutTasks) {
  const ClusterSpec spec({{"ps", {}}, {"worker", {"w:1"}}});
  EXPECT_EQ(error_of(spec, "ps", 0),
            "The `task_id` 0 exceeds the maximum id of ps. Job 'ps' has no tasks; add its "
            "addresses to TF_CONFIG.cluster.ps.");
}

TEST(ValidateParameterServerClusterTest, Step7AtLeastOnePsThenOneWorker) {
  EXPECT_EQ(error_of(ClusterSpec({{"chief", {"c:1"}}, {"worker", {"w:1"}}}), "chief", 0),
            "There must be at least one ps. Add a \"ps\" job with one or more addresses to "
            "the cluster spec (TF_CONFIG.cluster.ps).");
  EXPECT_EQ(
      error_of(ClusterSpec({{"chief", {"c:1"}}, {"ps", {}}, {"worker", {"w:1"}}}), "chief", 0),
      "There must be at least one ps. Add a \"ps\" job with one or more addresses to "
      "the cluster spec (TF_CONFIG.cluster.ps).");
  EXPECT_EQ(error_of(ClusterSpec({{"chief", {"c:1"}}, {"ps", {"p:1"}}}), "chief", 0),
            "There must be at least one worker. Add a \"worker\" job with one or more "
            "addresses to the cluster spec (TF_CONFIG.cluster.worker).");
  // Both missing: the ps check comes first, as in TF.
  EXPECT_THAT(error_of(ClusterSpec({{"chief", {"c:1"}}}), "chief", 0),
              StartsWith("There must be at least one ps."));
}

TEST(ValidateParameterServerClusterTest, ChecksRunInTfOrder) {
  // A spec breaking every rule reports them one at a time, in TF's order,
  // as each is fixed.
  std::map<std::string, ClusterSpec::Tasks> jobs = {{"trainer", {{0, "t:1"}}},
                                                    {"chief", {{0, "c0:1"}, {1, "c1:1"}}}};
  EXPECT_THAT(error_of(ClusterSpec(jobs), "foobar", 9), StartsWith("Disallowed task type"));
  jobs.erase("trainer");
  EXPECT_THAT(error_of(ClusterSpec(jobs), "foobar", 9), StartsWith("Unrecognized task_type"));
  EXPECT_THAT(error_of(ClusterSpec(jobs), "worker", 9), StartsWith("`task_type` 'worker' not"));
  EXPECT_THAT(error_of(ClusterSpec(jobs), "chief", 9), StartsWith("There must be at most one"));
  jobs["chief"] = {{0, "c:1"}};
  EXPECT_THAT(error_of(ClusterSpec(jobs), "chief", 9), StartsWith("The `task_id` 9 exceeds"));
  EXPECT_THAT(error_of(ClusterSpec(jobs), "chief", 0), StartsWith("There must be at least one ps"));
  jobs["ps"] = {{0, "p:1"}};
  EXPECT_THAT(error_of(ClusterSpec(jobs), "chief", 0),
              StartsWith("There must be at least one worker"));
  jobs["worker"] = {{0, "w:1"}};
  EXPECT_TRUE(validate_parameter_server_cluster(ClusterSpec(jobs), "chief", 0).ok());
}

TEST(ValidateParameterServerClusterTest, WorksOnTheResolversAnswer) {
  const TFConfigClusterResolver resolver(
      {.tf_config_json = R"({"cluster": {"chief": ["c:1"], "ps": ["p:1"], "worker": ["w:1"]},
                             "task": {"type": "worker", "index": "3"}})"});
  const absl::Status status = validate_parameter_server_cluster(
      resolver.cluster_spec().value(), resolver.task_type().value(), resolver.task_id().value());
  EXPECT_THAT(status.message(), HasSubstr("The `task_id` 3 exceeds the maximum id of worker."));
}

}  // namespace
}  // namespace psflow::internal

// SlurmClusterResolver against the cases of TF's
// slurm_cluster_resolver_test.py, rank-to-job assignment, master(), and
// every error. The environment is a map (Options::environment) except in
// the one test of the process environment.
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/cluster_resolver.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

using Env = std::map<std::string, std::string>;
using Jobs = std::vector<std::pair<std::string, int>>;

// TF's test environment: three nodes, one task each.
Env tf_env(int rank = 0) {
  return {{"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_STEP_NUM_TASKS", "3"},
          {"SLURM_STEP_TASKS_PER_NODE", "1(x3)"},
          {"SLURM_STEP_NODELIST", "t02n13,t02n41,t02n43"}};
}

// The deploy/slurm example: 1 chief, 2 ps, 2 workers on 3 nodes.
Env example_env(int rank) {
  return {{"SLURM_PROCID", std::to_string(rank)},
          {"SLURM_STEP_NUM_TASKS", "5"},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x2),1"},
          {"SLURM_STEP_NODELIST", "n[1-3]"}};
}
const Jobs kExampleJobs = {{"chief", 1}, {"ps", 2}, {"worker", 2}};

SlurmClusterResolver resolve(SlurmClusterResolver::Options options) {
  absl::StatusOr<SlurmClusterResolver> resolver = SlurmClusterResolver::create(std::move(options));
  EXPECT_TRUE(resolver.ok()) << resolver.status();
  if (!resolver.ok()) std::abort();  // The caller's expectations cannot run.
  return *std::move(resolver);
}

// The status create() fails with, checked to have `code`.
std::string error_of(SlurmClusterResolver::Options options,
                     absl::StatusCode code = absl::StatusCode::kInvalidArgument) {
  absl::StatusOr<SlurmClusterResolver> resolver = SlurmClusterResolver::create(std::move(options));
  EXPECT_FALSE(resolver.ok());
  EXPECT_EQ(resolver.status().code(), code) << resolver.status();
  return std::string(resolver.status().message());
}

std::pair<std::string, int> task_of(const SlurmClusterResolver& resolver) {
  return {resolver.task_type().value().value(), resolver.task_id().value().value()};
}

// TF's test_simple_retrieval_from_env: the default jobs.
TEST(SlurmClusterResolverTest, DefaultIsOneWorkerJobOfEveryTask) {
  const SlurmClusterResolver resolver = resolve({.environment = tf_env()});
  EXPECT_EQ(resolver.cluster_spec().value(),
            ClusterSpec({{"worker", {"t02n13:8888", "t02n41:8888", "t02n43:8888"}}}));
  EXPECT_EQ(task_of(resolver), std::make_pair(std::string("worker"), 0));
  EXPECT_EQ(resolver.rpc_layer().value(), "grpc");
  EXPECT_EQ(resolver.rank(), 0);
  EXPECT_EQ(resolver.master().value(), "grpc://t02n13:8888");
}

// TF's test_simple_successful_retrieval (tasks_per_node given).
TEST(SlurmClusterResolverTest, JobsTakeConsecutiveRanks) {
  const SlurmClusterResolver resolver =
      resolve({.jobs = {{"ps", 1}, {"worker", 2}}, .tasks_per_node = 1, .environment = tf_env()});
  EXPECT_EQ(resolver.cluster_spec().value(),
            ClusterSpec({{"ps", {"t02n13:8888"}}, {"worker", {"t02n41:8888", "t02n43:8888"}}}));
  EXPECT_EQ(task_of(resolver), std::make_pair(std::string("ps"), 0));
  EXPECT_EQ(resolver.master().value(), "grpc://t02n13:8888");
}

// TF's test_multi_task_per_node_retrieval: ports count up within a node.
TEST(SlurmClusterResolverTest, SeveralTasksPerNodeTakeConsecutivePorts) {
  const SlurmClusterResolver resolver =
      resolve({.jobs = {{"ps", 1}, {"worker", 3}},
               .environment = Env{{"SLURM_PROCID", "1"},
                                  {"SLURM_STEP_NUM_TASKS", "4"},
                                  {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"},
                                  {"SLURM_STEP_NODELIST", "t02n13,t02n41"}}});
  EXPECT_EQ(resolver.cluster_spec().value(),
            ClusterSpec({{"ps", {"t02n13:8888"}},
                         {"worker", {"t02n13:8889", "t02n41:8888", "t02n41:8889"}}}));
  EXPECT_EQ(task_of(resolver), std::make_pair(std::string("worker"), 0));
  EXPECT_EQ(resolver.master().value(), "grpc://t02n13:8889");
}

// The deploy/slurm example, from every rank's point of view.
TEST(SlurmClusterResolverTest, ChiefPsWorkerOverThreeNodes) {
  const ClusterSpec expected(
      {{"chief", {"n1:8888"}}, {"ps", {"n1:8889", "n2:8888"}}, {"worker", {"n2:8889", "n3:8888"}}});
  const std::vector<std::pair<std::string, int>> roles = {
      {"chief", 0}, {"ps", 0}, {"ps", 1}, {"worker", 0}, {"worker", 1}};
  const std::vector<std::string> addresses = {"n1:8888", "n1:8889", "n2:8888", "n2:8889",
                                              "n3:8888"};
  for (int rank = 0; rank < 5; ++rank) {
    SCOPED_TRACE(rank);
    const SlurmClusterResolver resolver =
        resolve({.jobs = kExampleJobs, .environment = example_env(rank)});
    EXPECT_EQ(resolver.cluster_spec().value(), expected);
    EXPECT_EQ(task_of(resolver), roles[rank]);
    EXPECT_EQ(resolver.master().value(), "grpc://" + addresses[rank]);
  }
}

// Unlike TF, which sorts both alphabetically: ranks follow the given order.
TEST(SlurmClusterResolverTest, JobsAndNodesKeepTheirOrder) {
  const SlurmClusterResolver resolver =
      resolve({.jobs = {{"worker", 2}, {"ps", 1}},
               .environment = Env{{"SLURM_PROCID", "2"},
                                  {"SLURM_STEP_TASKS_PER_NODE", "1(x3)"},
                                  {"SLURM_STEP_NODELIST", "n[9-11]"}}});
  EXPECT_EQ(resolver.cluster_spec().value(),
            ClusterSpec({{"worker", {"n9:8888", "n10:8888"}}, {"ps", {"n11:8888"}}}));
  EXPECT_EQ(task_of(resolver), std::make_pair(std::string("ps"), 0));
}

TEST(SlurmClusterResolverTest, JobVariablesStandInForMissingStepVariables) {
  const SlurmClusterResolver resolver =
      resolve({.environment = Env{{"SLURM_PROCID", "1"},
                                  {"SLURM_NTASKS", "2"},
                                  {"SLURM_TASKS_PER_NODE", "2"},
                                  {"SLURM_JOB_NODELIST", "a01"}}});
  EXPECT_EQ(resolver.cluster_spec().value(), ClusterSpec({{"worker", {"a01:8888", "a01:8889"}}}));
  EXPECT_EQ(task_of(resolver), std::make_pair(std::string("worker"), 1));
}

TEST(SlurmClusterResolverTest, StepVariablesWinOverJobVariables) {
  Env env = tf_env(2);
  env.insert(
      {{"SLURM_NTASKS", "8"}, {"SLURM_TASKS_PER_NODE", "4(x2)"}, {"SLURM_JOB_NODELIST", "x[1-2]"}});
  const SlurmClusterResolver resolver = resolve({.environment = env});
  EXPECT_EQ(resolver.cluster_spec().value(),
            ClusterSpec({{"worker", {"t02n13:8888", "t02n41:8888", "t02n43:8888"}}}));
  EXPECT_EQ(task_of(resolver), std::make_pair(std::string("worker"), 2));
}

TEST(SlurmClusterResolverTest, TasksPerNodeOverridesSlurm) {
  // Slurm says one task per node; the option says two.
  Env env = tf_env(5);
  env["SLURM_STEP_NUM_TASKS"] = "6";
  const SlurmClusterResolver resolver = resolve({.tasks_per_node = 2, .environment = env});
  EXPECT_EQ(resolver.cluster_spec().value(),
            ClusterSpec({{"worker",
                          {"t02n13:8888", "t02n13:8889", "t02n41:8888", "t02n41:8889",
                           "t02n43:8888", "t02n43:8889"}}}));
  EXPECT_EQ(task_of(resolver), std::make_pair(std::string("worker"), 5));
}

TEST(SlurmClusterResolverTest, TasksPerNodeOverrideNeedsNoSlurmValue) {
  Env env = tf_env(0);
  env.erase("SLURM_STEP_TASKS_PER_NODE");
  EXPECT_EQ(
      resolve({.tasks_per_node = 1, .environment = env}).cluster_spec().value().num_tasks("worker"),
      3);
}

TEST(SlurmClusterResolverTest, GivenJobsNeedNoTaskCount) {
  Env env = example_env(4);
  env.erase("SLURM_STEP_NUM_TASKS");
  EXPECT_EQ(task_of(resolve({.jobs = kExampleJobs, .environment = env})),
            std::make_pair(std::string("worker"), 1));
}

TEST(SlurmClusterResolverTest, PortBaseAndRpcLayer) {
  const SlurmClusterResolver resolver = resolve({.jobs = kExampleJobs,
                                                 .port_base = 2000,
                                                 .rpc_layer = "grpc+tls",
                                                 .environment = example_env(2)});
  EXPECT_EQ(resolver.cluster_spec().value().task_address("ps", 1).value(), "n2:2000");
  EXPECT_EQ(resolver.cluster_spec().value().task_address("ps", 0).value(), "n1:2001");
  EXPECT_EQ(resolver.rpc_layer().value(), "grpc+tls");
  EXPECT_EQ(resolver.master().value(), "grpc+tls://n2:2000");
}

TEST(SlurmClusterResolverTest, HighestPortsAreAllowed) {
  const SlurmClusterResolver resolver =
      resolve({.jobs = kExampleJobs, .port_base = 65534, .environment = example_env(1)});
  EXPECT_EQ(resolver.master().value(), "grpc://n1:65535");
}

TEST(SlurmClusterResolverTest, MasterOfAGivenTask) {
  const SlurmClusterResolver resolver =
      resolve({.jobs = kExampleJobs, .environment = example_env(0)});
  EXPECT_EQ(resolver.master("worker", 1).value(), "grpc://n3:8888");
  EXPECT_EQ(resolver.master("ps").value(), "grpc://n1:8889");  // Own id: 0.
  EXPECT_EQ(resolver.master(std::nullopt, std::nullopt, "test").value(), "test://n1:8888");
  // TF: `rpc_layer or self.rpc_layer`, so "" means the resolver's.
  EXPECT_EQ(resolver.master("ps", 1, "").value(), "grpc://n2:8888");
}

TEST(SlurmClusterResolverTest, MasterWithoutRpcLayerIsABareAddress) {
  const SlurmClusterResolver resolver =
      resolve({.jobs = kExampleJobs, .rpc_layer = std::nullopt, .environment = example_env(3)});
  EXPECT_EQ(resolver.rpc_layer().value(), std::nullopt);
  EXPECT_EQ(resolver.master().value(), "n2:8889");
}

TEST(SlurmClusterResolverTest, MasterOfAOneTaskClusterIsItsAddress) {
  // The base ClusterResolver::master gives "" here; TF's Slurm resolver does not.
  const SlurmClusterResolver resolver =
      resolve({.environment = Env{{"SLURM_PROCID", "0"},
                                  {"SLURM_STEP_NUM_TASKS", "1"},
                                  {"SLURM_STEP_TASKS_PER_NODE", "1"},
                                  {"SLURM_STEP_NODELIST", "solo"}}});
  EXPECT_EQ(resolver.master().value(), "grpc://solo:8888");
}

TEST(SlurmClusterResolverTest, MasterOfAnUnknownTaskIsNotFound) {
  const SlurmClusterResolver resolver =
      resolve({.jobs = kExampleJobs, .environment = example_env(0)});
  absl::StatusOr<std::string> master = resolver.master("evaluator", 0);
  EXPECT_EQ(master.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(master.status().message(), HasSubstr("evaluator"));
  master = resolver.master("ps", 2);
  EXPECT_EQ(master.status().code(), absl::StatusCode::kNotFound);
}

TEST(SlurmClusterResolverTest, EmptyJobsArePartOfTheSpec) {
  const SlurmClusterResolver resolver =
      resolve({.jobs = {{"chief", 1}, {"evaluator", 0}, {"worker", 2}}, .environment = tf_env(1)});
  EXPECT_TRUE(resolver.cluster_spec().value().has_job("evaluator"));
  EXPECT_EQ(resolver.cluster_spec().value().num_tasks("evaluator"), 0);
  EXPECT_EQ(task_of(resolver), std::make_pair(std::string("worker"), 0));
}

// --- Missing variables: FAILED_PRECONDITION naming them and srun.

TEST(SlurmClusterResolverTest, MissingRankIsAFailedPrecondition) {
  Env env = tf_env();
  env.erase("SLURM_PROCID");
  const std::string message = error_of({.environment = env}, absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(message, HasSubstr("SLURM_PROCID not found in environment"));
  EXPECT_THAT(message, HasSubstr("Not running inside a SLURM step?"));
  EXPECT_THAT(message, HasSubstr("srun"));
}

TEST(SlurmClusterResolverTest, MissingNodeListNamesBothVariables) {
  Env env = tf_env();
  env.erase("SLURM_STEP_NODELIST");
  EXPECT_THAT(error_of({.environment = env}, absl::StatusCode::kFailedPrecondition),
              HasSubstr("SLURM_STEP_NODELIST not found in environment (nor SLURM_JOB_NODELIST)"));
}

TEST(SlurmClusterResolverTest, MissingTasksPerNodeNamesBothVariables) {
  Env env = tf_env();
  env.erase("SLURM_STEP_TASKS_PER_NODE");
  EXPECT_THAT(
      error_of({.environment = env}, absl::StatusCode::kFailedPrecondition),
      HasSubstr("SLURM_STEP_TASKS_PER_NODE not found in environment (nor SLURM_TASKS_PER_NODE)"));
}

TEST(SlurmClusterResolverTest, DefaultJobsNeedTheTaskCount) {
  Env env = tf_env();
  env.erase("SLURM_STEP_NUM_TASKS");
  EXPECT_THAT(error_of({.environment = env}, absl::StatusCode::kFailedPrecondition),
              HasSubstr("SLURM_STEP_NUM_TASKS not found in environment (nor SLURM_NTASKS)"));
}

// --- Malformed values: INVALID_ARGUMENT naming the variable and value.

TEST(SlurmClusterResolverTest, RankMustBeANumber) {
  for (const std::string bad : {"", "abc", "-1", " 1", "1.0", "+1", "1234567890"}) {
    SCOPED_TRACE(bad);
    Env env = tf_env();
    env["SLURM_PROCID"] = bad;
    const std::string message = error_of({.environment = env});
    EXPECT_THAT(message, HasSubstr("SLURM_PROCID=\"" + bad + "\" is not a rank"));
    EXPECT_THAT(message, HasSubstr("like SLURM_PROCID=3"));
  }
}

TEST(SlurmClusterResolverTest, TaskCountMustBeANumber) {
  Env env = tf_env();
  env["SLURM_STEP_NUM_TASKS"] = "three";
  EXPECT_THAT(error_of({.environment = env}),
              HasSubstr("SLURM_STEP_NUM_TASKS=\"three\" is not a task count"));
}

TEST(SlurmClusterResolverTest, MalformedNodeListNamesTheVariable) {
  Env env = tf_env();
  env["SLURM_STEP_NODELIST"] = "n[5-3]";
  std::string message = error_of({.environment = env});
  EXPECT_THAT(message, HasSubstr("SLURM_STEP_NODELIST: Invalid hostlist format \"n[5-3]\""));
  EXPECT_THAT(message, HasSubstr("runs backwards"));
  env["SLURM_STEP_NODELIST"] = "t02n[13,41,43";
  message = error_of({.environment = env});
  EXPECT_THAT(message, HasSubstr("SLURM_STEP_NODELIST: Invalid hostlist format"));
  EXPECT_THAT(message, HasSubstr("is never closed"));
}

TEST(SlurmClusterResolverTest, EmptyNodeListIsRejected) {
  Env env = tf_env();
  env["SLURM_STEP_NODELIST"] = "";
  EXPECT_THAT(error_of({.environment = env}), HasSubstr("SLURM_STEP_NODELIST=\"\" lists no nodes"));
}

TEST(SlurmClusterResolverTest, NodeListedTwiceIsRejected) {
  Env env = tf_env();
  env["SLURM_STEP_NODELIST"] = "a,b,a";
  EXPECT_THAT(error_of({.environment = env}),
              HasSubstr("SLURM_STEP_NODELIST=\"a,b,a\" lists node \"a\" twice"));
}

TEST(SlurmClusterResolverTest, MalformedTasksPerNodeNamesTheVariable) {
  Env env = tf_env();
  env["SLURM_STEP_TASKS_PER_NODE"] = "1(x3";
  const std::string message = error_of({.environment = env});
  EXPECT_THAT(message,
              HasSubstr("SLURM_STEP_TASKS_PER_NODE: Invalid tasks-per-node list format \"1(x3\""));
  EXPECT_THAT(message, HasSubstr("or pass tasks_per_node"));
}

TEST(SlurmClusterResolverTest, TasksPerNodeMustCoverEveryNode) {
  Env env = tf_env();
  env["SLURM_STEP_TASKS_PER_NODE"] = "1(x2)";
  EXPECT_THAT(error_of({.environment = env}),
              HasSubstr("SLURM_STEP_TASKS_PER_NODE=\"1(x2)\" covers 2 node(s) but "
                        "SLURM_STEP_NODELIST=\"t02n13,t02n41,t02n43\" lists 3"));
  env["SLURM_STEP_TASKS_PER_NODE"] = "1(x4)";
  EXPECT_THAT(error_of({.environment = env}), HasSubstr("covers 4 node(s)"));
}

TEST(SlurmClusterResolverTest, MoreRequestedThanAssignedIsRejected) {
  const std::string message =
      error_of({.jobs = {{"chief", 1}, {"ps", 2}, {"worker", 3}}, .environment = example_env(0)});
  EXPECT_THAT(message, HasSubstr("Requested 6 tasks but only 5 were assigned"));
  EXPECT_THAT(message, HasSubstr("jobs {\"chief\": 1, \"ps\": 2, \"worker\": 3}"));
  EXPECT_THAT(message, HasSubstr("SLURM_STEP_TASKS_PER_NODE=\"2(x2),1\" over "
                                 "SLURM_STEP_NODELIST=\"n[1-3]\" gives the step 5"));
  EXPECT_THAT(message, HasSubstr("srun --ntasks=6"));
}

TEST(SlurmClusterResolverTest, FewerRequestedThanAssignedIsRejected) {
  // As TF (`!=`): a task with no job would have no role.
  const std::string message =
      error_of({.jobs = {{"ps", 1}, {"worker", 1}}, .environment = example_env(0)});
  EXPECT_THAT(message, HasSubstr("Requested 2 tasks but 5 were assigned"));
  EXPECT_THAT(message, HasSubstr("change the jobs to add up to 5"));
}

TEST(SlurmClusterResolverTest, DefaultJobsMustMatchTheNodes) {
  Env env = tf_env();
  env["SLURM_STEP_NUM_TASKS"] = "4";
  EXPECT_THAT(error_of({.environment = env}),
              HasSubstr("Requested 4 tasks but only 3 were assigned: jobs {\"worker\": 4} (the "
                        "default: every task of SLURM_STEP_NUM_TASKS=\"4\" a worker)"));
}

TEST(SlurmClusterResolverTest, RankOutsideTheTasksIsRejected) {
  Env env = tf_env(3);
  EXPECT_THAT(error_of({.environment = env}),
              HasSubstr("SLURM_PROCID=\"3\" is outside the step's 3 tasks (ranks 0 to 2"));
}

TEST(SlurmClusterResolverTest, BadJobsAreRejected) {
  EXPECT_THAT(error_of({.jobs = {{"ps", 1}, {"", 2}}, .environment = tf_env()}),
              HasSubstr("hold an empty job name"));
  EXPECT_THAT(error_of({.jobs = {{"ps", 1}, {"ps", 2}}, .environment = tf_env()}),
              HasSubstr("name job \"ps\" twice"));
  EXPECT_THAT(error_of({.jobs = {{"ps", 4}, {"worker", -1}}, .environment = tf_env()}),
              HasSubstr("give job \"worker\" -1 tasks"));
}

TEST(SlurmClusterResolverTest, PortsMustFit) {
  for (const int bad : {0, -5, 65536}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(error_of({.jobs = kExampleJobs, .port_base = bad, .environment = example_env(0)}),
                HasSubstr("port_base is " + std::to_string(bad)));
  }
  // Two tasks on a node need two ports.
  EXPECT_THAT(error_of({.jobs = kExampleJobs, .port_base = 65535, .environment = example_env(0)}),
              HasSubstr("choose port_base from 1 to 65534"));
}

TEST(SlurmClusterResolverTest, TasksPerNodeOptionMustBePositive) {
  for (const int bad : {0, -1, 65536}) {
    SCOPED_TRACE(bad);
    EXPECT_THAT(error_of({.tasks_per_node = bad, .environment = tf_env()}),
                HasSubstr("tasks_per_node is " + std::to_string(bad) + "; use 1 to 65535"));
  }
}

TEST(SlurmClusterResolverTest, TooManyTasksAreRefused) {
  Env env = tf_env();
  env["SLURM_STEP_NODELIST"] = "n[1-100]";
  env["SLURM_STEP_TASKS_PER_NODE"] = "65535(x100)";
  EXPECT_THAT(error_of({.jobs = {{"worker", 6553500}}, .environment = env}),
              HasSubstr("makes 6553500 tasks, more than the 1000000 psflow supports"));
}

// The default reads the process environment; this test sets it and puts
// back whatever was there.
class SlurmClusterResolverProcessEnvTest : public ::testing::Test {
 protected:
  static constexpr const char* kVariables[] = {"SLURM_PROCID",        "SLURM_STEP_NUM_TASKS",
                                               "SLURM_NTASKS",        "SLURM_STEP_NODELIST",
                                               "SLURM_JOB_NODELIST",  "SLURM_STEP_TASKS_PER_NODE",
                                               "SLURM_TASKS_PER_NODE"};

  void SetUp() override {
    for (const char* name : kVariables) {
      if (const char* value = std::getenv(name); value != nullptr) saved_[name] = value;
      ASSERT_EQ(unsetenv(name), 0);
    }
  }
  void TearDown() override {
    for (const char* name : kVariables) {
      if (const auto it = saved_.find(name); it != saved_.end()) {
        setenv(name, it->second.c_str(), /*overwrite=*/1);
      } else {
        unsetenv(name);
      }
    }
  }

 private:
  std::map<std::string, std::string> saved_;
};

TEST_F(SlurmClusterResolverProcessEnvTest, ReadsTheProcessEnvironment) {
  absl::StatusOr<SlurmClusterResolver> missing = SlurmClusterResolver::create();
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  for (const auto& [name, value] : example_env(2)) {
    ASSERT_EQ(setenv(name.c_str(), value.c_str(), /*overwrite=*/1), 0);
  }
  const SlurmClusterResolver resolver = resolve({.jobs = kExampleJobs});
  EXPECT_EQ(task_of(resolver), std::make_pair(std::string("ps"), 1));
  EXPECT_EQ(resolver.master().value(), "grpc://n2:8888");
  // An empty map is an empty environment, not "use the process's".
  EXPECT_EQ(
      error_of({.jobs = kExampleJobs, .environment = Env{}}, absl::StatusCode::kFailedPrecondition),
      error_of({.jobs = kExampleJobs, .environment = Env{{"SLURM_X", "1"}}},
               absl::StatusCode::kFailedPrecondition));
}

}  // namespace
}  // namespace psflow::internal

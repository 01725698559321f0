// The Slurm flags of `psflow server` and `psflow train`: --slurm-jobs
// parsing and which flags combine. The end-to-end runs are in
// tests/integration/server_cli_test.cc.
#include "cli/cluster_flags.h"

#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

using Jobs = std::vector<std::pair<std::string, int>>;

TEST(SlurmCliFlagsTest, JobsParseInOrder) {
  EXPECT_EQ(parse_slurm_jobs("chief:1,ps:2,worker:2").value(),
            Jobs({{"chief", 1}, {"ps", 2}, {"worker", 2}}));
  EXPECT_EQ(parse_slurm_jobs("worker:3,ps:1").value(), Jobs({{"worker", 3}, {"ps", 1}}));
  EXPECT_EQ(parse_slurm_jobs("evaluator:0").value(), Jobs({{"evaluator", 0}}));
  EXPECT_EQ(parse_slurm_jobs("").value(), Jobs());  // The resolver's default.
}

TEST(SlurmCliFlagsTest, MalformedJobsNameTheFlagAndTheForm) {
  for (const auto& [bad, detail] : std::vector<std::pair<std::string, std::string>>{
           {"chief:1,,ps:2", "an item is empty"},
           {"chief:1,", "an item is empty"},
           {"chief", "'chief' is not job:count"},
           {":2", "':2' is not job:count"},
           {"ps:", "the count of 'ps:' is not a number"},
           {"ps:-1", "the count of 'ps:-1' is not a number"},
           {"ps:two", "the count of 'ps:two' is not a number"},
           {"ps:1234567890", "the count of 'ps:1234567890' is not a number"}}) {
    SCOPED_TRACE(bad);
    absl::StatusOr<Jobs> jobs = parse_slurm_jobs(bad);
    EXPECT_EQ(jobs.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(jobs.status().message(), HasSubstr("--slurm-jobs '" + bad + "': " + detail));
    EXPECT_THAT(jobs.status().message(), HasSubstr("like chief:1,ps:2,worker:2"));
  }
}

// Parses `args` (after the program name) into flags, as the subcommands do.
class SlurmCliFlagsAppTest : public ::testing::Test {
 protected:
  static constexpr const char* kVariables[] = {"TF_CONFIG",
                                               "SLURM_PROCID",
                                               "SLURM_STEP_NODELIST",
                                               "SLURM_JOB_NODELIST",
                                               "SLURM_STEP_TASKS_PER_NODE",
                                               "SLURM_TASKS_PER_NODE",
                                               "SLURM_STEP_NUM_TASKS",
                                               "SLURM_NTASKS"};

  void SetUp() override {
    for (const char* name : kVariables) {
      if (const char* value = std::getenv(name); value != nullptr) saved_[name] = value;
      ASSERT_EQ(unsetenv(name), 0);
    }
    add_cluster_resolver_flags(app_, flags_);
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

  absl::StatusOr<std::optional<SlurmClusterResolver>> resolve(std::vector<std::string> args) {
    args.insert(args.begin(), "psflow");
    std::vector<const char*> argv;
    for (const std::string& arg : args) argv.push_back(arg.c_str());
    app_.parse(static_cast<int>(argv.size()), argv.data());
    return slurm_resolver_from_flags(flags_, app_);
  }

  static void set_slurm_step(int rank) {
    setenv("SLURM_PROCID", std::to_string(rank).c_str(), 1);
    setenv("SLURM_STEP_NODELIST", "n[1-3]", 1);
    setenv("SLURM_STEP_TASKS_PER_NODE", "2(x2),1", 1);
    setenv("SLURM_STEP_NUM_TASKS", "5", 1);
  }

 private:
  CLI::App app_;
  ClusterResolverFlags flags_;
  std::map<std::string, std::string> saved_;
};

TEST_F(SlurmCliFlagsAppTest, DefaultIsTfConfigEvenInsideASlurmStep) {
  set_slurm_step(0);
  absl::StatusOr<std::optional<SlurmClusterResolver>> resolver = resolve({});
  ASSERT_TRUE(resolver.ok()) << resolver.status();
  EXPECT_FALSE(resolver->has_value());
}

TEST_F(SlurmCliFlagsAppTest, SlurmResolverFromTheFlags) {
  set_slurm_step(2);
  absl::StatusOr<std::optional<SlurmClusterResolver>> resolver =
      resolve({"--cluster-resolver", "slurm", "--slurm-jobs", "chief:1,ps:2,worker:2",
               "--slurm-port-base", "7000"});
  ASSERT_TRUE(resolver.ok()) << resolver.status();
  ASSERT_TRUE(resolver->has_value());
  EXPECT_EQ((*resolver)->task_type().value(), "ps");
  EXPECT_EQ((*resolver)->task_id().value(), 1);
  EXPECT_EQ((*resolver)->master().value(), "grpc://n2:7000");
}

TEST_F(SlurmCliFlagsAppTest, SlurmFlagsNeedTheSlurmResolver) {
  absl::StatusOr<std::optional<SlurmClusterResolver>> resolver =
      resolve({"--slurm-jobs", "ps:1,worker:1"});
  EXPECT_EQ(resolver.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(resolver.status().message(),
              HasSubstr("--slurm-jobs applies to Slurm's environment only; add "
                        "--cluster-resolver slurm"));
}

TEST_F(SlurmCliFlagsAppTest, PortBaseNeedsTheSlurmResolver) {
  absl::StatusOr<std::optional<SlurmClusterResolver>> resolver =
      resolve({"--cluster-resolver", "tf_config", "--slurm-port-base", "9000"});
  EXPECT_THAT(resolver.status().message(), HasSubstr("--slurm-port-base applies to Slurm's"));
}

TEST_F(SlurmCliFlagsAppTest, SlurmWithTfConfigSetIsRefused) {
  set_slurm_step(0);
  setenv("TF_CONFIG", R"({"cluster": {"ps": ["a:1"]}})", 1);
  absl::StatusOr<std::optional<SlurmClusterResolver>> resolver =
      resolve({"--cluster-resolver", "slurm"});
  EXPECT_EQ(resolver.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(resolver.status().message(), HasSubstr("but TF_CONFIG is set too; unset TF_CONFIG"));
}

TEST_F(SlurmCliFlagsAppTest, ResolverErrorsKeepTheirCode) {
  absl::StatusOr<std::optional<SlurmClusterResolver>> resolver =
      resolve({"--cluster-resolver", "slurm", "--slurm-jobs", "chief:1,ps:1,worker:1"});
  EXPECT_EQ(resolver.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(resolver.status().message(),
              HasSubstr("Slurm: SLURM_PROCID not found in environment"));
}

TEST_F(SlurmCliFlagsAppTest, JobsThatDoNotAddUpAreRefused) {
  set_slurm_step(0);
  absl::StatusOr<std::optional<SlurmClusterResolver>> resolver =
      resolve({"--cluster-resolver", "slurm", "--slurm-jobs", "chief:1,ps:2,worker:3"});
  EXPECT_EQ(resolver.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(resolver.status().message(),
              HasSubstr("Slurm: Requested 6 tasks but only 5 were assigned"));
}

TEST_F(SlurmCliFlagsAppTest, UnknownResolverIsAParseError) {
  EXPECT_THROW(static_cast<void>(resolve({"--cluster-resolver", "kubernetes"})),
               CLI::ValidationError);
}

}  // namespace
}  // namespace psflow::internal

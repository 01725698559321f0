#include "cli/train_checks.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

// `psflow train`'s cluster flags, parsed from `args`.
struct ParsedFlags {
  CLI::App app{"test"};
  LocalClusterFlags flags;
  int replicas = 2;
  explicit ParsedFlags(std::vector<std::string> args) {
    add_local_cluster_flags(app, flags);
    app.add_option("--replicas", replicas);
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
  }
};

TEST(TrainChecksFlagsTest, EachModeRefusesTheFlagsItWouldIgnore) {
  EXPECT_TRUE(
      check_flags_of_mode(ParsedFlags({"--num-ps", "3"}).app, TrainMode::kLocalCluster, "").ok());
  const absl::Status mirrored =
      check_flags_of_mode(ParsedFlags({"--num-ps", "3"}).app, TrainMode::kMirrored, "");
  EXPECT_TRUE(absl::IsInvalidArgument(mirrored));
  EXPECT_THAT(mirrored.message(), HasSubstr("--num-ps configures"));
  const absl::Status external = check_flags_of_mode(ParsedFlags({"--num-workers", "3"}).app,
                                                    TrainMode::kExternalCluster, "TF_CONFIG");
  EXPECT_THAT(external.message(), HasSubstr("the cluster comes from TF_CONFIG"));
  // --startup-timeout bounds the wait for an external cluster's tasks.
  EXPECT_TRUE(check_flags_of_mode(ParsedFlags({"--startup-timeout", "5"}).app,
                                  TrainMode::kExternalCluster, "TF_CONFIG")
                  .ok());
  EXPECT_THAT(
      check_flags_of_mode(ParsedFlags({"--replicas", "4"}).app, TrainMode::kLocalCluster, "")
          .message(),
      HasSubstr("--replicas is the replica count of --strategy mirrored"));
  EXPECT_TRUE(
      check_flags_of_mode(ParsedFlags({"--replicas", "4"}).app, TrainMode::kMirrored, "").ok());
}

TEST(TrainChecksFlagsTest, ALocalClusterNeedsTasksOnLoopback) {
  LocalClusterFlags flags;
  EXPECT_TRUE(check_local_cluster_flags(flags, /*for_training=*/true).ok());
  flags.num_ps = 0;
  EXPECT_THAT(check_local_cluster_flags(flags, true).message(), HasSubstr("--num-ps 0"));
  EXPECT_TRUE(check_local_cluster_flags(flags, /*for_training=*/false).ok());
  flags.num_workers = 0;
  EXPECT_THAT(check_local_cluster_flags(flags, false).message(), HasSubstr("no cluster"));
  flags = LocalClusterFlags();
  flags.host = "10.9.9.9";
  EXPECT_THAT(check_local_cluster_flags(flags, true).message(),
              HasSubstr("--host 10.9.9.9 is not a loopback address"));
}

TEST(TrainChecksDirTest, AWritableDirectoryOrAncestorPassesAndNothingIsCreated) {
  const std::string base = ::testing::TempDir() + "/train-checks-dir";
  std::filesystem::remove_all(base);
  std::filesystem::create_directories(base);
  EXPECT_TRUE(check_writable_dir(base, "--run-dir").ok());
  EXPECT_TRUE(check_writable_dir(base + "/a/b/c", "--run-dir").ok());
  EXPECT_FALSE(std::filesystem::exists(base + "/a"));
  std::ofstream(base + "/file") << "x";
  const absl::Status under_file = check_writable_dir(base + "/file/run", "--run-dir");
  EXPECT_TRUE(absl::IsInvalidArgument(under_file));
  EXPECT_THAT(under_file.message(), HasSubstr("--run-dir " + base + "/file/run"));
  EXPECT_THAT(under_file.message(), HasSubstr("is not a directory"));
}

}  // namespace
}  // namespace psflow::internal

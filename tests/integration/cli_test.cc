// The psflow program's other subcommands, run as real processes.
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_process.h"

namespace psflow {
namespace {

using ::psflow::testing::test_environment;
using ::psflow::testing::TestProcess;
using ::testing::HasSubstr;

TEST(CliTest, VersionPrintsTheVersion) {
  TestProcess psflow({PSFLOW_BINARY_PATH, "version"}, test_environment());
  ASSERT_GT(psflow.pid(), 0);
  const std::string out = psflow.read_stdout(absl::Now() + absl::Seconds(30));
  EXPECT_EQ(psflow.wait_exit_code(absl::Now() + absl::Seconds(30)), 0);
  EXPECT_EQ(out, absl::StrCat("psflow ", std::string(version()), "\n"));
}

TEST(CliTest, HelpListsTheSubcommands) {
  TestProcess psflow({PSFLOW_BINARY_PATH, "--help"}, test_environment());
  ASSERT_GT(psflow.pid(), 0);
  const std::string out = psflow.read_stdout(absl::Now() + absl::Seconds(30));
  EXPECT_EQ(psflow.wait_exit_code(absl::Now() + absl::Seconds(30)), 0);
  for (const char* command : {"train", "server", "local-cluster", "version"}) {
    EXPECT_THAT(out, HasSubstr(command));
  }
}

TEST(CliTest, NoSubcommandIsAnError) {
  TestProcess psflow({PSFLOW_BINARY_PATH}, test_environment());
  ASSERT_GT(psflow.pid(), 0);
  const std::string err = psflow.read_stderr(absl::Now() + absl::Seconds(30));
  EXPECT_NE(psflow.wait_exit_code(absl::Now() + absl::Seconds(30)), 0);
  EXPECT_FALSE(err.empty());
}

TEST(CliTest, TrainStartsChecksAndStopsALocalCluster) {
  TestProcess psflow({PSFLOW_BINARY_PATH, "train", "--num-ps", "1", "--num-workers", "2"},
                     test_environment());
  ASSERT_GT(psflow.pid(), 0);
  const std::string out = psflow.read_stdout(absl::Now() + absl::Seconds(60));
  EXPECT_EQ(psflow.wait_exit_code(absl::Now() + absl::Seconds(30)), 0)
      << psflow.read_stderr(absl::Now() + absl::Seconds(1));
  EXPECT_THAT(out, HasSubstr("ps 0 127.0.0.1:"));
  EXPECT_THAT(out, HasSubstr("worker 1 127.0.0.1:"));
  EXPECT_THAT(out, HasSubstr("not implemented yet"));
}

TEST(CliTest, TrainRefusesTfConfigForNow) {
  TestProcess psflow({PSFLOW_BINARY_PATH, "train"},
                     test_environment({{"TF_CONFIG", R"({"cluster": {}})"}}));
  ASSERT_GT(psflow.pid(), 0);
  const std::string err = psflow.read_stderr(absl::Now() + absl::Seconds(30));
  EXPECT_EQ(psflow.wait_exit_code(absl::Now() + absl::Seconds(30)), 1);
  EXPECT_THAT(err, HasSubstr("not implemented yet"));
}

}  // namespace
}  // namespace psflow

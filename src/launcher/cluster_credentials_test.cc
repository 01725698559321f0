#include "launcher/cluster_credentials.h"

#include <sys/stat.h>

#include <filesystem>

#include "gtest/gtest.h"
#include "rpc/transport_credentials.h"

namespace psflow::internal {
namespace {

TEST(LocalClusterCredentialsTest, FreshCaLivesInAPrivateDirectoryForTheClustersLifetime) {
  set_default_tls(nullptr);
  std::string dir;
  {
    absl::StatusOr<std::unique_ptr<LocalClusterCredentials>> credentials =
        LocalClusterCredentials::make_fresh({{"ps", 0, "127.0.0.1"}, {"chief", 0, "127.0.0.1"}});
    ASSERT_TRUE(credentials.ok()) << credentials.status();
    dir = (*credentials)->dir();
    struct stat info {};
    ASSERT_EQ(::stat(dir.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0700u);
    EXPECT_TRUE(std::filesystem::exists(dir + "/ps-0.key"));
    // This process is the cluster's chief meanwhile.
    ASSERT_NE(default_tls(), nullptr);
    EXPECT_EQ(default_tls()->common_name, "chief/0");
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_EQ(default_tls(), nullptr);
}

TEST(LocalClusterCredentialsTest, AGivenDirectoryIsKeptAndMustHoldTheChief) {
  set_default_tls(nullptr);
  std::string dir;
  {
    absl::StatusOr<std::unique_ptr<LocalClusterCredentials>> fresh =
        LocalClusterCredentials::make_fresh({{"chief", 0, "127.0.0.1"}});
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    absl::StatusOr<std::unique_ptr<LocalClusterCredentials>> given =
        LocalClusterCredentials::use_directory((*fresh)->dir());
    ASSERT_TRUE(given.ok()) << given.status();
    given->reset();
    // The given directory's owner still has it, and the fresh one's
    // credentials are the default again.
    EXPECT_TRUE(std::filesystem::exists((*fresh)->dir() + "/chief-0.crt"));
    ASSERT_NE(default_tls(), nullptr);
    dir = (*fresh)->dir();
  }
  EXPECT_EQ(default_tls(), nullptr);
  absl::StatusOr<std::unique_ptr<LocalClusterCredentials>> missing =
      LocalClusterCredentials::use_directory(dir);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(default_tls(), nullptr);
}

}  // namespace
}  // namespace psflow::internal

#include "launcher/cluster_credentials.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "rpc/transport_credentials.h"
#include "security/private_file.h"

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

// A pid that names no process: a child that has exited and been reaped.
pid_t gone_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  EXPECT_EQ(::waitpid(child, &status, 0), child);
  return child;
}

TEST(LocalClusterCredentialsTest, RemovesOnlyStaleDirectoriesOfGoneLaunchers) {
  absl::StatusOr<std::string> root = make_private_temp_directory("psflow-stale-test-");
  ASSERT_TRUE(root.ok()) << root.status();
  const std::string dead = absl::StrCat(*root, "/psflow-tls-", gone_pid(), "-a1b2c3");
  const std::string live = absl::StrCat(*root, "/psflow-tls-", ::getpid(), "-d4e5f6");
  const std::string other = *root + "/psflow-tls-notapid-x";
  const std::string plain_file = absl::StrCat(*root, "/psflow-tls-", gone_pid(), "-file");
  for (const std::string& dir : {dead, live, other}) {
    ASSERT_TRUE(std::filesystem::create_directory(dir)) << dir;
  }
  ASSERT_TRUE(write_private_file(dead + "/ca.key", "secret", /*overwrite=*/false).ok());
  ASSERT_TRUE(write_private_file(plain_file, "x", /*overwrite=*/false).ok());
  // A link named like a stale directory is not followed.
  const std::string link = absl::StrCat(*root, "/psflow-tls-", gone_pid(), "-link");
  std::filesystem::create_directory_symlink(live, link);

  EXPECT_EQ(remove_stale_credential_directories(*root), 1);
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_TRUE(std::filesystem::exists(other));
  EXPECT_TRUE(std::filesystem::exists(plain_file));
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(remove_stale_credential_directories(*root), 0);
  std::filesystem::remove_all(*root);
}

TEST(LocalClusterCredentialsTest, AFreshDirectoryNamesItsLauncher) {
  set_default_tls(nullptr);
  absl::StatusOr<std::unique_ptr<LocalClusterCredentials>> credentials =
      LocalClusterCredentials::make_fresh({{"chief", 0, "127.0.0.1"}});
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  EXPECT_EQ(std::filesystem::path((*credentials)->dir())
                .filename()
                .string()
                .rfind(absl::StrCat("psflow-tls-", ::getpid(), "-"), 0),
            0u)
      << (*credentials)->dir();
  credentials->reset();
  EXPECT_EQ(default_tls(), nullptr);
}

}  // namespace
}  // namespace psflow::internal

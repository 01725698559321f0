#include "cli/tls_flags.h"

#include <cstdlib>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

// Sets PSFLOW_TLS_DIR for one test.
// Thread-safety: owned by one test (the environment is the process's).
class TlsDirEnv {
 public:
  explicit TlsDirEnv(const char* value) { ::setenv(kTlsDirEnv, value, 1); }
  ~TlsDirEnv() { ::unsetenv(kTlsDirEnv); }
  TlsDirEnv(const TlsDirEnv&) = delete;
  TlsDirEnv& operator=(const TlsDirEnv&) = delete;
};

TEST(TlsFlagsTest, NothingGivenIsEmpty) {
  ::unsetenv(kTlsDirEnv);
  absl::StatusOr<TlsOptions> options = tls_options_from_flags(TlsFlags{});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->empty());
  EXPECT_FALSE(options->insecure);
}

TEST(TlsFlagsTest, EnvironmentStandsInForTheDirectoryFlag) {
  const TlsDirEnv env("/from/env");
  absl::StatusOr<TlsOptions> options = tls_options_from_flags(TlsFlags{});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->dir, "/from/env");
  TlsFlags flags;
  flags.dir = "/from/flag";
  EXPECT_EQ(tls_options_from_flags(flags)->dir, "/from/flag");
  TlsFlags files;
  files.ca_file = "ca";
  files.cert_file = "crt";
  files.key_file = "key";
  options = tls_options_from_flags(files);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->dir, "");
  EXPECT_EQ(options->key_file, "key");
  TlsFlags insecure;
  insecure.insecure = true;
  options = tls_options_from_flags(insecure);
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->empty());
  EXPECT_TRUE(options->insecure);
}

TEST(TlsFlagsTest, ConflictsAreUsageErrors) {
  ::unsetenv(kTlsDirEnv);
  TlsFlags both;
  both.insecure = true;
  both.dir = "d";
  EXPECT_THAT(tls_options_from_flags(both).status().message(), HasSubstr("--insecure"));
  TlsFlags mixed;
  mixed.dir = "d";
  mixed.ca_file = "ca";
  EXPECT_THAT(tls_options_from_flags(mixed).status().message(), HasSubstr("--tls-dir"));
  TlsFlags partial;
  partial.cert_file = "crt";
  EXPECT_EQ(tls_options_from_flags(partial).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(tls_options_from_flags(partial).status().message(), HasSubstr("go together"));
}

}  // namespace
}  // namespace psflow::internal

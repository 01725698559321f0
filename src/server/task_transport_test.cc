#include "server/task_transport.h"

#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/server.h"
#include "security/cluster_certificates.h"
#include "security/private_file.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

TEST(TaskTransportTest, LoopbackWithoutCredentialsIsPlaintext) {
  absl::StatusOr<TaskTransport> transport = plan_transport(TlsOptions{}, "ps", 0, "127.0.0.1");
  ASSERT_TRUE(transport.ok()) << transport.status();
  EXPECT_EQ(transport->tls, nullptr);
  EXPECT_FALSE(transport->insecure_exposed);
  EXPECT_THAT(transport->description, HasSubstr("plaintext on loopback"));
}

TEST(TaskTransportTest, NonLoopbackWithoutCredentialsIsRefused) {
  for (const char* host : {"0.0.0.0", "10.1.2.3", "::"}) {
    absl::StatusOr<TaskTransport> transport = plan_transport(TlsOptions{}, "ps", 1, host);
    EXPECT_EQ(transport.status().code(), absl::StatusCode::kFailedPrecondition) << host;
    EXPECT_THAT(transport.status().message(), HasSubstr("ps/1"));
    EXPECT_THAT(transport.status().message(), HasSubstr("psflow certs"));
    EXPECT_THAT(transport.status().message(), HasSubstr("--insecure"));
  }
}

TEST(TaskTransportTest, InsecureServesPlaintextWithAWarning) {
  TlsOptions options;
  options.insecure = true;
  absl::StatusOr<TaskTransport> transport = plan_transport(options, "worker", 0, "0.0.0.0");
  ASSERT_TRUE(transport.ok()) << transport.status();
  EXPECT_EQ(transport->tls, nullptr);
  EXPECT_TRUE(transport->insecure_exposed);
  EXPECT_THAT(transport->description, HasSubstr("--insecure"));
}

TEST(TaskTransportTest, CredentialsTurnTlsOn) {
  absl::StatusOr<std::string> dir = make_private_temp_directory("psflow-transport-test-");
  ASSERT_TRUE(dir.ok()) << dir.status();
  ASSERT_TRUE(write_cluster_certificates({{"ps", 0, "10.1.2.3"}}, *dir).ok());
  absl::StatusOr<TaskTransport> transport =
      plan_transport(TlsOptions{.dir = *dir}, "ps", 0, "10.1.2.3");
  ASSERT_TRUE(transport.ok()) << transport.status();
  ASSERT_NE(transport->tls, nullptr);
  EXPECT_EQ(transport->tls->common_name, "ps/0");
  EXPECT_FALSE(transport->insecure_exposed);
  // Another task's files are not there.
  EXPECT_EQ(plan_transport(TlsOptions{.dir = *dir}, "ps", 1, "10.1.2.3").status().code(),
            absl::StatusCode::kNotFound);
  std::error_code error;
  std::filesystem::remove_all(*dir, error);
}

// Server::create applies the rule before anything is bound.
TEST(TaskTransportTest, ServerCreateRefusesPlaintextOffLoopback) {
  const ClusterSpec spec({{"ps", {"127.0.0.1:0"}}, {"worker", {"127.0.0.1:0"}}});
  ServerOptions options;
  options.bind_address = "0.0.0.0:0";
  absl::StatusOr<std::unique_ptr<Server>> server = Server::create(spec, "ps", 0, options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kFailedPrecondition);
  options.tls.insecure = true;
  EXPECT_TRUE(Server::create(spec, "ps", 0, options).ok());
}

}  // namespace
}  // namespace psflow::internal

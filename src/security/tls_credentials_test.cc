#include "security/tls_credentials.h"

#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <filesystem>

#include "base/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/certificate_authority.h"
#include "security/cluster_certificates.h"
#include "security/openssl_util.h"
#include "security/private_file.h"
#include "security/test_dir.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

std::vector<CertifiedTask> two_tasks() {
  return {{"ps", 0, "127.0.0.1"}, {"worker", 0, "10.0.0.7"}};
}

mode_t file_mode(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 0777;
}

TEST(ClusterCertificatesTest, WritesEveryFileOwnerOnly) {
  TestDir dir;
  const std::string out = dir.file("certs");
  std::vector<std::string> written = ok_value(write_cluster_certificates(two_tasks(), out));
  EXPECT_EQ(written.size(), 6u);
  for (const char* name :
       {"ca.crt", "ca.key", "ps-0.crt", "ps-0.key", "worker-0.crt", "worker-0.key"}) {
    EXPECT_EQ(file_mode(out + "/" + name), 0600u) << name;
  }
  EXPECT_EQ(file_mode(out), 0700u);
  // No temporary files left behind.
  int entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(out)) {
    (void)entry;
    ++entries;
  }
  EXPECT_EQ(entries, 6);
}

TEST(ClusterCertificatesTest, RefusesToOverwriteWithoutForce) {
  TestDir dir;
  ASSERT_TRUE(write_cluster_certificates(two_tasks(), dir.path()).ok());
  const std::string before = ok_value(read_small_file(dir.file("ca.crt")));
  absl::StatusOr<std::vector<std::string>> again =
      write_cluster_certificates(two_tasks(), dir.path());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(again.status().message(), HasSubstr("--force"));
  EXPECT_EQ(ok_value(read_small_file(dir.file("ca.crt"))), before);
  ClusterCertificatesOptions force;
  force.force = true;
  ASSERT_TRUE(write_cluster_certificates(two_tasks(), dir.path(), force).ok());
  EXPECT_NE(ok_value(read_small_file(dir.file("ca.crt"))), before);
  EXPECT_EQ(file_mode(dir.file("ca.key")), 0600u);
}

TEST(ClusterCertificatesTest, TaskCertificateCarriesIdentity) {
  TestDir dir;
  ASSERT_TRUE(write_cluster_certificates(two_tasks(), dir.path()).ok());
  TlsCredentials tls = ok_value(
      load_tls_credentials(ok_value(tls_files(TlsOptions{.dir = dir.path()}, "worker", 0))));
  EXPECT_EQ(tls.common_name, "worker/0");
  X509Ptr cert = ok_value(parse_certificate(tls.cert_pem, "cert"));
  EXPECT_EQ(X509_check_ip_asc(cert.get(), "10.0.0.7", 0), 1);
  EXPECT_NE(X509_check_host(cert.get(), "localhost", 0, 0, nullptr), 1);
  const uint32_t eku = X509_get_extended_key_usage(cert.get());
  EXPECT_TRUE(eku & XKU_SSL_SERVER);
  EXPECT_TRUE(eku & XKU_SSL_CLIENT);
  X509Ptr ps = ok_value(parse_certificate(ok_value(read_small_file(dir.file("ps-0.crt"))), "ps"));
  EXPECT_EQ(X509_check_ip_asc(ps.get(), "127.0.0.1", 0), 1);
  EXPECT_EQ(X509_check_host(ps.get(), "localhost", 0, 0, nullptr), 1);
  X509Ptr ca = ok_value(parse_certificate(tls.ca_pem, "ca"));
  EXPECT_EQ(X509_check_ca(ca.get()), 1);
  EXPECT_EQ(X509_check_ca(cert.get()), 0);
}

TEST(TlsCredentialsTest, FilesFromDirectoryOrExplicit) {
  TlsFiles files = ok_value(tls_files(TlsOptions{.dir = "/s"}, "ps", 1));
  EXPECT_EQ(files.ca_file, "/s/ca.crt");
  EXPECT_EQ(files.cert_file, "/s/ps-1.crt");
  EXPECT_EQ(files.key_file, "/s/ps-1.key");
  EXPECT_EQ(tls_files(TlsOptions{.dir = "/s", .ca_file = "a"}, "ps", 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tls_files(TlsOptions{.ca_file = "a", .cert_file = "b"}, "ps", 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  files =
      ok_value(tls_files(TlsOptions{.ca_file = "a", .cert_file = "b", .key_file = "c"}, "x", 0));
  EXPECT_EQ(files.key_file, "c");
}

TEST(TlsCredentialsTest, MissingFileIsNamed) {
  TestDir dir;
  absl::StatusOr<TlsCredentials> tls =
      load_tls_credentials(ok_value(tls_files(TlsOptions{.dir = dir.path()}, "ps", 0)));
  EXPECT_EQ(tls.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(tls.status().message(), HasSubstr(dir.file("ca.crt")));
  EXPECT_THAT(tls.status().message(), HasSubstr("psflow certs"));
}

TEST(TlsCredentialsTest, RefusesKeyOfAnotherCertificate) {
  TestDir dir;
  ASSERT_TRUE(write_cluster_certificates(two_tasks(), dir.path()).ok());
  absl::StatusOr<TlsCredentials> tls =
      load_tls_credentials({dir.file("ca.crt"), dir.file("ps-0.crt"), dir.file("worker-0.key")});
  EXPECT_EQ(tls.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(tls.status().message(), HasSubstr("does not match"));
  EXPECT_THAT(tls.status().message(), HasSubstr(dir.file("worker-0.key")));
}

TEST(TlsCredentialsTest, CommonNameMustNameTheTask) {
  TestDir dir;
  ASSERT_TRUE(write_cluster_certificates(two_tasks(), dir.path()).ok());
  TlsCredentials ps = ok_value(
      load_tls_credentials({dir.file("ca.crt"), dir.file("ps-0.crt"), dir.file("ps-0.key")}));
  EXPECT_TRUE(check_task_common_name(ps, "ps", 0).ok());
  EXPECT_THAT(ps.not_after, HasSubstr("GMT"));
  const absl::Status other = check_task_common_name(ps, "worker", 0);
  EXPECT_EQ(other.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(other.message(), HasSubstr("\"ps/0\""));
  EXPECT_THAT(other.message(), HasSubstr("\"worker/0\""));
  EXPECT_THAT(other.message(), HasSubstr("worker-0.crt"));
  EXPECT_FALSE(check_task_common_name(ps, "ps", 1).ok());
}

TEST(TlsCredentialsTest, RefusesCertificateOfAnotherCa) {
  TestDir one;
  TestDir two;
  ASSERT_TRUE(write_cluster_certificates(two_tasks(), one.path()).ok());
  ASSERT_TRUE(write_cluster_certificates(two_tasks(), two.path()).ok());
  absl::StatusOr<TlsCredentials> tls =
      load_tls_credentials({one.file("ca.crt"), two.file("ps-0.crt"), two.file("ps-0.key")});
  EXPECT_EQ(tls.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(tls.status().message(), HasSubstr("not signed by the CA"));
}

TEST(TlsCredentialsTest, RefusesExpiredCertificate) {
  TestDir dir;
  CertifiedKey ca = ok_value(make_certificate_authority("test CA"));
  CertifiedKey old = ok_value(issue_task_certificate(ca, "ps", 0, "127.0.0.1", absl::Hours(-1)));
  ASSERT_TRUE(write_private_file(dir.file("ca.crt"), ca.cert_pem, false).ok());
  ASSERT_TRUE(write_private_file(dir.file("ps-0.crt"), old.cert_pem, false).ok());
  ASSERT_TRUE(write_private_file(dir.file("ps-0.key"), old.key_pem, false).ok());
  absl::StatusOr<TlsCredentials> tls =
      load_tls_credentials({dir.file("ca.crt"), dir.file("ps-0.crt"), dir.file("ps-0.key")});
  EXPECT_EQ(tls.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(tls.status().message(), HasSubstr("expired"));
  EXPECT_THAT(tls.status().message(), HasSubstr(dir.file("ps-0.crt")));
}

TEST(TlsCredentialsTest, RefusesGarbage) {
  TestDir dir;
  ASSERT_TRUE(write_cluster_certificates(two_tasks(), dir.path()).ok());
  ASSERT_TRUE(write_private_file(dir.file("ps-0.crt"), "not a certificate", true).ok());
  absl::StatusOr<TlsCredentials> tls =
      load_tls_credentials({dir.file("ca.crt"), dir.file("ps-0.crt"), dir.file("ps-0.key")});
  EXPECT_EQ(tls.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(tls.status().message(), HasSubstr(dir.file("ps-0.crt")));
}

TEST(TlsCredentialsTest, WorldReadableKeyStillLoads) {
  TestDir dir;
  ASSERT_TRUE(write_cluster_certificates(two_tasks(), dir.path()).ok());
  ASSERT_EQ(::chmod(dir.file("ps-0.key").c_str(), 0644), 0);
  // A warning, not an error (logged; the files are otherwise good).
  EXPECT_TRUE(
      load_tls_credentials({dir.file("ca.crt"), dir.file("ps-0.crt"), dir.file("ps-0.key")}).ok());
}

}  // namespace
}  // namespace psflow::internal

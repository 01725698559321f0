// Mutual TLS against real processes: `psflow certs`, a ps that refuses
// clients without a certificate of its cluster, the local cluster's fresh CA,
// and the refusal to serve plaintext off loopback.
#include <sys/stat.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/port_reservation.h"
#include "ps/client/variable_client.h"
#include "psflow/local_cluster.h"
#include "psflow/tensor.h"
#include "psflow/tls_options.h"
#include "psflow/v1/task.grpc.pb.h"
#include "rpc/channel.h"
#include "rpc/transport_credentials.h"
#include "security/cluster_certificates.h"
#include "security/private_file.h"
#include "test_process.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::test_environment;
using ::psflow::internal::testing::TestProcess;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Op = v1::VariableOp;

absl::Time deadline(absl::Duration within = absl::Seconds(30)) { return absl::Now() + within; }

// A private temporary directory, removed at the end of the test.
// Thread-safety: owned by one test.
class TempDir {
 public:
  TempDir() : path_(make_private_temp_directory("psflow-tls-test-").value_or("")) {}
  ~TempDir() {
    std::error_code error;
    if (!path_.empty()) std::filesystem::remove_all(path_, error);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] std::string file(const std::string& name) const { return path_ + "/" + name; }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Thread-safety: a value type.
struct CommandResult {
  int code = -1;
  std::string out;
  std::string err;
};

CommandResult run_psflow(std::vector<std::string> args) {
  args.insert(args.begin(), PSFLOW_BINARY_PATH);
  TestProcess process(std::move(args), test_environment());
  CommandResult result;
  if (process.pid() <= 0) return result;
  result.out = process.read_stdout(deadline());
  result.err = process.read_stderr(deadline());
  result.code = process.wait_exit_code(deadline());
  return result;
}

mode_t file_mode(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 0777;
}

std::shared_ptr<const TlsCredentials> credentials(const std::string& dir, std::string_view job,
                                                  int index) {
  absl::StatusOr<TlsFiles> files = tls_files(TlsOptions{.dir = dir}, job, index);
  EXPECT_TRUE(files.ok()) << files.status();
  absl::StatusOr<TlsCredentials> tls = load_tls_credentials(*files);
  EXPECT_TRUE(tls.ok()) << tls.status();
  return tls.ok() ? std::make_shared<const TlsCredentials>(*std::move(tls)) : nullptr;
}

// A client of the ps at `target` presenting `tls` (null: plaintext).
std::unique_ptr<VariableClient> ps_client(const std::string& target,
                                          std::shared_ptr<const TlsCredentials> tls) {
  // create_channel takes the process default at construction.
  std::shared_ptr<const TlsCredentials> previous = default_tls();
  set_default_tls(std::move(tls));
  std::unique_ptr<VariableClient> client =
      make_grpc_variable_client(target, "/job:ps/replica:0/task:0");
  set_default_tls(std::move(previous));
  return client;
}

ExecuteBatch one_op(Op::Kind kind, const std::string& variable, Tensor value = Tensor()) {
  ExecuteBatch batch;
  VariableOpArgs op;
  op.kind = kind;
  op.variable = variable;
  op.value = std::move(value);
  batch.ops.push_back(std::move(op));
  return batch;
}

absl::StatusOr<std::vector<std::string>> variable_names(const std::string& target,
                                                        const ChannelOptions& options) {
  auto stub = v1::VariableService::NewStub(create_channel(target, options));
  grpc::ClientContext context;
  configure_context(context, deadline());
  v1::ListVariablesRequest request;
  v1::ListVariablesResponse response;
  grpc::Status status = stub->ListVariables(&context, request, &response);
  if (!status.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  }
  std::vector<std::string> names;
  for (const v1::VariableInfo& info : response.variables()) names.push_back(info.name());
  return names;
}

TEST(TlsTest, CertsCommandWritesOwnerOnlyFilesAndRefusesToOverwrite) {
  TempDir dir;
  const std::string out = dir.file("certs");
  const std::string spec =
      R"({"chief": ["127.0.0.1:2220"], "ps": ["127.0.0.1:2221", "127.0.0.1:2222"],)"
      R"( "worker": ["ps-host.example:2223"]})";
  CommandResult made = run_psflow({"certs", "--cluster-spec", spec, "--out", out});
  ASSERT_EQ(made.code, 0) << made.err;
  for (const char* name : {"ca.crt", "ca.key", "chief-0.crt", "chief-0.key", "ps-0.crt", "ps-0.key",
                           "ps-1.crt", "ps-1.key", "worker-0.crt", "worker-0.key"}) {
    EXPECT_EQ(file_mode(out + "/" + name), 0600u) << name;
    EXPECT_THAT(made.out, HasSubstr(out + "/" + name));
  }
  EXPECT_EQ(file_mode(out), 0700u);
  EXPECT_EQ(credentials(out, "worker", 0)->common_name, "worker/0");

  const std::string ca_before = read_small_file(out + "/ca.crt").value_or("");
  CommandResult again = run_psflow({"certs", "--cluster-spec", spec, "--out", out});
  EXPECT_EQ(again.code, 2);
  EXPECT_THAT(again.err, HasSubstr("--force"));
  EXPECT_EQ(read_small_file(out + "/ca.crt").value_or(""), ca_before);
  CommandResult forced = run_psflow({"certs", "--cluster-spec", spec, "--out", out, "--force"});
  EXPECT_EQ(forced.code, 0) << forced.err;
  EXPECT_NE(read_small_file(out + "/ca.crt").value_or(""), ca_before);

  CommandResult no_cluster = run_psflow({"certs", "--out", dir.file("none")});
  EXPECT_EQ(no_cluster.code, 2);
  EXPECT_THAT(no_cluster.err, HasSubstr("--tf-config"));
}

// A ps started with --tls-dir serves a client of its cluster and refuses
// one without a certificate or with another CA's, which change nothing.
TEST(TlsTest, PsRefusesClientsWithoutACertificateOfItsCluster) {
  absl::StatusOr<PortReservation> ps = PortReservation::reserve("127.0.0.1");
  absl::StatusOr<PortReservation> worker = PortReservation::reserve("127.0.0.1");
  ASSERT_TRUE(ps.ok() && worker.ok());
  const std::string cluster = absl::StrCat(R"({"chief": ["127.0.0.1:1"], "ps": [")", ps->address(),
                                           R"("], "worker": [")", worker->address(), R"("]})");
  TempDir dir;
  ASSERT_EQ(run_psflow({"certs", "--cluster-spec", cluster, "--out", dir.file("ours")}).code, 0);
  TempDir other;
  ASSERT_TRUE(write_cluster_certificates({{"chief", 0, "127.0.0.1"}}, other.path()).ok());

  TestProcess server({PSFLOW_BINARY_PATH, "server", "--reuse-port", "--job", "ps", "--task", "0",
                      "--cluster-json", cluster, "--tls-dir", dir.file("ours")},
                     test_environment());
  ASSERT_GT(server.pid(), 0);
  const std::shared_ptr<const TlsCredentials> chief = credentials(dir.file("ours"), "chief", 0);
  ChannelOptions valid;
  valid.tls = chief;
  ASSERT_TRUE(wait_for_healthy(ps->address(), "/job:ps/replica:0/task:0", deadline(), valid).ok());

  std::unique_ptr<VariableClient> good = ps_client(ps->address(), chief);
  const Tensor initial = Tensor::from_vector<float>({1, 2}, {2});
  ASSERT_TRUE(good->execute_batch(one_op(Op::CREATE, "v", initial), deadline()).ok());

  // No certificate: the handshake fails, for reads and for changes.
  ChannelOptions plaintext;
  plaintext.plaintext = true;
  absl::StatusOr<std::vector<std::string>> listed = variable_names(ps->address(), plaintext);
  EXPECT_EQ(listed.status().code(), absl::StatusCode::kUnavailable) << listed.status();
  std::unique_ptr<VariableClient> anonymous = ps_client(ps->address(), nullptr);
  absl::StatusOr<std::vector<Tensor>> deleted =
      anonymous->execute_batch(one_op(Op::DELETE, "v"), deadline());
  EXPECT_EQ(deleted.status().code(), absl::StatusCode::kUnavailable) << deleted.status();

  // A certificate of another CA: refused the same way.
  const std::shared_ptr<const TlsCredentials> stranger = credentials(other.path(), "chief", 0);
  ChannelOptions foreign;
  foreign.tls = stranger;
  listed = variable_names(ps->address(), foreign);
  EXPECT_EQ(listed.status().code(), absl::StatusCode::kUnavailable) << listed.status();
  std::unique_ptr<VariableClient> impostor = ps_client(ps->address(), stranger);
  absl::StatusOr<std::vector<Tensor>> assigned = impostor->execute_batch(
      one_op(Op::ASSIGN, "v", Tensor::from_vector<float>({9, 9}, {2})), deadline());
  EXPECT_EQ(assigned.status().code(), absl::StatusCode::kUnavailable) << assigned.status();
  deleted = impostor->execute_batch(one_op(Op::DELETE, "v"), deadline());
  EXPECT_EQ(deleted.status().code(), absl::StatusCode::kUnavailable) << deleted.status();

  // Nothing changed.
  listed = variable_names(ps->address(), valid);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_THAT(*listed, ElementsAre("v"));
  absl::StatusOr<std::vector<Tensor>> read = good->execute_batch(one_op(Op::READ, "v"), deadline());
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ((*read)[0].flat<float>()[0], 1.0f);
  EXPECT_EQ((*read)[0].flat<float>()[1], 2.0f);

  ASSERT_TRUE(server.signal(SIGTERM));
  EXPECT_EQ(server.wait_exit_code(deadline()), 143);
  EXPECT_THAT(server.read_stderr(deadline()), HasSubstr("mTLS on"));
}

// The embedded local cluster makes a fresh CA: its own process talks to the
// tasks with the chief's certificate, a plaintext client cannot, and the
// credentials are gone with the cluster.
TEST(TlsTest, LocalClusterRunsOverMutualTlsByDefault) {
  LocalClusterOptions options;
  options.num_ps = 1;
  options.num_workers = 1;
  options.binary_path = PSFLOW_BINARY_PATH;
  std::string tls_dir;
  {
    absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    ASSERT_NE(default_tls(), nullptr);
    EXPECT_EQ(default_tls()->common_name, "chief/0");
    for (const char* job : {"ps", "worker"}) {
      const std::string target = (*cluster)->cluster_spec().task_address(job, 0).value_or("");
      absl::StatusOr<v1::GetStatusResponse> status = get_status(target, job, 0, deadline());
      EXPECT_TRUE(status.ok()) << job << ": " << status.status();
      ChannelOptions plaintext;
      plaintext.plaintext = true;
      status = get_status(create_channel(target, plaintext), target, job, 0, deadline());
      EXPECT_EQ(status.status().code(), absl::StatusCode::kUnavailable) << job;
    }
  }
  EXPECT_EQ(default_tls(), nullptr);
}

// A task listening off loopback without credentials refuses to start,
// naming every way to give it some, and --insecure.
TEST(TlsTest, NonLoopbackWithoutCredentialsRefusesToStart) {
  const std::string cluster = R"({"ps": ["127.0.0.1:2"], "worker": ["127.0.0.1:3"]})";
  // 0.0.0.0 is refused before anything is bound.
  TestProcess server({PSFLOW_BINARY_PATH, "server", "--job", "ps", "--task", "0", "--cluster-json",
                      cluster, "--bind", "0.0.0.0:0"},
                     test_environment({{"PSFLOW_TLS_DIR", ""}}));
  ASSERT_GT(server.pid(), 0);
  const std::string err = server.read_stderr(deadline());
  EXPECT_EQ(server.wait_exit_code(deadline()), 2);
  for (const char* hint :
       {"not loopback", "--tls-dir", "PSFLOW_TLS_DIR", "psflow certs", "--insecure"}) {
    EXPECT_THAT(err, HasSubstr(hint));
  }
  CommandResult both = run_psflow({"server", "--job", "ps", "--task", "0", "--cluster-json",
                                   cluster, "--insecure", "--tls-dir", "/nonexistent"});
  EXPECT_EQ(both.code, 2);
  EXPECT_THAT(both.err, HasSubstr("--insecure does not combine"));
  CommandResult missing = run_psflow({"server", "--job", "ps", "--task", "0", "--cluster-json",
                                      cluster, "--tls-dir", "/nonexistent"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent/ca.crt"));
}

}  // namespace
}  // namespace psflow::internal

// `psflow server` as a real process: configuration, serving, clean exit.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/port_reservation.h"
#include "rpc/channel.h"
#include "test_process.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::test_environment;
using ::psflow::internal::testing::TestProcess;
using ::testing::HasSubstr;

std::string cluster_json(const std::string& ps_address, const std::string& worker_address) {
  return absl::StrCat(R"({"ps": [")", ps_address, R"("], "worker": [")", worker_address, R"("]})");
}

// A signal asks for a clean shutdown, and the status says which signal.
TEST(ServerCliTest, SigtermAfterServingExits143) {
  absl::StatusOr<PortReservation> ps = PortReservation::reserve("127.0.0.1");
  absl::StatusOr<PortReservation> worker = PortReservation::reserve("127.0.0.1");
  ASSERT_TRUE(ps.ok() && worker.ok());
  TestProcess server({PSFLOW_BINARY_PATH, "server", "--reuse-port", "--job", "ps", "--task", "0",
                      "--cluster-json", cluster_json(ps->address(), worker->address())},
                     test_environment());
  ASSERT_GT(server.pid(), 0);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  ASSERT_TRUE(wait_for_healthy(ps->address(), "/job:ps/replica:0/task:0", deadline).ok());
  absl::StatusOr<v1::GetStatusResponse> status = get_status(ps->address(), "ps", 0, deadline);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->pid(), server.pid());

  ASSERT_TRUE(server.signal(SIGTERM));
  EXPECT_EQ(server.wait_exit_code(absl::Now() + absl::Seconds(10)), 143);
  const std::string log = server.read_stderr(absl::Now() + absl::Seconds(5));
  EXPECT_THAT(log, HasSubstr(absl::StrCat("serving /job:ps/replica:0/task:0 at ", ps->address())));
}

TEST(ServerCliTest, RoleFromTfConfigAndSigintExits130) {
  absl::StatusOr<PortReservation> ps = PortReservation::reserve("127.0.0.1");
  absl::StatusOr<PortReservation> worker = PortReservation::reserve("127.0.0.1");
  ASSERT_TRUE(ps.ok() && worker.ok());
  const std::string tf_config =
      absl::StrCat(R"({"cluster": )", cluster_json(ps->address(), worker->address()),
                   R"(, "task": {"type": "worker", "index": 0}})");
  TestProcess server({PSFLOW_BINARY_PATH, "server", "--reuse-port"},
                     test_environment({{"TF_CONFIG", tf_config}}));
  ASSERT_GT(server.pid(), 0);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  absl::StatusOr<v1::GetStatusResponse> status;
  ASSERT_TRUE(wait_for_healthy(worker->address(), "/job:worker/replica:0/task:0", deadline).ok());
  status = get_status(worker->address(), "worker", 0, deadline);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->job_name(), "worker");
  EXPECT_EQ(status->task_index(), 0);

  ASSERT_TRUE(server.signal(SIGINT));
  EXPECT_EQ(server.wait_exit_code(absl::Now() + absl::Seconds(10)), 130);
}

TEST(ServerCliTest, NoConfigurationIsAUsageError) {
  TestProcess server({PSFLOW_BINARY_PATH, "server"}, test_environment());
  ASSERT_GT(server.pid(), 0);
  const std::string err = server.read_stderr(absl::Now() + absl::Seconds(30));
  EXPECT_EQ(server.wait_exit_code(absl::Now() + absl::Seconds(30)), 2);
  EXPECT_THAT(err, HasSubstr("TF_CONFIG"));
  EXPECT_THAT(err, HasSubstr("--cluster-json"));
}

// A worker's result-cache bounds are flags; a bad value is a usage error
// naming the flag, before anything is bound.
TEST(ServerCliTest, ResultCacheFlagsAreChecked) {
  const std::string tf_config = R"({"cluster": {"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]},)"
                                R"( "task": {"type": "worker", "index": 0}})";
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--result-cache-entries", "-5"}, {"--result-cache-mib", "100000"}}) {
    TestProcess server({PSFLOW_BINARY_PATH, "server", flag, value},
                       test_environment({{"TF_CONFIG", tf_config}}));
    ASSERT_GT(server.pid(), 0);
    const std::string err = server.read_stderr(absl::Now() + absl::Seconds(30));
    EXPECT_EQ(server.wait_exit_code(absl::Now() + absl::Seconds(30)), 2) << flag;
    EXPECT_THAT(err, HasSubstr(flag + " " + value + " is out of range"));
  }
}

TEST(ServerCliTest, AnUnknownNonFinitePolicyIsAUsageError) {
  const std::string tf_config = R"({"cluster": {"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]},)"
                                R"( "task": {"type": "ps", "index": 0}})";
  TestProcess server({PSFLOW_BINARY_PATH, "server", "--non-finite-updates", "maybe"},
                     test_environment({{"TF_CONFIG", tf_config}}));
  ASSERT_GT(server.pid(), 0);
  const std::string err = server.read_stderr(absl::Now() + absl::Seconds(30));
  EXPECT_EQ(server.wait_exit_code(absl::Now() + absl::Seconds(30)), 2);
  EXPECT_THAT(err, HasSubstr("--non-finite-updates 'maybe' is not a policy; use reject or allow"));
}

TEST(ServerCliTest, ChiefTaskTypeIsAUsageError) {
  const std::string tf_config =
      R"({"cluster": {"chief": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"], "worker": ["127.0.0.1:3"]},)"
      R"( "task": {"type": "chief", "index": 0}})";
  TestProcess server({PSFLOW_BINARY_PATH, "server"}, test_environment({{"TF_CONFIG", tf_config}}));
  ASSERT_GT(server.pid(), 0);
  const std::string err = server.read_stderr(absl::Now() + absl::Seconds(30));
  EXPECT_EQ(server.wait_exit_code(absl::Now() + absl::Seconds(30)), 2);
  EXPECT_THAT(err, HasSubstr("'ps' or 'worker'"));
}

TEST(ServerCliTest, MalformedTfConfigIsAUsageError) {
  TestProcess server({PSFLOW_BINARY_PATH, "server"},
                     test_environment({{"TF_CONFIG", R"({"cluster": )"}}));
  ASSERT_GT(server.pid(), 0);
  const std::string err = server.read_stderr(absl::Now() + absl::Seconds(30));
  EXPECT_EQ(server.wait_exit_code(absl::Now() + absl::Seconds(30)), 2);
  EXPECT_THAT(err, HasSubstr("TF_CONFIG"));
}

TEST(ServerCliTest, PortInUseExitsNonZeroNamingTheAddress) {
  absl::StatusOr<PortReservation> worker = PortReservation::reserve("127.0.0.1");
  ASSERT_TRUE(worker.ok());
  // A plain listening socket (no SO_REUSEPORT) holds the ps port for the
  // whole test, so the server must refuse to start rather than share it.
  const int holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(holder, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(holder, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string ps_address = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));

  TestProcess server({PSFLOW_BINARY_PATH, "server", "--job", "ps", "--task", "0", "--cluster-json",
                      cluster_json(ps_address, worker->address())},
                     test_environment());
  ASSERT_GT(server.pid(), 0);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  const std::string err = server.read_stderr(deadline);
  EXPECT_EQ(server.wait_exit_code(deadline), 1);
  // One line naming the address and the fix, not gRPC's dump of the bind.
  EXPECT_THAT(err, HasSubstr(absl::StrCat("psflow server: /job:ps/replica:0/task:0 cannot listen "
                                          "on ",
                                          ps_address, ": Address already in use")));
  EXPECT_THAT(err, HasSubstr("give this task a free port in TF_CONFIG (or --bind HOST:PORT)"));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_THAT(err, ::testing::Not(HasSubstr("chttp2")));
  ::close(holder);
}

}  // namespace
}  // namespace psflow::internal

// `psflow server` listens on the address TF_CONFIG names for its task, or
// where --bind says; a host that is not this machine stops it at start.
// Only loopback addresses: 127.0.0.2 and 127.0.0.3 stand for two hosts.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/port_reservation.h"
#include "rpc/channel.h"
#include "rpc/loopback_test_util.h"
#include "test_process.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::test_environment;
using ::psflow::internal::testing::TestProcess;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::string tf_config(const std::string& ps_address, const std::string& worker_address) {
  return absl::StrCat(R"({"cluster": {"ps": [")", ps_address, R"("], "worker": [")", worker_address,
                      R"("]}, "task": {"type": "ps", "index": 0}})");
}

using testing::connection_refused;

TEST(ServerBindCliTest, ATaskListensOnlyOnTheAddressItsTfConfigNames) {
  absl::StatusOr<PortReservation> ps = PortReservation::reserve("127.0.0.2");
  ASSERT_TRUE(ps.ok()) << ps.status();
  TestProcess server({PSFLOW_BINARY_PATH, "server", "--reuse-port"},
                     test_environment({{"TF_CONFIG", tf_config(ps->address(), "127.0.0.2:1")}}));
  ASSERT_GT(server.pid(), 0);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  ASSERT_TRUE(wait_for_healthy(ps->address(), "/job:ps/replica:0/task:0", deadline).ok());
  // The same port on another loopback address has no listener.
  EXPECT_TRUE(connection_refused(1, ps->port()));
  EXPECT_TRUE(connection_refused(3, ps->port()));
  ASSERT_TRUE(server.signal(SIGTERM));
  EXPECT_EQ(server.wait_exit_code(absl::Now() + absl::Seconds(30)), 143);
  EXPECT_THAT(
      server.read_stderr(absl::Now() + absl::Seconds(5)),
      HasSubstr(absl::StrCat("listening on ", ps->address(), " (the spec's loopback address)")));
}

TEST(ServerBindCliTest, BindOverridesTheAddressTfConfigNames) {
  absl::StatusOr<PortReservation> spec_port = PortReservation::reserve("127.0.0.2");
  absl::StatusOr<PortReservation> bind_port = PortReservation::reserve("127.0.0.3");
  ASSERT_TRUE(spec_port.ok() && bind_port.ok());
  TestProcess server(
      {PSFLOW_BINARY_PATH, "server", "--reuse-port", "--bind", bind_port->address()},
      test_environment({{"TF_CONFIG", tf_config(spec_port->address(), "127.0.0.2:1")}}));
  ASSERT_GT(server.pid(), 0);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  ASSERT_TRUE(wait_for_healthy(bind_port->address(), "/job:ps/replica:0/task:0", deadline).ok());
  absl::StatusOr<v1::GetStatusResponse> status =
      get_status(bind_port->address(), "ps", 0, deadline);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->pid(), server.pid());
  EXPECT_TRUE(connection_refused(2, spec_port->port()));
  ASSERT_TRUE(server.signal(SIGTERM));
  EXPECT_EQ(server.wait_exit_code(absl::Now() + absl::Seconds(30)), 143);
  // Clients still name the task by its spec address.
  EXPECT_THAT(
      server.read_stderr(absl::Now() + absl::Seconds(5)),
      HasSubstr(absl::StrCat("serving /job:ps/replica:0/task:0 at ", spec_port->address())));
}

// A name that does not resolve here (.invalid never does) cannot be bound:
// the task stops before serving, naming the host and the fix. (A name that
// resolves to another machine's address fails the same way; see
// rpc/listen_address_test.cc, which fakes the resolver.)
TEST(ServerBindCliTest, ANameThatIsNotThisMachineStopsTheTaskNamingTheFix) {
  TestProcess server({PSFLOW_BINARY_PATH, "server"},
                     test_environment({{"TF_CONFIG", tf_config("job-ps-0.psflow-test.invalid:2222",
                                                               "127.0.0.2:1")}}));
  ASSERT_GT(server.pid(), 0);
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  const std::string err = server.read_stderr(deadline);
  EXPECT_EQ(server.wait_exit_code(deadline), 2);
  EXPECT_THAT(err, AllOf(HasSubstr("cannot serve /job:ps/replica:0/task:0"),
                         HasSubstr("'job-ps-0.psflow-test.invalid' does not resolve here"),
                         HasSubstr("--bind ADDRESS"), HasSubstr("--bind 0.0.0.0:2222")));
}

TEST(ServerBindCliTest, HelpDocumentsBindAndCheckConfig) {
  TestProcess help({PSFLOW_BINARY_PATH, "server", "--help"}, test_environment());
  ASSERT_GT(help.pid(), 0);
  const std::string out = help.read_stdout(absl::Now() + absl::Seconds(30));
  EXPECT_EQ(help.wait_exit_code(absl::Now() + absl::Seconds(30)), 0);
  EXPECT_THAT(out, AllOf(HasSubstr("--bind"), HasSubstr("--check-config"),
                         HasSubstr("--bind 0.0.0.0:2222"), HasSubstr("TF_CONFIG ok")));
}

}  // namespace
}  // namespace psflow::internal

#include "psflow/server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <future>
#include <memory>
#include <optional>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/v1/task.grpc.pb.h"
#include "rpc/address.h"
#include "rpc/channel.h"
#include "rpc/loopback_test_util.h"
#include "rpc/task_status.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kCallTimeout = absl::Seconds(30);

ClusterSpec one_ps_one_worker(const std::string& ps, const std::string& worker) {
  return ClusterSpec(
      std::map<std::string, std::vector<std::string>>{{"ps", {ps}}, {"worker", {worker}}});
}

// A loopback socket bound to a free port; listening and SO_REUSEPORT are
// the caller's choice.
class Socket {
 public:
  Socket(bool reuse_port, bool listen) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    if (reuse_port) ::setsockopt(fd_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0 &&
        (!listen || ::listen(fd_, 1) == 0)) {
      port_ = ntohs(addr.sin_port);
    }
  }
  ~Socket() { ::close(fd_); }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(ServerTest, RejectsJobsOtherThanPsAndWorker) {
  const ClusterSpec spec(std::map<std::string, std::vector<std::string>>{{"chief", {"127.0.0.1:1"}},
                                                                         {"ps", {"127.0.0.1:2"}}});
  absl::StatusOr<std::unique_ptr<Server>> server = Server::create(spec, "chief", 0);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("'ps' or 'worker'"));
}

TEST(ServerTest, RejectsATaskMissingFromTheSpec) {
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::create(one_ps_one_worker("127.0.0.1:1", "127.0.0.1:2"), "ps", 3);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("/job:ps/replica:0/task:3"));
}

TEST(ServerTest, RejectsAnAddressWithoutANumericPort) {
  for (const char* address : {"127.0.0.1", "127.0.0.1:grpc", "ps-0:99999"}) {
    absl::StatusOr<std::unique_ptr<Server>> server =
        Server::create(one_ps_one_worker(address, "127.0.0.1:2"), "ps", 0);
    EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument) << address;
  }
}

// A started ps or worker answers health and GetStatus with its identity.
void expect_serves_its_identity(const std::string& job) {
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::create(one_ps_one_worker("127.0.0.1:0", "127.0.0.1:0"), job, 0);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->start().ok());
  EXPECT_EQ((*server)->task_name(), absl::StrCat("/job:", job, "/replica:0/task:0"));
  const std::string target = (*server)->target();
  absl::StatusOr<HostPort> parsed = parse_host_port(target);
  ASSERT_TRUE(parsed.ok()) << target;
  EXPECT_EQ(parsed->host, "127.0.0.1");
  EXPECT_NE(parsed->port, 0);

  const absl::Time deadline = absl::Now() + kCallTimeout;
  EXPECT_TRUE(wait_for_healthy(target, (*server)->task_name(), deadline).ok());
  absl::StatusOr<v1::GetStatusResponse> status = get_status(target, job, 0, deadline);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->job_name(), job);
  EXPECT_EQ(status->task_index(), 0);
  EXPECT_EQ(status->pid(), ::getpid());
  EXPECT_EQ(status->incarnation(), process_incarnation());
  EXPECT_NE(status->incarnation(), 0u);
  EXPECT_GT(status->uptime_seconds(), 0.0);
  EXPECT_FALSE(status->version().empty());
  // The other role's service is not served.
  absl::StatusOr<v1::GetStatusResponse> other =
      get_status(target, job == "ps" ? "worker" : "ps", 0, deadline);
  EXPECT_EQ(other.status().code(), absl::StatusCode::kUnimplemented);
  (*server)->stop();
}

TEST(ServerTest, PsServesHealthAndGetStatus) { expect_serves_its_identity("ps"); }
TEST(ServerTest, WorkerServesHealthAndGetStatus) { expect_serves_its_identity("worker"); }

TEST(ServerTest, PortInUseIsUnavailableNamingTheAddress) {
  Socket taken(/*reuse_port=*/false, /*listen=*/true);
  ASSERT_NE(taken.port(), 0);
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::create(one_ps_one_worker(taken.address(), "127.0.0.1:0"), "ps", 0);
  ASSERT_TRUE(server.ok());
  const absl::Status status = (*server)->start();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(taken.address()));
  EXPECT_THAT(std::string(status.message()), HasSubstr("in use"));
}

TEST(ServerTest, SecondServerOnTheSamePortFailsInsteadOfSharingIt) {
  absl::StatusOr<std::unique_ptr<Server>> first =
      Server::create(one_ps_one_worker("127.0.0.1:0", "127.0.0.1:0"), "ps", 0);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE((*first)->start().ok());
  absl::StatusOr<std::unique_ptr<Server>> second =
      Server::create(one_ps_one_worker((*first)->target(), "127.0.0.1:0"), "ps", 0);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ((*second)->start().code(), absl::StatusCode::kUnavailable);
}

TEST(ServerTest, ReusePortServesOnAReservedPort) {
  Socket reservation(/*reuse_port=*/true, /*listen=*/false);
  ASSERT_NE(reservation.port(), 0);
  ServerOptions options;
  options.reuse_port = true;
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::create(one_ps_one_worker("127.0.0.1:1", reservation.address()), "worker", 0, options);
  ASSERT_TRUE(server.ok());
  ASSERT_TRUE((*server)->start().ok());
  EXPECT_EQ((*server)->target(), reservation.address());
  EXPECT_TRUE(get_status(reservation.address(), "worker", 0, absl::Now() + kCallTimeout).ok());
}

TEST(ServerTest, StopIsIdempotentAndReleasesJoin) {
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::create(one_ps_one_worker("127.0.0.1:0", "127.0.0.1:0"), "worker", 0);
  ASSERT_TRUE(server.ok());
  ASSERT_TRUE((*server)->start().ok());
  const std::string target = (*server)->target();
  std::future<void> joined = std::async(std::launch::async, [&] { (*server)->join(); });
  std::future<void> stopped = std::async(std::launch::async, [&] { (*server)->stop(); });
  (*server)->stop();
  EXPECT_EQ(stopped.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  EXPECT_EQ(joined.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  (*server)->stop();
  // A stopped task fails fast.
  const absl::Time start = absl::Now();
  absl::StatusOr<v1::GetStatusResponse> status =
      get_status(target, "worker", 0, start + kCallTimeout);
  EXPECT_EQ(status.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ((*server)->start().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ServerTest, JoinReturnsWhenStoppedBeforeStart) {
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::create(one_ps_one_worker("127.0.0.1:0", "127.0.0.1:0"), "ps", 0);
  ASSERT_TRUE(server.ok());
  (*server)->stop();
  (*server)->join();
  EXPECT_EQ((*server)->start().code(), absl::StatusCode::kFailedPrecondition);
}

TEST(ServerTest, ExplicitBindAddressServesTheSpecsName) {
  // The spec names a host that is no interface here (as a Kubernetes
  // service name); the server listens where it is told and reports the
  // spec's name with the chosen port.
  ServerOptions options;
  options.bind_address = "127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::create(one_ps_one_worker("ps-0.invalid:0", "127.0.0.1:0"), "ps", 0, options);
  ASSERT_TRUE(server.ok());
  ASSERT_TRUE((*server)->start().ok());
  absl::StatusOr<HostPort> target = parse_host_port((*server)->target());
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(target->host, "ps-0.invalid");
  EXPECT_TRUE(
      get_status(join_host_port("127.0.0.1", target->port), "ps", 0, absl::Now() + kCallTimeout)
          .ok());
}

using testing::connection_refused;

TEST(ServerTest, ATaskListensOnlyOnTheAddressItsSpecNames) {
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::create(one_ps_one_worker("127.0.0.2:0", "127.0.0.1:0"), "ps", 0);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->start().ok());
  absl::StatusOr<HostPort> target = parse_host_port((*server)->target());
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(target->host, "127.0.0.2");
  EXPECT_TRUE(get_status((*server)->target(), "ps", 0, absl::Now() + kCallTimeout).ok());
  EXPECT_TRUE(connection_refused(1, target->port));
  (*server)->stop();
}

// RunFunction with result_session set keeps the result for same-worker
// chaining; ServerOptions bound how many results a worker keeps.
int64_t cached_results_after_four_runs(const ServerOptions& options) {
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::create(one_ps_one_worker("127.0.0.1:0", "127.0.0.1:0"), "worker", 0, options);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return -1;
  EXPECT_TRUE((*server)->start().ok());
  auto stub = v1::ExecutorService::NewStub(create_channel((*server)->target()));
  for (uint64_t id = 1; id <= 4; ++id) {
    v1::RunFunctionRequest request;
    request.set_closure_id(id);
    request.set_function_name("testing/echo");
    request.mutable_args()->set_int_value(static_cast<int64_t>(id));
    request.set_result_session(99);
    v1::RunFunctionResponse response;
    grpc::ClientContext context;
    configure_context(context, absl::Now() + kCallTimeout);
    const grpc::Status status = stub->RunFunction(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
  }
  v1::GetExecutorStatsResponse stats;
  grpc::ClientContext context;
  configure_context(context, absl::Now() + kCallTimeout);
  EXPECT_TRUE(stub->GetExecutorStats(&context, v1::GetExecutorStatsRequest(), &stats).ok());
  (*server)->stop();
  return stats.cached_results();
}

TEST(ServerTest, WorkerResultCacheFollowsTheOptions) {
  EXPECT_EQ(cached_results_after_four_runs(ServerOptions{}), 4);
  ServerOptions two;
  two.result_cache_entries = 2;
  EXPECT_EQ(cached_results_after_four_runs(two), 2);
  ServerOptions none;
  none.result_cache_bytes = 0;
  EXPECT_EQ(cached_results_after_four_runs(none), 0);
}

TEST(ServerTest, RejectsResultCacheBoundsOutOfRange) {
  ServerOptions negative;
  negative.result_cache_entries = -1;
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::create(one_ps_one_worker("127.0.0.1:0", "127.0.0.1:0"), "worker", 0, negative);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("result cache entries -1"));
  ServerOptions huge;
  huge.result_cache_bytes = int64_t{1} << 40;
  server = Server::create(one_ps_one_worker("127.0.0.1:0", "127.0.0.1:0"), "worker", 0, huge);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("result cache bytes"));
}

// Connects to 127.0.0.1:`port`, sends `bytes` and then nothing (reading
// whatever the server sends): how long until the server closed the
// connection, or nullopt when it was still open after `limit`.
std::optional<absl::Duration> time_until_closed(int port, std::string_view bytes,
                                                absl::Duration limit) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const absl::Time start = absl::Now();
  std::optional<absl::Duration> closed;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      (bytes.empty() || ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
                            static_cast<ssize_t>(bytes.size()))) {
    while (!closed.has_value()) {
      const absl::Duration left = limit - (absl::Now() - start);
      if (left <= absl::ZeroDuration()) break;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1) <= 0) continue;
      char buffer[4096];
      if (::recv(fd, buffer, sizeof(buffer), 0) <= 0) closed = absl::Now() - start;
    }
  }
  ::close(fd);
  return closed;
}

std::unique_ptr<Server> started_worker(const ServerOptions& options) {
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::create(one_ps_one_worker("127.0.0.1:1", "127.0.0.1:0"), "worker", 0, options);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  EXPECT_TRUE((*server)->start().ok());
  return *std::move(server);
}

int port_of(const Server& server) {
  absl::StatusOr<HostPort> target = parse_host_port(server.target());
  return target.ok() ? target->port : 0;
}

// The HTTP/2 client preface and an empty SETTINGS frame: a handshake done,
// after which this client answers nothing (no SETTINGS or PING acks).
constexpr std::string_view kPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const std::string kPrefaceAndSettings =
    std::string(kPreface) + std::string("\0\0\0\x04\0\0\0\0\0", 9);

TEST(ServerConnectionBoundsTest, SilentAndHalfHandshakeClientsAreDisconnected) {
  ServerOptions options;
  options.handshake_timeout = absl::Milliseconds(300);
  std::unique_ptr<Server> server = started_worker(options);
  ASSERT_NE(server, nullptr);
  const int port = port_of(*server);
  for (std::string_view sent : {std::string_view(), kPreface.substr(0, 10)}) {
    std::optional<absl::Duration> closed = time_until_closed(port, sent, absl::Seconds(10));
    ASSERT_TRUE(closed.has_value()) << "sent " << sent.size() << " bytes";
    EXPECT_GE(*closed, absl::Milliseconds(200));
  }
  // The server still serves.
  EXPECT_TRUE(get_status(server->target(), "worker", 0, absl::Now() + kCallTimeout).ok());
}

TEST(ServerConnectionBoundsTest, HalfOpenConnectionIsClosedByKeepalive) {
  ServerOptions options;
  options.keepalive_time = absl::Milliseconds(200);
  options.keepalive_timeout = absl::Milliseconds(200);
  std::unique_ptr<Server> server = started_worker(options);
  ASSERT_NE(server, nullptr);
  std::optional<absl::Duration> closed =
      time_until_closed(port_of(*server), kPrefaceAndSettings, absl::Seconds(10));
  ASSERT_TRUE(closed.has_value());
  EXPECT_GE(*closed, absl::Milliseconds(200));
}

TEST(ServerConnectionBoundsTest, IdleConnectionIsClosedAndClientsReconnect) {
  ServerOptions options;
  options.max_connection_idle = absl::Milliseconds(300);
  std::unique_ptr<Server> server = started_worker(options);
  ASSERT_NE(server, nullptr);
  std::optional<absl::Duration> closed =
      time_until_closed(port_of(*server), kPrefaceAndSettings, absl::Seconds(10));
  ASSERT_TRUE(closed.has_value());
  // A gRPC client whose connection went idle reconnects on its next call.
  std::shared_ptr<grpc::Channel> channel = create_channel(server->target());
  ASSERT_TRUE(get_status(channel, server->target(), "worker", 0, absl::Now() + kCallTimeout).ok());
  EXPECT_TRUE(channel->WaitForStateChange(GRPC_CHANNEL_READY,
                                          absl::ToChronoTime(absl::Now() + absl::Seconds(10))));
  EXPECT_TRUE(get_status(channel, server->target(), "worker", 0, absl::Now() + kCallTimeout).ok());
}

TEST(ServerConnectionBoundsTest, RejectsNonPositiveDurations) {
  ServerOptions options;
  options.keepalive_timeout = absl::ZeroDuration();
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::create(one_ps_one_worker("127.0.0.1:1", "127.0.0.1:0"), "worker", 0, options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(server.status().message()), HasSubstr("keepalive_timeout"));
}

}  // namespace
}  // namespace psflow::internal

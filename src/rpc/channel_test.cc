#include "rpc/channel.h"

#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/v1/task.grpc.pb.h"
#include "rpc/health_check.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

// A loopback port that is bound but never listened on (with SO_REUSEPORT,
// so that a gRPC server may later serve on it): connecting is refused at once
// while it is held, and no other process can take the port.
class HeldPort {
 public:
  HeldPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(fd_, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port_ = ntohs(addr.sin_port);
    }
  }
  ~HeldPort() { ::close(fd_); }
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A bare gRPC server with the standard health service. gRPC refuses to
// build a server without any service of its own, so it registers an empty
// (all-UNIMPLEMENTED) task service too.
std::unique_ptr<grpc::Server> start_health_server(const std::string& address) {
  static auto* const service = new v1::VariableService::CallbackService();
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (port == 0) return nullptr;
  return server;
}

TEST(ChannelTest, GetStatusToADeadTaskFailsFastNamingIt) {
  HeldPort dead;
  ASSERT_NE(dead.port(), 0);
  const absl::Time start = absl::Now();
  // A generous deadline: failing fast must not depend on it.
  absl::StatusOr<v1::GetStatusResponse> status =
      get_status(dead.address(), "ps", 1, start + absl::Seconds(60));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(status.status().code(), absl::StatusCode::kUnavailable) << status.status();
  EXPECT_THAT(std::string(status.status().message()),
              HasSubstr(absl::StrCat("/job:ps/replica:0/task:1 (", dead.address(), "): ")));
  EXPECT_LT(took, absl::Seconds(5));
}

TEST(ChannelTest, GetStatusRejectsJobsWithoutATaskService) {
  HeldPort dead;
  absl::StatusOr<v1::GetStatusResponse> status =
      get_status(dead.address(), "chief", 0, absl::Now() + absl::Seconds(5));
  EXPECT_EQ(status.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.status().message()), HasSubstr("/job:chief/replica:0/task:0"));
}

TEST(ChannelTest, WaitForHealthyGivesUpAtTheDeadlineNamingTheTask) {
  HeldPort dead;
  const absl::Time start = absl::Now();
  const absl::Status status = wait_for_healthy(dead.address(), "/job:worker/replica:0/task:2",
                                               start + absl::Milliseconds(300));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("/job:worker/replica:0/task:2"));
  EXPECT_THAT(std::string(status.message()), HasSubstr(dead.address()));
  EXPECT_GE(took, absl::Milliseconds(250));
  EXPECT_LT(took, absl::Seconds(5));
}

TEST(ChannelTest, WaitForHealthyWaitsForTheServerToComeUp) {
  HeldPort port;
  ASSERT_NE(port.port(), 0);
  // First see a connection attempt fail, so that the subchannel (shared by
  // channels with equal arguments) is in reconnect backoff.
  std::shared_ptr<grpc::Channel> channel = create_channel(port.address());
  const absl::Time limit = absl::Now() + absl::Seconds(30);
  grpc_connectivity_state state = channel->GetState(/*try_to_connect=*/true);
  for (int i = 0; i < 100 && state != GRPC_CHANNEL_TRANSIENT_FAILURE; ++i) {
    if (!channel->WaitForStateChange(state, absl::ToChronoTime(limit))) break;
    state = channel->GetState(/*try_to_connect=*/true);
  }
  ASSERT_EQ(state, GRPC_CHANNEL_TRANSIENT_FAILURE);
  // The wait starts while nothing listens; it must keep retrying (short
  // reconnect backoff) and succeed once the server is up.
  std::future<absl::Status> healthy = std::async(std::launch::async, [&port] {
    return wait_for_healthy(port.address(), "/job:ps/replica:0/task:0",
                            absl::Now() + absl::Seconds(30));
  });
  std::unique_ptr<grpc::Server> server = start_health_server(port.address());
  ASSERT_NE(server, nullptr);
  const absl::Time up = absl::Now();
  EXPECT_TRUE(healthy.get().ok());
  // Reconnect backoff is capped at about a second.
  EXPECT_LT(absl::Now() - up, absl::Seconds(5));
  server->Shutdown(std::chrono::system_clock::now());
}

TEST(ChannelTest, NotServingIsUnavailable) {
  HeldPort port;
  std::unique_ptr<grpc::Server> server = start_health_server(port.address());
  ASSERT_NE(server, nullptr);
  server->GetHealthCheckService()->SetServingStatus(false);
  const absl::Status status =
      wait_for_healthy(port.address(), "/job:ps/replica:0/task:0", absl::Now() + absl::Seconds(30));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("NOT_SERVING"));
  server->Shutdown(std::chrono::system_clock::now());
}

TEST(HealthCheckTest, AsyncCheckReportsOnceAndCanBeCancelled) {
  HeldPort dead;
  absl::Notification done;
  absl::Status result;
  int calls = 0;
  {
    std::unique_ptr<HealthCheck> check =
        HealthCheck::start(dead.address(), "/job:ps/replica:0/task:0",
                           absl::Now() + absl::Seconds(60), [&](absl::Status status) {
                             result = std::move(status);
                             ++calls;
                             done.Notify();
                           });
    check->cancel();
    EXPECT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  }  // The destructor returns only after the callback.
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(result.code(), absl::StatusCode::kCancelled) << result;
}

TEST(HealthCheckTest, AsyncCheckSucceedsAgainstAServer) {
  HeldPort port;
  std::unique_ptr<grpc::Server> server = start_health_server(port.address());
  ASSERT_NE(server, nullptr);
  absl::Notification done;
  absl::Status result = absl::UnknownError("not called");
  std::unique_ptr<HealthCheck> check =
      HealthCheck::start(port.address(), "/job:ps/replica:0/task:0",
                         absl::Now() + absl::Seconds(30), [&](absl::Status status) {
                           result = std::move(status);
                           done.Notify();
                         });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_TRUE(result.ok()) << result;
  check.reset();
  server->Shutdown(std::chrono::system_clock::now());
}

}  // namespace
}  // namespace psflow::internal

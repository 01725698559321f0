#include "rpc/listen_address.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kServiceName[] = "job-ps-0.job.default.svc";

// A machine whose only address is 127.0.0.1 and whose resolver knows one
// name. (Only loopback addresses appear: here 127.0.0.5 stands for another
// machine's address.)
HostLookup fake_lookup(std::vector<std::string> service_addresses) {
  return HostLookup{
      .resolve =
          [service_addresses](const std::string& host) -> absl::StatusOr<std::vector<std::string>> {
        if (host == kServiceName) return service_addresses;
        return absl::UnavailableError("'" + host + "' does not resolve here (unknown name)");
      },
      .is_local = [](const std::string& ip) { return ip == "127.0.0.1" || ip == "127.0.0.7"; },
      .local_addresses =
          [] {
            return std::vector<std::string>{"127.0.0.1", "127.0.0.7"};
          },
  };
}

// A lookup that fails the test when consulted.
HostLookup unused_lookup() {
  return HostLookup{
      .resolve = [](const std::string& host) -> absl::StatusOr<std::vector<std::string>> {
        ADD_FAILURE() << "resolved " << host;
        return std::vector<std::string>{};
      },
      .is_local =
          [](const std::string& ip) {
            ADD_FAILURE() << "asked about " << ip;
            return false;
          },
      .local_addresses = [] { return std::vector<std::string>{}; },
  };
}

TEST(ListenAddressTest, LoopbackHostsAreBoundExactlyAsGiven) {
  const HostLookup lookup = unused_lookup();
  EXPECT_EQ(task_listen_address({"127.0.0.2", 2222}, lookup)->address, "127.0.0.2:2222");
  EXPECT_EQ(task_listen_address({"localhost", 0}, lookup)->address, "localhost:0");
  EXPECT_EQ(task_listen_address({"::1", 2222}, lookup)->address, "[::1]:2222");
  EXPECT_EQ(task_listen_address({"127.0.0.2", 2222}, lookup)->origin,
            "the spec's loopback address");
}

TEST(ListenAddressTest, WildcardLiteralsNameEveryInterfaceDeliberately) {
  EXPECT_EQ(task_listen_address({"0.0.0.0", 2222})->address, "0.0.0.0:2222");
  EXPECT_EQ(task_listen_address({"::", 2222})->address, "[::]:2222");
  EXPECT_EQ(task_listen_address({"::", 2222})->origin, "the spec's IP address");
}

TEST(ListenAddressTest, ANameBindsTheFirstOfItsAddressesThatIsThisMachines) {
  absl::StatusOr<ListenAddress> listen =
      task_listen_address({kServiceName, 2222}, fake_lookup({"127.0.0.5", "127.0.0.7"}));
  ASSERT_TRUE(listen.ok()) << listen.status();
  EXPECT_EQ(listen->address, "127.0.0.7:2222");
  EXPECT_EQ(listen->origin, "'job-ps-0.job.default.svc' resolved to 127.0.0.7");
}

TEST(ListenAddressTest, ANameOfAnotherMachineIsRefusedNamingWhatItResolvedToAndTheFix) {
  absl::StatusOr<ListenAddress> listen =
      task_listen_address({kServiceName, 2222}, fake_lookup({"127.0.0.5", "127.0.0.6"}));
  EXPECT_EQ(listen.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(listen.status().message()),
              AllOf(HasSubstr("cannot listen on job-ps-0.job.default.svc:2222"),
                    HasSubstr("'job-ps-0.job.default.svc' resolved to 127.0.0.5, 127.0.0.6"),
                    HasSubstr("not an address of this machine (its addresses: 127.0.0.1, "
                              "127.0.0.7)"),
                    HasSubstr("--bind ADDRESS"), HasSubstr("--bind 0.0.0.0:2222")));
}

TEST(ListenAddressTest, ANameThatDoesNotResolveIsRefusedWithTheFix) {
  absl::StatusOr<ListenAddress> listen =
      task_listen_address({"job-ps-1.job.default.svc", 0}, fake_lookup({}));
  EXPECT_EQ(listen.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(listen.status().message()),
              AllOf(HasSubstr("'job-ps-1.job.default.svc' does not resolve here"),
                    HasSubstr("publishNotReadyAddresses"), HasSubstr("--bind 0.0.0.0:2222")));
}

TEST(ListenAddressTest, ANameResolvingToNothingIsRefused) {
  absl::StatusOr<ListenAddress> listen = task_listen_address({kServiceName, 2222}, fake_lookup({}));
  EXPECT_EQ(listen.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(listen.status().message()), HasSubstr("resolved to no address"));
}

TEST(ListenAddressTest, LoopbackWildcardsAndInterfaceAddressesAreLocal) {
  for (const char* ip : {"127.0.0.1", "127.0.0.2", "127.255.0.9", "::1", "0.0.0.0", "::"}) {
    EXPECT_TRUE(is_local_address(ip, {})) << ip;
  }
  const std::vector<std::string> interfaces = interface_addresses();
  EXPECT_FALSE(interfaces.empty());
  for (const std::string& ip : interfaces) {
    EXPECT_TRUE(is_local_address(ip, interfaces)) << ip;
    EXPECT_TRUE(system_host_lookup().is_local(ip)) << ip;
  }
}

TEST(ListenAddressTest, TheSystemResolverResolvesLocalhostAndNamesUnknownHosts) {
  absl::StatusOr<std::vector<std::string>> localhost = system_host_lookup().resolve("localhost");
  ASSERT_TRUE(localhost.ok()) << localhost.status();
  EXPECT_FALSE(localhost->empty());
  for (const std::string& ip : *localhost) EXPECT_TRUE(is_local_address(ip, {})) << ip;
  // .invalid never resolves (RFC 6761).
  absl::StatusOr<std::vector<std::string>> unknown =
      system_host_lookup().resolve("psflow-test-task.invalid");
  EXPECT_FALSE(unknown.ok());
  EXPECT_THAT(std::string(unknown.status().message()),
              HasSubstr("'psflow-test-task.invalid' does not resolve here"));
}

}  // namespace
}  // namespace psflow::internal

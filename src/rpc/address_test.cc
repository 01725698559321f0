#include "rpc/address.h"

#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

TEST(AddressTest, ParsesHostAndPort) {
  EXPECT_EQ(*parse_host_port("127.0.0.1:2222"), (HostPort{"127.0.0.1", 2222}));
  EXPECT_EQ(*parse_host_port("ps-0.svc:0"), (HostPort{"ps-0.svc", 0}));
  EXPECT_EQ(*parse_host_port("[::1]:65535"), (HostPort{"::1", 65535}));
}

TEST(AddressTest, RejectsMalformedAddresses) {
  for (const char* bad : {"", "host", "host:", ":22", "host:http", "host:70000", "host:-1",
                          "host:22x", "::1:22", "[::1]", "[::1:22", "[]:22"}) {
    absl::StatusOr<HostPort> parsed = parse_host_port(bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    if (!parsed.ok()) {
      EXPECT_NE(parsed.status().message().find("host:port"), absl::string_view::npos);
    }
  }
}

TEST(AddressTest, JoinsAndBracketsIpv6) {
  EXPECT_EQ(join_host_port("127.0.0.1", 1), "127.0.0.1:1");
  EXPECT_EQ(join_host_port("::", 2), "[::]:2");
}

TEST(AddressTest, RecognisesLoopbackHosts) {
  for (const char* host :
       {"localhost", "LocalHost", "127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1"}) {
    EXPECT_TRUE(is_loopback_host(host)) << host;
  }
  for (const char* host : {"10.0.0.1", "0.0.0.0", "::", "ps-0.svc", "example.com"}) {
    EXPECT_FALSE(is_loopback_host(host)) << host;
  }
}

}  // namespace
}  // namespace psflow::internal

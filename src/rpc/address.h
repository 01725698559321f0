// Task addresses: "host:port", "[v6]:port".
#ifndef PSFLOW_RPC_ADDRESS_H_
#define PSFLOW_RPC_ADDRESS_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace psflow::internal {

// A parsed task address. IPv6 hosts are kept without brackets.
struct HostPort {
  std::string host;
  int port = 0;

  friend bool operator==(const HostPort&, const HostPort&) = default;
};

// Splits "host:port" or "[v6]:port". The port must be a decimal number in
// [0, 65535] (0 lets the server pick one). INVALID_ARGUMENT names the address
// and the expected form.
[[nodiscard]] absl::StatusOr<HostPort> parse_host_port(std::string_view address);

// "host:port", bracketing IPv6 hosts.
[[nodiscard]] std::string join_host_port(std::string_view host, int port);

// True for "localhost", 127.0.0.0/8 and ::1 (and the IPv4-mapped ::ffff:127.x).
[[nodiscard]] bool is_loopback_host(std::string_view host);

}  // namespace psflow::internal

#endif  // PSFLOW_RPC_ADDRESS_H_

#include "rpc/address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/strings.h"

namespace psflow::internal {
namespace {

absl::Status bad_address(std::string_view address, std::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid task address '", av(address), "': ", av(why),
                   "; expected host:port (e.g. 127.0.0.1:2222, ps-0.svc:2222 or [::1]:2222)"));
}

}  // namespace

absl::StatusOr<HostPort> parse_host_port(std::string_view address) {
  std::string_view host;
  std::string_view port;
  if (!address.empty() && address.front() == '[') {
    const size_t close = address.find(']');
    if (close == std::string_view::npos) return bad_address(address, "missing ']'");
    host = address.substr(1, close - 1);
    std::string_view rest = address.substr(close + 1);
    if (rest.empty() || rest.front() != ':') {
      return bad_address(address, "no port after the bracketed host");
    }
    port = rest.substr(1);
  } else {
    const size_t colon = address.rfind(':');
    if (colon == std::string_view::npos) return bad_address(address, "no port");
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return bad_address(address, "IPv6 hosts must be written in brackets");
    }
  }
  if (host.empty()) return bad_address(address, "empty host");
  if (port.empty()) return bad_address(address, "empty port");
  int value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value < 0 || value > 65535) {
    return bad_address(address, "the port must be a number from 0 to 65535");
  }
  return HostPort{std::string(host), value};
}

std::string join_host_port(std::string_view host, int port) {
  if (host.find(':') != std::string_view::npos) return absl::StrCat("[", av(host), "]:", port);
  return absl::StrCat(av(host), ":", port);
}

bool is_loopback_host(std::string_view host) {
  if (absl::EqualsIgnoreCase(av(host), "localhost")) return true;
  const std::string text(host);
  in_addr v4{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

}  // namespace psflow::internal

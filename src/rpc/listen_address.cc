#include "rpc/listen_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/strings.h"

namespace psflow::internal {
namespace {

// The numeric form of an IPv4 or IPv6 socket address (no scope id), or "".
std::string numeric_host(const sockaddr* addr) {
  char text[INET6_ADDRSTRLEN] = {};
  if (addr->sa_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(addr);
    if (inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text)) != nullptr) return text;
  } else if (addr->sa_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(addr);
    if (inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text)) != nullptr) return text;
  }
  return "";
}

void append_unique(std::vector<std::string>& out, std::string value) {
  if (value.empty() || std::find(out.begin(), out.end(), value) != out.end()) return;
  out.push_back(std::move(value));
}

bool is_ip_literal(const std::string& host) {
  in_addr v4{};
  in6_addr v6{};
  return inet_pton(AF_INET, host.c_str(), &v4) == 1 || inet_pton(AF_INET6, host.c_str(), &v6) == 1;
}

absl::StatusOr<std::vector<std::string>> resolve_host(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const int rc = getaddrinfo(host.c_str(), nullptr, &hints, &list);
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("'", host, "' does not resolve here (", gai_strerror(rc), ")"));
  }
  std::vector<std::string> out;
  for (const addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    append_unique(out, numeric_host(ai->ai_addr));
  }
  freeaddrinfo(list);
  return out;
}

// The end of every refusal: what a task binds, and how to choose otherwise.
std::string bind_fix(int port) {
  const int shown = port == 0 ? 2222 : port;
  return absl::StrCat(
      "A task listens only on the address its cluster spec (TF_CONFIG) names for it. Run it "
      "on the machine that address belongs to, or give the address to listen on: "
      "`psflow server --bind ADDRESS` (ServerOptions::bind_address), e.g. --bind 0.0.0.0:",
      shown,
      " to accept on every interface deliberately, or on Kubernetes --bind $(POD_IP):", shown,
      " with POD_IP from the downward API (status.podIP)");
}

std::string machine_addresses(const HostLookup& lookup) {
  const std::vector<std::string> local = lookup.local_addresses();
  return local.empty() ? "none found" : absl::StrJoin(local, ", ");
}

}  // namespace

std::vector<std::string> interface_addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (const ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr) continue;
    append_unique(out, numeric_host(ifa->ifa_addr));
  }
  freeifaddrs(list);
  return out;
}

bool is_local_address(std::string_view ip, const std::vector<std::string>& interfaces) {
  if (is_loopback_host(ip) || ip == "0.0.0.0" || ip == "::") return true;
  return std::find(interfaces.begin(), interfaces.end(), ip) != interfaces.end();
}

const HostLookup& system_host_lookup() {
  static const HostLookup* const lookup = new HostLookup{
      .resolve = resolve_host,
      .is_local = [](const std::string& ip) { return is_local_address(ip, interface_addresses()); },
      .local_addresses = interface_addresses,
  };
  return *lookup;
}

absl::StatusOr<ListenAddress> task_listen_address(const HostPort& task, const HostLookup& lookup) {
  if (is_loopback_host(task.host)) {
    return ListenAddress{join_host_port(task.host, task.port), "the spec's loopback address"};
  }
  if (is_ip_literal(task.host)) {
    if (lookup.is_local(task.host)) {
      return ListenAddress{join_host_port(task.host, task.port), "the spec's IP address"};
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot listen on ", join_host_port(task.host, task.port), ": ", task.host,
        " is not an address of this machine (its addresses: ", machine_addresses(lookup), "). ",
        bind_fix(task.port)));
  }
  absl::StatusOr<std::vector<std::string>> resolved = lookup.resolve(task.host);
  if (!resolved.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot listen on ", join_host_port(task.host, task.port), ": ",
        resolved.status().message(),
        ". (On Kubernetes a headless Service publishes a pod's name only once the pod is ready, "
        "unless the Service sets publishNotReadyAddresses.) ",
        bind_fix(task.port)));
  }
  for (const std::string& ip : *resolved) {
    if (lookup.is_local(ip)) {
      return ListenAddress{join_host_port(ip, task.port),
                           absl::StrCat("'", task.host, "' resolved to ", ip)};
    }
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "cannot listen on ", join_host_port(task.host, task.port), ": '", task.host, "' resolved to ",
      resolved->empty() ? "no address" : absl::StrJoin(*resolved, ", "),
      ", which is not an address of this machine (its addresses: ", machine_addresses(lookup),
      "). ", bind_fix(task.port)));
}

}  // namespace psflow::internal

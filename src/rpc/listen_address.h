// Where a task listens: the address its cluster spec names for it, made
// concrete (a name resolved to this machine's address), never every
// interface unless asked for.
#ifndef PSFLOW_RPC_LISTEN_ADDRESS_H_
#define PSFLOW_RPC_LISTEN_ADDRESS_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "rpc/address.h"

namespace psflow::internal {

// A task's listening address and how it was chosen.
// Thread-safety: a value type.
struct ListenAddress {
  // What the server binds, numeric unless the spec said "localhost":
  // "10.1.2.3:2222", "127.0.0.2:0", "[::1]:2222".
  std::string address;
  // Why, for logs and `psflow server --check-config`: "the spec's loopback
  // address", "the spec's IP address", "'ps-0.svc' resolved to 10.1.2.3",
  // "the bind address given".
  std::string origin;
};

// What choosing a listening address asks of the system. The defaults
// (system_host_lookup) use getaddrinfo and getifaddrs; tests substitute them.
// Thread-safety: a value type; the system functions may run concurrently.
struct HostLookup {
  // The numeric addresses `host` resolves to, in the resolver's order,
  // without duplicates. An error names the host and the resolver's reason.
  std::function<absl::StatusOr<std::vector<std::string>>(const std::string& host)> resolve;
  // True when the numeric address `ip` is one this machine can listen on.
  std::function<bool(const std::string& ip)> is_local;
  // This machine's interface addresses, for error messages only.
  std::function<std::vector<std::string>()> local_addresses;
};

[[nodiscard]] const HostLookup& system_host_lookup();

// The numeric addresses of this machine's interfaces (getifaddrs): IPv4
// and IPv6, without IPv6 scope ids, in the kernel's order, no duplicates.
// Empty when getifaddrs fails.
[[nodiscard]] std::vector<std::string> interface_addresses();

// True for the addresses a server on this machine can bind: loopback
// (127.0.0.0/8, ::1), the wildcards 0.0.0.0 and ::, and any address of
// `interfaces`. `ip` must be numeric.
[[nodiscard]] bool is_local_address(std::string_view ip,
                                    const std::vector<std::string>& interfaces);

// Where a task whose cluster-spec address is `task` listens when it is given
// no bind address:
// * a loopback host ("localhost", 127.0.0.0/8, ::1): exactly that address;
// * an IP literal: that address, when it is this machine's (0.0.0.0 and ::
//   are every interface, named so deliberately);
// * a name (a Kubernetes headless-service name such as
//   job-ps-0.job.default.svc): the first address it resolves to that is this
//   machine's.
// Never every interface otherwise. FAILED_PRECONDITION when the address is
// not this machine's or the name does not resolve: the message names the
// host, what it resolved to (or why it did not), this machine's addresses,
// and the fix, an explicit bind address (`psflow server --bind`).
[[nodiscard]] absl::StatusOr<ListenAddress> task_listen_address(
    const HostPort& task, const HostLookup& lookup = system_host_lookup());

}  // namespace psflow::internal

#endif  // PSFLOW_RPC_LISTEN_ADDRESS_H_

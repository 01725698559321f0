#include "rpc/bind_diagnosis.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "rpc/address.h"

namespace psflow::internal {

std::string diagnose_bind_failure(std::string_view bind_address, bool reuse_port) {
  absl::StatusOr<HostPort> parsed = parse_host_port(bind_address);
  if (!parsed.ok()) return std::string(parsed.status().message());
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | AI_PASSIVE;
  addrinfo* list = nullptr;
  const std::string port = std::to_string(parsed->port);
  const int rc = getaddrinfo(parsed->host.c_str(), port.c_str(), &hints, &list);
  if (rc != 0) {
    return absl::StrCat("cannot resolve '", parsed->host, "': ", gai_strerror(rc));
  }
  std::string reason;
  for (addrinfo* ai = list; ai != nullptr && reason.empty(); ai = ai->ai_next) {
    const int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (reuse_port) ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd, 1) != 0) {
      reason = std::strerror(errno);
    }
    ::close(fd);
  }
  freeaddrinfo(list);
  return reason;
}

}  // namespace psflow::internal

// Helpers for tests of which address a task listens on (tests only).
#ifndef PSFLOW_RPC_LOOPBACK_TEST_UTIL_H_
#define PSFLOW_RPC_LOOPBACK_TEST_UTIL_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace psflow::internal::testing {

// True when a TCP connection to 127.0.0.<last>:<port> is refused (nothing
// listens there).
inline bool connection_refused(int last, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(0x7f000000u | static_cast<uint32_t>(last));
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool refused =
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 && errno == ECONNREFUSED;
  ::close(fd);
  return refused;
}

}  // namespace psflow::internal::testing

#endif  // PSFLOW_RPC_LOOPBACK_TEST_UTIL_H_

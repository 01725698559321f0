// Holding a TCP port for a task that will listen on it later.
#ifndef PSFLOW_LAUNCHER_PORT_RESERVATION_H_
#define PSFLOW_LAUNCHER_PORT_RESERVATION_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace psflow::internal {

// A socket bound to host:<free port> with SO_REUSEPORT and never listened
// on. While it is open, only sockets of the same user that also set
// SO_REUSEPORT (a task server started with reuse_port) can bind the port,
// so no unrelated process takes it between choosing and serving, and a
// restarted task gets the same address back. A bound socket that does not
// listen receives no connections. Move-only RAII handle.
// Thread-safety: a value type; no shared state.
class PortReservation {
 public:
  // `host` must be a numeric IPv4 or IPv6 address ("127.0.0.1", "::1").
  [[nodiscard]] static absl::StatusOr<PortReservation> reserve(std::string_view host);

  PortReservation() = default;
  PortReservation(PortReservation&& other) noexcept;
  PortReservation& operator=(PortReservation&& other) noexcept;
  PortReservation(const PortReservation&) = delete;
  PortReservation& operator=(const PortReservation&) = delete;
  ~PortReservation();

  [[nodiscard]] int port() const { return port_; }
  // "host:port", IPv6 hosts bracketed.
  [[nodiscard]] std::string address() const;
  // Closes the socket; the port becomes free for anyone.
  void release();

 private:
  PortReservation(int fd, std::string host, int port)
      : fd_(fd), host_(std::move(host)), port_(port) {}

  int fd_ = -1;
  std::string host_;
  int port_ = 0;
};

}  // namespace psflow::internal

#endif  // PSFLOW_LAUNCHER_PORT_RESERVATION_H_

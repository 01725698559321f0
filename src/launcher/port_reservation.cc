#include "launcher/port_reservation.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "rpc/address.h"

namespace psflow::internal {

absl::StatusOr<PortReservation> PortReservation::reserve(std::string_view host) {
  const std::string text(host);
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = AF_INET;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
  if (inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    length = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) == 1) {
    family = AF_INET6;
    v6->sin6_family = AF_INET6;
    length = sizeof(sockaddr_in6);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot reserve a port on '", text,
                     "': the host must be a numeric IP address such as 127.0.0.1 or ::1"));
  }
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrCat("socket(): ", std::strerror(errno)));
  }
  const int one = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) != 0 ||
      ::bind(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length) != 0) {
    const int error = errno;
    ::close(fd);
    return absl::UnavailableError(
        absl::StrCat("cannot reserve a port on ", text, ": ", std::strerror(error)));
  }
  const int port = ntohs(family == AF_INET ? v4->sin_port : v6->sin6_port);
  return PortReservation(fd, text, port);
}

PortReservation::PortReservation(PortReservation&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      host_(std::move(other.host_)),
      port_(std::exchange(other.port_, 0)) {}

PortReservation& PortReservation::operator=(PortReservation&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
    host_ = std::move(other.host_);
    port_ = std::exchange(other.port_, 0);
  }
  return *this;
}

PortReservation::~PortReservation() { release(); }

std::string PortReservation::address() const { return join_host_port(host_, port_); }

void PortReservation::release() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace psflow::internal

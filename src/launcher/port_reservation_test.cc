#include "launcher/port_reservation.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

// Binds a fresh loopback socket to `port`; returns errno, or 0 on success.
int try_bind(int port, bool reuse_port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (reuse_port) ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  const int error = rc == 0 ? 0 : errno;
  ::close(fd);
  return error;
}

TEST(PortReservationTest, HoldsAPortOnlyReusePortSocketsMayShare) {
  absl::StatusOr<PortReservation> reservation = PortReservation::reserve("127.0.0.1");
  ASSERT_TRUE(reservation.ok()) << reservation.status();
  ASSERT_GT(reservation->port(), 0);
  EXPECT_EQ(reservation->address(), "127.0.0.1:" + std::to_string(reservation->port()));
  EXPECT_EQ(try_bind(reservation->port(), /*reuse_port=*/false), EADDRINUSE);
  EXPECT_EQ(try_bind(reservation->port(), /*reuse_port=*/true), 0);
}

TEST(PortReservationTest, GivesDistinctPorts) {
  absl::StatusOr<PortReservation> a = PortReservation::reserve("127.0.0.1");
  absl::StatusOr<PortReservation> b = PortReservation::reserve("127.0.0.1");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->port(), b->port());
}

TEST(PortReservationTest, MovesKeepTheReservation) {
  absl::StatusOr<PortReservation> reservation = PortReservation::reserve("127.0.0.1");
  ASSERT_TRUE(reservation.ok());
  PortReservation moved = *std::move(reservation);
  EXPECT_EQ(try_bind(moved.port(), /*reuse_port=*/false), EADDRINUSE);
}

TEST(PortReservationTest, RejectsHostNames) {
  EXPECT_EQ(PortReservation::reserve("localhost").status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace psflow::internal

#include "train/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <filesystem>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/errno_status.h"

namespace psflow::internal {
namespace {

// The holder's description is one short line; more is not ours.
constexpr size_t kMaxHolderBytes = 512;

std::string read_holder(int fd) {
  char buf[kMaxHolderBytes] = {};
  const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return "";
  return std::string(absl::StripAsciiWhitespace(absl::string_view(buf, static_cast<size_t>(n))));
}

std::string describe_self() {
  char host[HOST_NAME_MAX + 1] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return absl::StrCat("pid ", ::getpid(), " on host ", host[0] != '\0' ? host : "(unknown)",
                      ", since ",
                      absl::FormatTime("%Y-%m-%d %H:%M:%S %Z", absl::Now(), absl::LocalTimeZone()));
}

}  // namespace

absl::StatusOr<RunDirLock> RunDirLock::acquire(const std::string& run_dir,
                                               std::string* previous_holder) {
  if (previous_holder != nullptr) previous_holder->clear();
  std::error_code ec;
  std::filesystem::create_directories(run_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat("cannot create the run directory ", run_dir,
                                                      ": ", ec.message(),
                                                      "; choose a writable --run-dir"));
  }
  const std::string path = (std::filesystem::path(run_dir) / kRunLockFile).string();
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return errno_status(errno, absl::StrCat("cannot open the run directory's lock ", path,
                                            "; choose a writable --run-dir"));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    // Not ours: read the holder, then close without touching the file.
    const std::string holder = err == EWOULDBLOCK ? read_holder(fd) : "";
    ::close(fd);
    if (err != EWOULDBLOCK) {
      return errno_status(err, absl::StrCat("cannot lock the run directory ", run_dir));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("the run directory ", run_dir, " is in use by another psflow train (",
                     holder.empty() ? "holder unknown" : holder,
                     "); wait for it to finish, stop it, or pass another --run-dir"));
  }
  // Ours now. A description left in the file is that of a process that
  // died holding the lock: the kernel released it.
  RunDirLock lock(fd);
  if (previous_holder != nullptr) *previous_holder = read_holder(fd);
  const std::string self = describe_self() + "\n";
  if (::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, self.data(), self.size(), 0) != static_cast<ssize_t>(self.size())) {
    return errno_status(errno, absl::StrCat("cannot write the run directory's lock ", path));
  }
  return lock;
}

RunDirLock& RunDirLock::operator=(RunDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

RunDirLock::~RunDirLock() {
  if (fd_ < 0) return;
  // Clear our description so the next holder does not report us as dead.
  if (::ftruncate(fd_, 0) != 0) {
    // Nothing to do: the lock itself goes with the descriptor.
  }
  ::close(fd_);
}

}  // namespace psflow::internal

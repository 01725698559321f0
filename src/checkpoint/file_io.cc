#include "checkpoint/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/strings.h"

namespace psflow::internal::checkpoint {

uint32_t crc32_of(std::string_view bytes, uint32_t crc) {
  uLong c = crc;
  const auto* p = reinterpret_cast<const Bytef*>(bytes.data());
  size_t left = bytes.size();
  while (left > 0) {
    const auto n = static_cast<uInt>(std::min<size_t>(left, size_t{1} << 30));
    c = ::crc32(c, p, n);
    p += n;
    left -= n;
  }
  return static_cast<uint32_t>(c);
}

absl::Status fs_error(const std::error_code& ec, std::string_view what) {
  return errno_status(ec.value(), what);
}

std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  return absl::StrCat(::getpid(), "-", counter.fetch_add(1), "-", absl::ToUnixNanos(absl::Now()));
}

absl::StatusOr<std::string> read_file(const std::string& path, uint64_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_status(errno, absl::StrCat("cannot open ", path));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return errno_status(e, absl::StrCat("cannot stat ", path));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the file is ", size, " bytes, more than the limit of ", max_bytes));
  }
  std::string out(static_cast<size_t>(size), '\0');
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      return errno_status(e, absl::StrCat("cannot read ", path));
    }
    if (n == 0) break;  // the file shrank meanwhile
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  out.resize(done);
  return out;
}

absl::StatusOr<AtomicFileWriter> AtomicFileWriter::open(std::string path) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno_status(errno, absl::StrCat("cannot create ", tmp));
  return AtomicFileWriter(std::move(path), fd);
}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), digest_(other.digest_) {}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink((path_ + ".tmp").c_str());
  }
}

absl::Status AtomicFileWriter::append(const void* data, size_t size) {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, " is already closed"));
  const auto* p = static_cast<const char*>(data);
  digest_.crc32 = crc32_of(std::string_view(p, size), digest_.crc32);
  digest_.size += size;
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd_, p + done, std::min<size_t>(size - done, size_t{1} << 30));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_status(errno, absl::StrCat("cannot write ", path_, ".tmp"));
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<FileDigest> AtomicFileWriter::commit() {
  if (fd_ < 0) return absl::FailedPreconditionError(absl::StrCat(path_, " is already closed"));
  const std::string tmp = path_ + ".tmp";
  if (::fsync(fd_) != 0) return errno_status(errno, absl::StrCat("cannot fsync ", tmp));
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return errno_status(e, absl::StrCat("cannot close ", tmp));
  }
  if (::rename(tmp.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return errno_status(e, absl::StrCat("cannot rename ", tmp, " to ", path_));
  }
  return digest_;
}

absl::StatusOr<FileDigest> write_file_atomically(const std::string& path, std::string_view bytes) {
  absl::StatusOr<AtomicFileWriter> w = AtomicFileWriter::open(path);
  if (!w.ok()) return w.status();
  if (absl::Status s = w->append(bytes); !s.ok()) return s;
  return w->commit();
}

absl::Status sync_directory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno_status(errno, absl::StrCat("cannot open directory ", path));
  const int rc = ::fsync(fd);
  const int e = errno;
  ::close(fd);
  if (rc != 0) return errno_status(e, absl::StrCat("cannot fsync directory ", path));
  return absl::OkStatus();
}

}  // namespace psflow::internal::checkpoint

#include "rpc/shared_memory_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace psflow::internal {
namespace {

// The header: magic, then the token's length (one byte) and the token.
constexpr char kMagic[16] = "psflow-shm-v1";

std::string errno_text(int error) { return std::strerror(error); }

absl::StatusOr<uint8_t*> map(int fd, size_t bytes) {
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (data == MAP_FAILED) {
    return absl::ResourceExhaustedError(
        absl::StrCat("mapping ", bytes, " bytes of shared memory failed: ", errno_text(errno)));
  }
  return static_cast<uint8_t*>(data);
}

}  // namespace

SharedMemoryRegion::~SharedMemoryRegion() {
  munmap(data_, size_);
  close(fd_);
}

absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> SharedMemoryRegion::create(
    size_t bytes, std::string_view token) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  if (bytes <= kHeaderBytes || bytes % page != 0 || token.size() > 255) {
    return absl::InvalidArgumentError(absl::StrCat("a shared-memory region must be a multiple of ",
                                                   page, " bytes above ", kHeaderBytes, ", not ",
                                                   bytes));
  }
  const int fd = memfd_create("psflow-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    return absl::FailedPreconditionError(absl::StrCat("memfd_create failed: ", errno_text(errno)));
  }
  // Sealed at its size: a client holding the file cannot shrink it under
  // the ps's mapping (which would turn the ps's next access into SIGBUS).
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const int error = errno;
    close(fd);
    return absl::ResourceExhaustedError(
        absl::StrCat("sizing and sealing a shared-memory region failed: ", errno_text(error)));
  }
  absl::StatusOr<uint8_t*> data = map(fd, bytes);
  if (!data.ok()) {
    close(fd);
    return data.status();
  }
  std::memcpy(*data, kMagic, sizeof(kMagic));
  (*data)[sizeof(kMagic)] = static_cast<uint8_t>(token.size());
  std::memcpy(*data + sizeof(kMagic) + 1, token.data(), token.size());
  return std::unique_ptr<SharedMemoryRegion>(new SharedMemoryRegion(fd, *data, bytes));
}

absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> SharedMemoryRegion::attach(
    int64_t pid, int fd, size_t bytes, std::string_view token) {
  if (pid <= 0 || fd < 0 || bytes <= kHeaderBytes || token.size() > 255) {
    return absl::FailedPreconditionError(
        absl::StrCat("the ps offered an unusable shared-memory region (pid ", pid, ", fd ", fd,
                     ", ", bytes, " bytes)"));
  }
  const std::string path = absl::StrCat("/proc/", pid, "/fd/", fd);
  const int own = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (own < 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open the ps's shared memory ", path, ": ", errno_text(errno),
                     " (the ps runs in another PID namespace or as another user)"));
  }
  struct stat st {};
  if (fstat(own, &st) != 0 || static_cast<size_t>(st.st_size) != bytes) {
    close(own);
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not the ps's shared-memory region (size differs)"));
  }
  absl::StatusOr<uint8_t*> data = map(own, bytes);
  if (!data.ok()) {
    close(own);
    return data.status();
  }
  auto region = std::unique_ptr<SharedMemoryRegion>(new SharedMemoryRegion(own, *data, bytes));
  const uint8_t* header = region->data();
  if (std::memcmp(header, kMagic, sizeof(kMagic)) != 0 || header[sizeof(kMagic)] != token.size() ||
      std::memcmp(header + sizeof(kMagic) + 1, token.data(), token.size()) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, " is not the ps's shared-memory region (its header differs)"));
  }
  return region;
}

std::string host_boot_id() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return std::string(absl::StripAsciiWhitespace(id));
}

std::string pid_namespace() {
  char target[128];
  const ssize_t n = readlink("/proc/self/ns/pid", target, sizeof(target) - 1);
  return n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string();
}

std::string random_token(size_t n) {
  std::string out(n, '\0');
  size_t filled = 0;
  // getrandom returns at most 32 MiB per call and may be interrupted; a
  // token is far smaller, so this loop runs once or twice.
  for (int attempt = 0; attempt < 64 && filled < n; ++attempt) {
    const ssize_t got = getrandom(out.data() + filled, n - filled, 0);
    if (got > 0) filled += static_cast<size_t>(got);
  }
  if (filled < n) std::abort();  // The kernel's generator does not fail once seeded.
  return out;
}

bool shared_memory_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("PSFLOW_SHARED_MEMORY");
    if (value == nullptr) return true;
    const std::string v = absl::AsciiStrToLower(value);
    return !(v == "0" || v == "off" || v == "false" || v == "no");
  }();
  return enabled;
}

}  // namespace psflow::internal

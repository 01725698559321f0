// A region of memory shared by a ps task and one client on the same host:
// the data path for the tensor payloads of Execute calls, the control
// messages staying on the task's gRPC channel (mutual TLS by default).
//
// The ps creates the region (a memfd, sealed against shrinking and growing,
// so that no client can make the ps fault by truncating it) and the client
// maps the same file through /proc/<ps pid>/fd/<fd>. The kernel lets only a
// process that may already read the ps's memory (same user, ptrace read
// access) open that path, so the region widens no trust boundary: it is
// reachable by exactly the processes that could read the ps anyway. Its
// first kHeaderBytes hold a header naming the session, by which the client
// checks that the file it opened is the one the ps offered it (a pid seen
// from another PID namespace names another process).
#ifndef PSFLOW_RPC_SHARED_MEMORY_REGION_H_
#define PSFLOW_RPC_SHARED_MEMORY_REGION_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace psflow::internal {

// Thread-safety: immutable after creation; the mapped bytes are written and
// read by both processes under the Execute protocol's rules (a call's slice
// belongs to the client until it sends the call and again once the answer
// arrives; to the ps in between).
class SharedMemoryRegion {
 public:
  // Bytes at the start of the region that carry the header, not payloads.
  static constexpr size_t kHeaderBytes = 4096;
  // Session tokens are this long (random bytes).
  static constexpr size_t kTokenBytes = 16;

  SharedMemoryRegion(const SharedMemoryRegion&) = delete;
  SharedMemoryRegion& operator=(const SharedMemoryRegion&) = delete;
  ~SharedMemoryRegion();

  // The ps side: a sealed memfd of `bytes` (a multiple of the page size,
  // more than kHeaderBytes) whose header names `token`.
  static absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> create(size_t bytes,
                                                                    std::string_view token);
  // The client side: maps the ps's region /proc/<pid>/fd/<fd> of `bytes`
  // and checks that its header names `token`. FAILED_PRECONDITION when the
  // file cannot be opened (another PID namespace, another user) or is not
  // that region.
  static absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> attach(int64_t pid, int fd,
                                                                    size_t bytes,
                                                                    std::string_view token);

  [[nodiscard]] uint8_t* data() const { return data_; }
  [[nodiscard]] size_t size() const { return size_; }
  // The memfd, open in this process (the ps's is what clients open).
  [[nodiscard]] int fd() const { return fd_; }
  // Whether [offset, offset + length) lies in the payload part of the region.
  [[nodiscard]] bool contains(uint64_t offset, uint64_t length) const {
    return offset >= kHeaderBytes && offset <= size_ && length <= size_ - offset;
  }

 private:
  SharedMemoryRegion(int fd, uint8_t* data, size_t size) : fd_(fd), data_(data), size_(size) {}
  const int fd_;
  uint8_t* const data_;
  const size_t size_;
};

// This host's boot id (/proc/sys/kernel/random/boot_id): two processes with
// the same one run on the same kernel. Empty when it cannot be read.
[[nodiscard]] std::string host_boot_id();

// This process's PID namespace ("pid:[4026531836]"); empty when unknown.
[[nodiscard]] std::string pid_namespace();

// `n` random bytes from the kernel's generator (getrandom).
[[nodiscard]] std::string random_token(size_t n);

// Whether this process may use shared memory with ps tasks on its host:
// true unless PSFLOW_SHARED_MEMORY is "0", "off", "false" or "no" (read
// once). Both sides honour it: a ps with it off refuses sessions, a client
// with it off asks for none.
[[nodiscard]] bool shared_memory_enabled();

}  // namespace psflow::internal

#endif  // PSFLOW_RPC_SHARED_MEMORY_REGION_H_

// Helpers shared by the harnesses (fuzz/*_fuzz.cc).
#ifndef PSFLOW_FUZZ_FUZZ_INPUT_H_
#define PSFLOW_FUZZ_FUZZ_INPUT_H_

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "google/protobuf/stubs/logging.h"

namespace psflow::fuzz {

// Protobuf's parsers log every invalid UTF-8 string they refuse; under a
// fuzzer that is most inputs. Harnesses that parse protobuf call this from
// LLVMFuzzerInitialize.
inline void silence_protobuf_logs() {
  google::protobuf::SetLogHandler(
      [](google::protobuf::LogLevel, const char*, int, const std::string&) {});
}

// The input as bytes.
inline std::string_view as_bytes(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits off the input's first byte, which harnesses use to pick a decoder
// or options, so that one corpus covers them all.
inline uint8_t take_selector(std::string_view* bytes) {
  if (bytes->empty()) return 0;
  const auto selector = static_cast<uint8_t>(bytes->front());
  bytes->remove_prefix(1);
  return selector;
}

// A file holding `bytes`, for readers that take a path: an anonymous
// in-memory file (memfd), named through /proc/self/fd, so that a run
// writes nothing to disk. Closed (and gone) with the object.
// Thread-safety: not thread-safe; one per input.
class MemoryFile {
 public:
  explicit MemoryFile(std::string_view bytes) : fd_(memfd_create("psflow-fuzz", 0)) {
    if (fd_ < 0) std::abort();
    size_t written = 0;
    while (written < bytes.size()) {
      const ssize_t n = write(fd_, bytes.data() + written, bytes.size() - written);
      if (n <= 0) std::abort();
      written += static_cast<size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemoryFile() { close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  int fd_;
  std::string path_;
};

// Fails the run (libFuzzer reports the input) when an invariant does not
// hold: a decoder that accepted its input must accept its own re-encoding.
inline void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace psflow::fuzz

#endif  // PSFLOW_FUZZ_FUZZ_INPUT_H_

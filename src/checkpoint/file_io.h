// Files of a checkpoint: bounded reads, writes that appear only when
// complete (temp name, fsync, rename), and CRC32 checksums.
#ifndef PSFLOW_CHECKPOINT_FILE_IO_H_
#define PSFLOW_CHECKPOINT_FILE_IO_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/errno_status.h"

namespace psflow::internal::checkpoint {

// Size and zlib CRC32 of a file's bytes.
// Thread-safety: a value type.
struct FileDigest {
  uint64_t size = 0;
  uint32_t crc32 = 0;
  friend bool operator==(const FileDigest&, const FileDigest&) = default;
};

// CRC32 (zlib's) of `bytes`, continuing from `crc` (0 to start).
[[nodiscard]] uint32_t crc32_of(std::string_view bytes, uint32_t crc = 0);

// The whole file. NOT_FOUND when it does not exist; INVALID_ARGUMENT
// naming the file when it is larger than `max_bytes`; other I/O errors as
// the errno says (naming the file). Thread-safe (no shared state), as are
// the other free functions here.
[[nodiscard]] absl::StatusOr<std::string> read_file(const std::string& path, uint64_t max_bytes);

// Writes a file that becomes visible at `path` only when complete: bytes
// go to "<path>.tmp", which commit() fsyncs and renames over `path`. A
// writer destroyed without commit() removes its temp file.
// Thread-safety: not thread-safe (one writer per file).
class AtomicFileWriter {
 public:
  // Creates (truncates) "<path>.tmp".
  [[nodiscard]] static absl::StatusOr<AtomicFileWriter> open(std::string path);
  AtomicFileWriter(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter& operator=(AtomicFileWriter&&) = delete;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();

  [[nodiscard]] absl::Status append(const void* data, size_t size);
  [[nodiscard]] absl::Status append(std::string_view bytes) {
    return append(bytes.data(), bytes.size());
  }
  // fsync, close, rename; returns what was written.
  [[nodiscard]] absl::StatusOr<FileDigest> commit();

 private:
  AtomicFileWriter(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_ = -1;
  FileDigest digest_;
};

// Writes `bytes` to `path` through an AtomicFileWriter.
[[nodiscard]] absl::StatusOr<FileDigest> write_file_atomically(const std::string& path,
                                                               std::string_view bytes);

// fsyncs a directory, so that the renames and creations in it are durable.
[[nodiscard]] absl::Status sync_directory(const std::string& path);

// An errno as a Status naming `what` (e.g. "cannot write /x/y").
using ::psflow::internal::errno_status;
// The same for a std::filesystem error code.
[[nodiscard]] absl::Status fs_error(const std::error_code& ec, std::string_view what);

// A suffix for temporary names that no other save (in this or another
// process) uses: "<pid>-<counter>-<nanoseconds>".
[[nodiscard]] std::string unique_suffix();

}  // namespace psflow::internal::checkpoint

#endif  // PSFLOW_CHECKPOINT_FILE_IO_H_

// TensorBoard event files: scalar summaries written as TFRecords of
// tensorflow.Event messages, readable by TensorBoard and tf.data's
// TFRecordDataset (internal).
#ifndef PSFLOW_TRAIN_EVENT_WRITER_H_
#define PSFLOW_TRAIN_EVENT_WRITER_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace psflow::internal {

// CRC-32C (Castagnoli), as TFRecord framing uses. Hand-written (a 256-entry
// table): Debian 12 packages no CRC-32C library and its abseil predates
// absl/crc.
[[nodiscard]] uint32_t crc32c(std::string_view data);
// TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
[[nodiscard]] uint32_t masked_crc32c(std::string_view data);

// Appends one TFRecord (length, masked CRC of the length, data, masked CRC
// of the data) to `out`.
void append_tfrecord(std::string_view data, std::string* out);
// Splits a TFRecord file's content into its records, checking both CRCs;
// INVALID_ARGUMENT naming the record index on a bad frame.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> parse_tfrecords(std::string_view content);

// Writes <dir>/events.out.tfevents.<seconds>.<host>, starting with the
// file_version record TensorBoard expects; each add_scalar is flushed so
// that a TensorBoard watching the run directory sees progress as it comes.
// Thread-safety: not thread-safe; use from one thread.
class EventWriter {
 public:
  // Creates `dir` if needed.
  [[nodiscard]] static absl::StatusOr<EventWriter> create(const std::string& dir);
  EventWriter(EventWriter&& other) noexcept;
  EventWriter& operator=(EventWriter&& other) noexcept;
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;
  ~EventWriter();

  [[nodiscard]] absl::Status add_scalar(std::string_view tag, double value, int64_t step);
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  EventWriter(std::FILE* file, std::string path) : file_(file), path_(std::move(path)) {}
  absl::Status write_record(const std::string& event);

  std::FILE* file_ = nullptr;
  std::string path_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_EVENT_WRITER_H_

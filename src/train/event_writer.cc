#include "train/event_writer.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tensorboard/event.pb.h"

namespace psflow::internal {
namespace {

std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    table[i] = crc;
  }
  return table;
}

void put_le(uint64_t value, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t get_le(std::string_view data, size_t at, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) {
    value |= uint64_t{static_cast<unsigned char>(data[at + i])} << (8 * i);
  }
  return value;
}

}  // namespace

uint32_t crc32c(std::string_view data) {
  static const std::array<uint32_t, 256> table = make_table();
  uint32_t crc = 0xffffffffu;
  for (char c : data) crc = table[(crc ^ static_cast<unsigned char>(c)) & 0xff] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

uint32_t masked_crc32c(std::string_view data) {
  const uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

void append_tfrecord(std::string_view data, std::string* out) {
  std::string length;
  put_le(data.size(), 8, &length);
  out->append(length);
  put_le(masked_crc32c(length), 4, out);
  out->append(data);
  put_le(masked_crc32c(data), 4, out);
}

absl::StatusOr<std::vector<std::string>> parse_tfrecords(std::string_view content) {
  std::vector<std::string> records;
  size_t at = 0;
  while (at < content.size()) {
    const size_t index = records.size();
    if (content.size() - at < 12) {
      return absl::InvalidArgumentError(absl::StrCat("record ", index, ": truncated header"));
    }
    const uint64_t length = get_le(content, at, 8);
    if (get_le(content, at + 8, 4) != masked_crc32c(content.substr(at, 8))) {
      return absl::InvalidArgumentError(absl::StrCat("record ", index, ": bad length CRC"));
    }
    at += 12;
    if (length > content.size() - at || content.size() - at - length < 4) {
      return absl::InvalidArgumentError(absl::StrCat("record ", index, ": truncated data"));
    }
    std::string_view data = content.substr(at, length);
    if (get_le(content, at + length, 4) != masked_crc32c(data)) {
      return absl::InvalidArgumentError(absl::StrCat("record ", index, ": bad data CRC"));
    }
    records.emplace_back(data);
    at += length + 4;
  }
  return records;
}

absl::StatusOr<EventWriter> EventWriter::create(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create the event directory '", dir, "': ", ec.message()));
  }
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "localhost");
  const double now = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  const std::string path =
      absl::StrCat(dir, "/events.out.tfevents.", static_cast<int64_t>(now), ".", host);
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot write '", path, "': ", std::strerror(errno)));
  }
  EventWriter writer(file, path);
  tensorboard::Event version;
  version.set_wall_time(now);
  version.set_file_version("brain.Event:2");
  absl::Status status = writer.write_record(version.SerializeAsString());
  if (!status.ok()) return status;
  return writer;
}

EventWriter::EventWriter(EventWriter&& other) noexcept
    : file_(std::exchange(other.file_, nullptr)), path_(std::move(other.path_)) {}

EventWriter& EventWriter::operator=(EventWriter&& other) noexcept {
  if (this != &other) {
    if (file_ != nullptr) std::fclose(file_);
    file_ = std::exchange(other.file_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

EventWriter::~EventWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

absl::Status EventWriter::add_scalar(std::string_view tag, double value, int64_t step) {
  tensorboard::Event event;
  event.set_wall_time(absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
  event.set_step(step);
  tensorboard::SummaryValue* v = event.mutable_summary()->add_value();
  v->set_tag(std::string(tag));
  v->set_simple_value(static_cast<float>(value));
  return write_record(event.SerializeAsString());
}

absl::Status EventWriter::write_record(const std::string& event) {
  std::string record;
  append_tfrecord(event, &record);
  if (file_ == nullptr || std::fwrite(record.data(), 1, record.size(), file_) != record.size() ||
      std::fflush(file_) != 0) {
    return absl::InternalError(
        absl::StrCat("cannot write to '", path_, "': ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace psflow::internal

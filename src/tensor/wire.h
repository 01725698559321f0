// Protobuf wire-format reading and writing for the codec (internal).
//
// The codec writes TensorProto/StructureProto bytes itself so that tensor
// payloads move with a single memcpy; these helpers keep the varint, tag and
// bounds rules in one place.
#ifndef PSFLOW_TENSOR_WIRE_H_
#define PSFLOW_TENSOR_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "google/protobuf/io/coded_stream.h"

namespace psflow::internal {

enum class WireType : uint8_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

[[nodiscard]] std::string_view wire_type_name(WireType type);

// As the generated parsers: tags and length prefixes take at most 5 bytes,
// other varints 10, and unknown groups nest at most 100 deep.
inline constexpr int kMaxTagBytes = 5;
inline constexpr int kMaxVarintBytes = 10;
inline constexpr size_t kMaxGroupDepth = 100;

// Reads a varint from `in`; false when truncated or longer than
// `max_bytes`. Inline: the stream readers call it for every packed element.
[[nodiscard]] inline bool read_varint(google::protobuf::io::CodedInputStream& in, uint64_t* value,
                                      int max_bytes) {
  const int start = in.CurrentPosition();
  return in.ReadVarint64(value) && in.CurrentPosition() - start <= max_bytes;
}

// The value of an enum or int32 field: they are int32 on the wire, and
// longer varints are truncated.
[[nodiscard]] inline int32_t int32_value(uint64_t varint) {
  return static_cast<int32_t>(static_cast<uint32_t>(varint));
}

// How skip_group ended: `error` is empty once the group's end tag was read;
// otherwise it says what was wrong with the field that starts at byte
// `offset` of `in`.
// Thread-safety: a value type.
struct GroupSkip {
  std::string_view error;
  int offset = 0;
  [[nodiscard]] bool ok() const { return error.empty(); }
};

// Skips the rest of group `number`, whose start tag was just read from
// `in`, through its end tag, without reading past `in`'s current limit.
// Iterative, so hostile nesting cannot exhaust the stack. A field inside
// the group that is malformed or truncated ends it with
// `malformed_field` (the caller's wording).
[[nodiscard]] GroupSkip skip_group(google::protobuf::io::CodedInputStream& in, uint32_t number,
                                   std::string_view malformed_field);

// One field as read from the wire; which member holds the value depends on
// `wire_type` (`varint` also holds fixed32/fixed64 values).
struct WireField {
  uint32_t number = 0;
  WireType wire_type = WireType::kVarint;
  uint64_t varint = 0;
  std::string_view bytes;  // kLengthDelimited: a view into the input.
};

// Reads the fields of one serialized message in order, validating tags,
// lengths and bounds; unknown groups are skipped whole. Views returned in
// WireField::bytes point into the input, which must outlive them.
// Thread-safety: not thread-safe (a cursor); use one per thread.
class WireReader {
 public:
  // `message` names the message type in error messages.
  WireReader(std::string_view bytes, std::string_view message);
  WireReader(const WireReader&) = delete;
  WireReader& operator=(const WireReader&) = delete;

  [[nodiscard]] bool at_end() const;
  // INVALID_ARGUMENT on a malformed or truncated field.
  [[nodiscard]] absl::Status next(WireField* field);
  // INVALID_ARGUMENT naming the field whose wire type is not `expected`.
  [[nodiscard]] absl::Status wrong_type(const WireField& field, std::string_view field_name,
                                        WireType expected) const;
  // OK when `field` has wire type `expected`; wrong_type otherwise.
  [[nodiscard]] absl::Status expect(const WireField& field, std::string_view field_name,
                                    WireType expected) const {
    if (field.wire_type == expected) return absl::OkStatus();
    return wrong_type(field, field_name, expected);
  }

 private:
  absl::Status malformed(int offset, std::string_view what) const;
  bool read_varint(uint64_t* value, int max_bytes);
  absl::Status skip_group(uint32_t number);

  std::string_view bytes_;
  std::string_view message_;
  google::protobuf::io::CodedInputStream in_;
};

// Parses a packed run of varints (a `repeated int64` field's payload);
// calls `sink(value)` for each; INVALID_ARGUMENT when malformed.
template <typename Sink>
[[nodiscard]] absl::Status read_packed_varints(std::string_view bytes, std::string_view what,
                                               Sink&& sink);

// Appends the varint encoding of `value`.
void put_varint(std::string* out, uint64_t value);
void put_tag(std::string* out, uint32_t number, WireType type);
void put_fixed64(std::string* out, uint64_t value);
[[nodiscard]] size_t varint_size(uint64_t value);
// Bytes of a tag plus a length prefix plus `payload` bytes.
[[nodiscard]] size_t length_delimited_size(uint32_t number, size_t payload);
[[nodiscard]] size_t tag_size(uint32_t number);

// --- implementation details -------------------------------------------

template <typename Sink>
absl::Status read_packed_varints(std::string_view bytes, std::string_view what, Sink&& sink) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  while (static_cast<size_t>(in.CurrentPosition()) < bytes.size()) {
    uint64_t value = 0;
    if (!in.ReadVarint64(&value)) {
      return absl::InvalidArgumentError(std::string("malformed packed varints in ").append(what));
    }
    absl::Status st = sink(value);
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace psflow::internal

#endif  // PSFLOW_TENSOR_WIRE_H_

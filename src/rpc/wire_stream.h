// Streaming protobuf field reader over a CodedInputStream, for messages
// that arrive as many gRPC slices rather than one contiguous string.
#ifndef PSFLOW_RPC_WIRE_STREAM_H_
#define PSFLOW_RPC_WIRE_STREAM_H_

#include <google/protobuf/io/coded_stream.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "psflow/status_macros.h"
#include "tensor/wire.h"

namespace psflow::internal {

// Reads the fields of one message in order. Varint and fixed-width values
// are read with the tag; a length-delimited field's payload stays in the
// stream for the caller to descend into (enter/leave), copy (read_bytes,
// read_raw) or skip. Unknown groups are skipped whole. Encodings the
// generated parsers reject (over-long tags and lengths, field number 0,
// unbalanced groups) are rejected too. Every length is
// checked against what the enclosing message has left before anything is
// allocated, so allocations are bounded by the input's size. Errors are
// INVALID_ARGUMENT "malformed <message>: ...".
// Thread-safety: not thread-safe (a cursor).
class WireStream {
 public:
  struct Field {
    uint32_t number = 0;
    internal::WireType wire_type = internal::WireType::kVarint;
    // Varint, fixed64 and fixed32 values.
    uint64_t value = 0;
    // Length-delimited: the payload's length, not yet consumed.
    uint32_t length = 0;
  };

  // `message` names the top-level message type in errors; `size` is its
  // length in bytes (the stream may hold nothing after it).
  WireStream(google::protobuf::io::CodedInputStream* in, size_t size, std::string_view message);

  // True when the current message (the top level, or the one entered last)
  // has no more fields.
  [[nodiscard]] bool at_end() const;
  // Reads the next field; call only when !at_end(). Sets field->number to
  // 0 when only unknown groups were left (they are skipped).
  [[nodiscard]] absl::Status next(Field* field);
  // Skips the payload of a length-delimited field; does nothing for other
  // wire types (their value was read with the tag).
  [[nodiscard]] absl::Status skip_unknown(const Field& field);

  // Reads one varint from inside an entered packed field.
  [[nodiscard]] absl::Status read_varint(uint64_t* value);
  // Reads a length-delimited payload.
  [[nodiscard]] absl::Status read_bytes(const Field& field, std::string* out);
  // expect(field, field_name, kLengthDelimited), then read_bytes.
  [[nodiscard]] absl::Status read_string(const Field& field, std::string_view field_name,
                                         std::string* out);
  [[nodiscard]] absl::Status read_raw(const Field& field, void* out);
  [[nodiscard]] absl::Status skip(const Field& field);
  // Reads every field of the nested message `message` (a length-delimited
  // field), calling `visit(field)` on each, which returns a Status; stops
  // at the first error.
  template <typename Visit>
  [[nodiscard]] absl::Status for_each_field(const Field& message, Visit&& visit) {
    const auto outer = enter(message);
    Field field;
    while (!at_end()) {
      PSFLOW_RETURN_IF_ERROR(next(&field));
      PSFLOW_RETURN_IF_ERROR(visit(field));
    }
    leave(outer);
    return absl::OkStatus();
  }
  // Parses a length-delimited payload as a nested message: fields until
  // at_end() belong to it; leave() returns to the enclosing message.
  [[nodiscard]] google::protobuf::io::CodedInputStream::Limit enter(const Field& field);
  void leave(google::protobuf::io::CodedInputStream::Limit limit);

  // INVALID_ARGUMENT naming a known field whose wire type is not `expected`.
  [[nodiscard]] absl::Status wrong_type(const Field& field, std::string_view field_name,
                                        internal::WireType expected) const;
  // OK when `field` has wire type `expected`; wrong_type otherwise.
  [[nodiscard]] absl::Status expect(const Field& field, std::string_view field_name,
                                    internal::WireType expected) const {
    if (field.wire_type == expected) return absl::OkStatus();
    return wrong_type(field, field_name, expected);
  }
  [[nodiscard]] absl::Status malformed(std::string_view what) const;

 private:
  bool read_varint(uint64_t* value, int max_bytes);
  absl::Status skip_group(uint32_t number);

  google::protobuf::io::CodedInputStream* in_;
  const size_t size_;
  const std::string_view message_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_RPC_WIRE_STREAM_H_

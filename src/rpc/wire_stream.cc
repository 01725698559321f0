#include "rpc/wire_stream.h"

#include <algorithm>
#include <climits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/status_macros.h"

namespace psflow::internal {

using internal::WireType;

using internal::kMaxTagBytes;
using internal::kMaxVarintBytes;

WireStream::WireStream(google::protobuf::io::CodedInputStream* in, size_t size,
                       std::string_view message)
    : in_(in), size_(size), message_(message) {
  in_->PushLimit(static_cast<int>(std::min<size_t>(size, INT_MAX)));
}

bool WireStream::at_end() const { return in_->BytesUntilLimit() <= 0; }

absl::Status WireStream::malformed(std::string_view what) const {
  return absl::InvalidArgumentError(absl::StrCat("malformed ", av(message_), ": ", av(what),
                                                 " at byte ", in_->CurrentPosition(), " of ",
                                                 size_));
}

absl::Status WireStream::wrong_type(const Field& field, std::string_view field_name,
                                    WireType expected) const {
  return absl::InvalidArgumentError(
      absl::StrCat("malformed ", av(message_), ": field ", field.number, " (", av(field_name),
                   ") is ", av(internal::wire_type_name(field.wire_type)), ", expected ",
                   av(internal::wire_type_name(expected))));
}

bool WireStream::read_varint(uint64_t* value, int max_bytes) {
  return internal::read_varint(*in_, value, max_bytes);
}

absl::Status WireStream::next(Field* field) {
  for (;;) {
    uint64_t tag = 0;
    // The generated parsers reject tags longer than 5 bytes or above 2^32,
    // which CodedInputStream::ReadTag would accept truncated.
    if (!read_varint(&tag, kMaxTagBytes) || tag > UINT32_MAX) {
      return malformed("invalid or truncated tag");
    }
    *field = Field();
    field->number = static_cast<uint32_t>(tag >> 3);
    const auto type = static_cast<uint32_t>(tag & 7);
    if (field->number == 0) return malformed("field number 0");
    switch (type) {
      case static_cast<uint32_t>(WireType::kVarint):
        field->wire_type = WireType::kVarint;
        if (!read_varint(&field->value, kMaxVarintBytes)) return malformed("truncated varint");
        return absl::OkStatus();
      case static_cast<uint32_t>(WireType::kFixed64):
        field->wire_type = WireType::kFixed64;
        if (!in_->ReadLittleEndian64(&field->value)) return malformed("truncated fixed64");
        return absl::OkStatus();
      case static_cast<uint32_t>(WireType::kFixed32): {
        field->wire_type = WireType::kFixed32;
        uint32_t v = 0;
        if (!in_->ReadLittleEndian32(&v)) return malformed("truncated fixed32");
        field->value = v;
        return absl::OkStatus();
      }
      case static_cast<uint32_t>(WireType::kLengthDelimited): {
        field->wire_type = WireType::kLengthDelimited;
        uint64_t length = 0;
        if (!read_varint(&length, kMaxTagBytes)) return malformed("invalid or truncated length");
        if (length > static_cast<uint64_t>(std::max(in_->BytesUntilLimit(), 0))) {
          return malformed(absl::StrCat("length ", length, " of field ", field->number,
                                        " runs past the end of its message"));
        }
        field->length = static_cast<uint32_t>(length);
        return absl::OkStatus();
      }
      case static_cast<uint32_t>(WireType::kStartGroup):
        // Unknown (no psflow message has groups): skip it whole.
        PSFLOW_RETURN_IF_ERROR(skip_group(field->number));
        if (at_end()) {
          *field = Field();  // number 0: nothing more in this message
          return absl::OkStatus();
        }
        continue;
      case static_cast<uint32_t>(WireType::kEndGroup): return malformed("unmatched end-group tag");
      default: return malformed(absl::StrCat("invalid wire type ", type));
    }
  }
}

absl::Status WireStream::skip_group(uint32_t number) {
  const internal::GroupSkip skip =
      internal::skip_group(*in_, number, "malformed or truncated group");
  return skip.ok() ? absl::OkStatus() : malformed(skip.error);
}

absl::Status WireStream::read_varint(uint64_t* value) {
  if (!read_varint(value, kMaxVarintBytes)) return malformed("truncated packed varint");
  return absl::OkStatus();
}

absl::Status WireStream::read_bytes(const Field& field, std::string* out) {
  if (!in_->ReadString(out, static_cast<int>(field.length))) {
    return malformed("truncated bytes");
  }
  return absl::OkStatus();
}

absl::Status WireStream::read_string(const Field& field, std::string_view field_name,
                                     std::string* out) {
  PSFLOW_RETURN_IF_ERROR(expect(field, field_name, WireType::kLengthDelimited));
  return read_bytes(field, out);
}

absl::Status WireStream::read_raw(const Field& field, void* out) {
  if (!in_->ReadRaw(out, static_cast<int>(field.length))) {
    return malformed("truncated bytes");
  }
  return absl::OkStatus();
}

absl::Status WireStream::skip(const Field& field) {
  if (!in_->Skip(static_cast<int>(field.length))) return malformed("truncated bytes");
  return absl::OkStatus();
}

absl::Status WireStream::skip_unknown(const Field& field) {
  if (field.wire_type != WireType::kLengthDelimited) return absl::OkStatus();
  return skip(field);
}

google::protobuf::io::CodedInputStream::Limit WireStream::enter(const Field& field) {
  return in_->PushLimit(static_cast<int>(field.length));
}

void WireStream::leave(google::protobuf::io::CodedInputStream::Limit limit) {
  in_->PopLimit(limit);
}

}  // namespace psflow::internal

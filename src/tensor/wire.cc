#include "tensor/wire.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/strings.h"

namespace psflow::internal {
namespace {

using google::protobuf::io::CodedOutputStream;

}  // namespace

std::string_view wire_type_name(WireType type) {
  switch (type) {
    case WireType::kVarint: return "varint";
    case WireType::kFixed64: return "fixed64";
    case WireType::kLengthDelimited: return "length-delimited";
    case WireType::kStartGroup: return "start-group";
    case WireType::kEndGroup: return "end-group";
    case WireType::kFixed32: return "fixed32";
  }
  return "invalid";
}

GroupSkip skip_group(google::protobuf::io::CodedInputStream& in, uint32_t number,
                     std::string_view malformed_field) {
  std::vector<uint32_t> open = {number};
  while (!open.empty()) {
    const int start = in.CurrentPosition();
    if (open.size() > kMaxGroupDepth) return {"groups nested too deeply", start};
    if (in.BytesUntilLimit() <= 0) return {"unterminated group", start};
    uint64_t tag = 0;
    if (!read_varint(in, &tag, kMaxTagBytes) || tag > UINT32_MAX || (tag >> 3) == 0) {
      return {"invalid tag inside a group", start};
    }
    const auto inner = static_cast<uint32_t>(tag >> 3);
    uint64_t scratch = 0;
    bool ok = true;
    switch (tag & 7) {
      case 0: ok = read_varint(in, &scratch, kMaxVarintBytes); break;
      case 1: ok = in.Skip(8); break;
      case 2:
        ok = read_varint(in, &scratch, kMaxTagBytes) &&
             scratch <= static_cast<uint64_t>(std::max(in.BytesUntilLimit(), 0)) &&
             in.Skip(static_cast<int>(scratch));
        break;
      case 3: open.push_back(inner); break;
      case 4:
        ok = inner == open.back();
        open.pop_back();
        break;
      case 5: ok = in.Skip(4); break;
      default: ok = false; break;
    }
    if (!ok) return {malformed_field, start};
  }
  return {};
}

WireReader::WireReader(std::string_view bytes, std::string_view message)
    : bytes_(bytes),
      message_(message),
      in_(reinterpret_cast<const uint8_t*>(bytes.data()), static_cast<int>(bytes.size())) {}

bool WireReader::at_end() const {
  return static_cast<size_t>(in_.CurrentPosition()) >= bytes_.size();
}

absl::Status WireReader::malformed(int offset, std::string_view what) const {
  return absl::InvalidArgumentError(absl::StrCat("malformed ", av(message_), ": ", av(what),
                                                 " at byte ", offset, " of ", bytes_.size()));
}

bool WireReader::read_varint(uint64_t* value, int max_bytes) {
  return internal::read_varint(in_, value, max_bytes);
}

absl::Status WireReader::next(WireField* field) {
  const int start = in_.CurrentPosition();
  uint64_t tag = 0;
  if (!read_varint(&tag, kMaxTagBytes) || tag > UINT32_MAX) {
    return malformed(start, "invalid or truncated tag");
  }
  field->number = static_cast<uint32_t>(tag >> 3);
  const auto type = static_cast<uint32_t>(tag & 7);
  if (field->number == 0) return malformed(start, "field number 0");
  if (type > static_cast<uint32_t>(WireType::kFixed32)) {
    return malformed(start, absl::StrCat("invalid wire type ", type));
  }
  field->wire_type = static_cast<WireType>(type);
  field->bytes = {};
  field->varint = 0;
  switch (field->wire_type) {
    case WireType::kVarint:
      if (!read_varint(&field->varint, kMaxVarintBytes)) {
        return malformed(start, "truncated varint");
      }
      return absl::OkStatus();
    case WireType::kFixed64:
      if (!in_.ReadLittleEndian64(&field->varint)) {
        return malformed(start, "truncated fixed64");
      }
      return absl::OkStatus();
    case WireType::kFixed32: {
      uint32_t v = 0;
      if (!in_.ReadLittleEndian32(&v)) {
        return malformed(start, "truncated fixed32");
      }
      field->varint = v;
      return absl::OkStatus();
    }
    case WireType::kLengthDelimited: {
      uint64_t length = 0;
      if (!read_varint(&length, kMaxTagBytes)) {
        return malformed(start, "invalid or truncated length");
      }
      const auto pos = static_cast<size_t>(in_.CurrentPosition());
      if (length > bytes_.size() - pos) {
        return malformed(start, absl::StrCat("field ", field->number, " claims ", length,
                                             " bytes but only ", bytes_.size() - pos, " remain"));
      }
      field->bytes = bytes_.substr(pos, static_cast<size_t>(length));
      (void)in_.Skip(static_cast<int>(length));
      return absl::OkStatus();
    }
    case WireType::kStartGroup: return skip_group(field->number);
    case WireType::kEndGroup: return malformed(start, "unexpected end-group tag");
  }
  return malformed(start, "invalid wire type");
}

absl::Status WireReader::skip_group(uint32_t number) {
  const GroupSkip skip = internal::skip_group(in_, number, "malformed field inside a group");
  return skip.ok() ? absl::OkStatus() : malformed(skip.offset, skip.error);
}

absl::Status WireReader::wrong_type(const WireField& field, std::string_view field_name,
                                    WireType expected) const {
  return absl::InvalidArgumentError(
      absl::StrCat("malformed ", av(message_), ": field ", field.number, " (", av(field_name),
                   ") has wire type ", av(wire_type_name(field.wire_type)), ", expected ",
                   av(wire_type_name(expected))));
}

void put_varint(std::string* out, uint64_t value) {
  uint8_t buf[kMaxVarintBytes];
  const uint8_t* end = CodedOutputStream::WriteVarint64ToArray(value, buf);
  out->append(reinterpret_cast<const char*>(buf), static_cast<size_t>(end - buf));
}

void put_tag(std::string* out, uint32_t number, WireType type) {
  put_varint(out, (static_cast<uint64_t>(number) << 3) | static_cast<uint64_t>(type));
}

void put_fixed64(std::string* out, uint64_t value) {
  uint8_t buf[8];
  CodedOutputStream::WriteLittleEndian64ToArray(value, buf);
  out->append(reinterpret_cast<const char*>(buf), sizeof(buf));
}

size_t varint_size(uint64_t value) { return CodedOutputStream::VarintSize64(value); }

size_t tag_size(uint32_t number) { return varint_size(static_cast<uint64_t>(number) << 3); }

size_t length_delimited_size(uint32_t number, size_t payload) {
  return tag_size(number) + varint_size(payload) + payload;
}

}  // namespace psflow::internal

// Decoding half of the wire codec (see codec.h).
#include <algorithm>
#include <bit>
#include <climits>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "psflow/status_macros.h"
#include "tensor/bfloat16.h"
#include "tensor/codec.h"
#include "tensor/codec_internal.h"
#include "tensor/format.h"
#include "tensor/tensor_internal.h"
#include "tensor/wire.h"

static_assert(std::endian::native == std::endian::little,
              "the psflow codec assumes a little-endian host");

namespace psflow::internal {
namespace {

using internal::DecodePath;
using internal::Segments;
using internal::WireField;
using internal::WireReader;
using internal::WireType;
using namespace internal::fields;  // NOLINT: the proto's field numbers

absl::Status check_message_size(size_t size, const CodecLimits& limits) {
  if (size > limits.max_message_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "message is ", size, " bytes, more than max_message_bytes ", limits.max_message_bytes));
  }
  if (size > static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrCat("message is ", size, " bytes, more than protobuf's limit of ", INT_MAX));
  }
  return absl::OkStatus();
}

// Appends to `views` the payload of every occurrence of the repeated
// message field `number` (`name` in errors) of a `message` that arrived as
// `segments`; other fields are read (so that malformed ones are rejected)
// and skipped.
absl::Status collect_repeated(const Segments& segments, std::string_view message, uint32_t number,
                              std::string_view name, Segments* views) {
  for (const std::string_view segment : segments) {
    WireReader reader(segment, message);
    WireField field;
    while (!reader.at_end()) {
      PSFLOW_RETURN_IF_ERROR(reader.next(&field));
      if (field.number != number) continue;
      PSFLOW_RETURN_IF_ERROR(reader.expect(field, name, WireType::kLengthDelimited));
      views->push_back(field.bytes);
    }
  }
  return absl::OkStatus();
}

// Reads every field of a message that has no known fields (NoneValue), so
// that malformed bytes inside are rejected as the generated parser would.
absl::Status check_empty_message(const Segments& segments) {
  for (const std::string_view segment : segments) {
    WireReader reader(segment, "NoneValue");
    WireField field;
    while (!reader.at_end()) PSFLOW_RETURN_IF_ERROR(reader.next(&field));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> decode_tensor_segments(const Segments& segments, const CodecLimits& limits,
                                              DecodeBudget& budget) {
  internal::TensorFields fields;
  size_t string_bytes = 0;
  std::string_view content;
  auto add_dim = [&](uint64_t d) { return internal::add_dim(d, limits, &fields); };
  for (const std::string_view segment : segments) {
    WireReader reader(segment, "TensorProto");
    WireField field;
    while (!reader.at_end()) {
      PSFLOW_RETURN_IF_ERROR(reader.next(&field));
      switch (field.number) {
        case kTensorDtype:
          PSFLOW_RETURN_IF_ERROR(reader.expect(field, "dtype", WireType::kVarint));
          fields.dtype = internal::int32_value(field.varint);
          break;
        case kTensorShape:
          if (field.wire_type == WireType::kVarint) {
            PSFLOW_RETURN_IF_ERROR(add_dim(field.varint));
          } else if (field.wire_type == WireType::kLengthDelimited) {
            PSFLOW_RETURN_IF_ERROR(
                internal::read_packed_varints(field.bytes, "TensorProto.shape", add_dim));
          } else {
            return reader.wrong_type(field, "shape", WireType::kLengthDelimited);
          }
          break;
        case kTensorContent:
          PSFLOW_RETURN_IF_ERROR(reader.expect(field, "content", WireType::kLengthDelimited));
          content = field.bytes;
          break;
        case kTensorStringVal:
          PSFLOW_RETURN_IF_ERROR(reader.expect(field, "string_val", WireType::kLengthDelimited));
          ++fields.string_count;
          string_bytes += DecodeBudget::string_bytes(field.bytes.size());
          break;
        default: break;  // Unknown field, already skipped.
      }
    }
  }
  fields.content_bytes = content.size();
  PSFLOW_ASSIGN_OR_RETURN(const int64_t n, internal::validate_tensor_fields(fields, limits));
  const DType dtype = internal::decoded_dtype(fields.dtype);
  const bool bfloat16 = fields.dtype == internal::kWireBFloat16;
  const size_t decoded_bytes = bfloat16 ? 2 * content.size() : content.size();
  PSFLOW_RETURN_IF_ERROR(budget.charge(DecodeBudget::kTensorBytes +
                                       (dtype == DType::kString ? string_bytes : decoded_bytes)));
  if (dtype == DType::kString) {
    std::vector<std::string> strings;
    strings.reserve(static_cast<size_t>(n));
    for (const std::string_view segment : segments) {
      WireReader reader(segment, "TensorProto");
      WireField field;
      while (!reader.at_end()) {
        PSFLOW_RETURN_IF_ERROR(reader.next(&field));
        if (field.number == kTensorStringVal) strings.emplace_back(field.bytes);
      }
    }
    return Tensor::from_strings(std::move(strings), {n}).reshape(std::move(fields.shape));
  }
  if (dtype == DType::kBool) {
    PSFLOW_RETURN_IF_ERROR(internal::validate_bool_content(content));
  }
  std::shared_ptr<TensorBuffer> buffer =
      internal::allocate_buffer(decoded_bytes, /*zero_fill=*/false);
  // The one copy of the payload (widened on the way for bfloat16).
  if (bfloat16) {
    internal::widen_from_bfloat16(content.data(), static_cast<size_t>(n),
                                  reinterpret_cast<float*>(buffer->data()));
  } else if (!content.empty()) {
    std::memcpy(buffer->data(), content.data(), content.size());
  }
  return Tensor::from_buffer(dtype, std::move(fields.shape), std::move(buffer));
}

// Decodes StructureProtos depth-first, remembering where it is. On error the
// path is left pointing at the failing node, for the message.
// Thread-safety: not thread-safe; one per decode call.
class StructureDecoder {
 public:
  StructureDecoder(const CodecLimits& limits, size_t wire_bytes)
      : limits_(limits), budget_(wire_bytes, limits) {}

  absl::StatusOr<Structure> decode_root(std::string_view bytes) {
    PSFLOW_RETURN_IF_ERROR(budget_.charge(DecodeBudget::kNodeBytes));
    absl::StatusOr<Structure> result = decode(Segments{bytes}, 0);
    if (!result.ok()) return path_.annotate(result.status());
    return result;
  }

 private:
  // `level` is how many containers enclose this node.
  absl::StatusOr<Structure> decode(const Segments& segments, int level) {
    uint32_t kind = 0;
    Segments message;  // Pieces of the oneof's message member, if any.
    uint64_t scalar = 0;
    std::string_view bytes;
    for (const std::string_view segment : segments) {
      WireReader reader(segment, "StructureProto");
      WireField field;
      while (!reader.at_end()) {
        PSFLOW_RETURN_IF_ERROR(reader.next(&field));
        WireType expected = WireType::kLengthDelimited;
        std::string_view name = "kind";
        switch (field.number) {
          case kStructNone:
          case kStructTensor:
          case kStructTuple:
          case kStructList:
          case kStructDict:
          case kStructString: break;
          case kStructInt:
          case kStructBool: expected = WireType::kVarint; break;
          case kStructFloat:
            expected = WireType::kFixed64;
            name = "float_value";
            break;
          default: continue;  // Unknown field, already skipped.
        }
        PSFLOW_RETURN_IF_ERROR(reader.expect(field, name, expected));
        if (kind != field.number && !message.empty()) {
          // Setting another oneof member discards this one, but protobuf
          // parses it first; reject what it would reject.
          PSFLOW_RETURN_IF_ERROR(member(kind, message, 0, {}, level).status());
          message.clear();
        }
        kind = field.number;
        if (expected == WireType::kLengthDelimited && kind != kStructString) {
          message.push_back(field.bytes);  // A repeat merges.
        } else {
          scalar = field.varint;
          bytes = field.bytes;
        }
      }
    }
    return member(kind, message, scalar, bytes, level);
  }

  // The value of oneof member `kind`, from its message pieces or scalar.
  absl::StatusOr<Structure> member(uint32_t kind, const Segments& message, uint64_t scalar,
                                   std::string_view bytes, int level) {
    switch (kind) {
      case kStructNone:
        PSFLOW_RETURN_IF_ERROR(check_empty_message(message));
        return Structure::none();
      case kStructTensor: {
        PSFLOW_ASSIGN_OR_RETURN(Tensor t, decode_tensor_segments(message, limits_, budget_));
        return Structure(std::move(t));
      }
      case kStructInt: return Structure(static_cast<int64_t>(scalar));
      case kStructFloat: return Structure(std::bit_cast<double>(scalar));
      case kStructBool: return Structure(scalar != 0);
      case kStructString:
        PSFLOW_RETURN_IF_ERROR(budget_.charge(DecodeBudget::string_bytes(bytes.size())));
        return Structure(std::string(bytes));
      case kStructTuple:
      case kStructList: {
        if (level >= limits_.max_depth) return internal::depth_error(limits_);
        PSFLOW_ASSIGN_OR_RETURN(Structure::Items items, decode_items(message, level));
        return kind == kStructTuple ? Structure::tuple(std::move(items))
                                    : Structure::list(std::move(items));
      }
      case kStructDict:
        if (level >= limits_.max_depth) return internal::depth_error(limits_);
        return decode_dict(message, level);
      default:
        return absl::InvalidArgumentError(
            "StructureProto has no kind set (an empty message, or a kind "
            "newer than this decoder)");
    }
  }

  absl::StatusOr<Structure::Items> decode_items(const Segments& segments, int level) {
    Segments views;
    PSFLOW_RETURN_IF_ERROR(
        collect_repeated(segments, "StructureList", kListItems, "items", &views));
    // The elements are charged before the vector that holds them is made.
    PSFLOW_RETURN_IF_ERROR(budget_.charge(views.size() * DecodeBudget::kNodeBytes));
    Structure::Items items;
    items.reserve(views.size());
    for (size_t i = 0; i < views.size(); ++i) {
      path_.push_index(i);
      PSFLOW_ASSIGN_OR_RETURN(Structure item, decode(Segments{views[i]}, level + 1));
      items.push_back(std::move(item));
      path_.pop();
    }
    return items;
  }

  absl::StatusOr<Structure> decode_dict(const Segments& segments, int level) {
    Segments views;
    PSFLOW_RETURN_IF_ERROR(
        collect_repeated(segments, "StructureDict", kDictFields, "fields", &views));
    Structure::Fields fields;
    for (const std::string_view view : views) {
      std::string_view key;
      Segments value;
      WireReader reader(view, "StructureField");
      WireField field;
      while (!reader.at_end()) {
        PSFLOW_RETURN_IF_ERROR(reader.next(&field));
        if (field.number == kFieldKey) {
          PSFLOW_RETURN_IF_ERROR(reader.expect(field, "key", WireType::kLengthDelimited));
          // The generated parsers check every occurrence, not just the last.
          PSFLOW_RETURN_IF_ERROR(internal::validate_key(field.bytes));
          key = field.bytes;
        } else if (field.number == kFieldValue) {
          PSFLOW_RETURN_IF_ERROR(reader.expect(field, "value", WireType::kLengthDelimited));
          value.push_back(field.bytes);
        }
      }
      if (fields.find(key) != fields.end()) {
        std::string shown;
        internal::append_python_string(&shown, key);
        return absl::InvalidArgumentError(absl::StrCat("duplicate dict key ", shown));
      }
      PSFLOW_RETURN_IF_ERROR(budget_.charge(DecodeBudget::kDictEntryBytes +
                                            DecodeBudget::kNodeBytes +
                                            DecodeBudget::string_bytes(key.size())));
      path_.push_key(key);
      PSFLOW_ASSIGN_OR_RETURN(Structure item, decode(value, level + 1));
      fields.emplace(std::string(key), std::move(item));
      path_.pop();
    }
    return Structure::dict(std::move(fields));
  }

  const CodecLimits& limits_;
  DecodeBudget budget_;
  DecodePath path_;
};

}  // namespace

absl::StatusOr<Tensor> decode_tensor(std::string_view bytes, const CodecLimits& limits) {
  PSFLOW_RETURN_IF_ERROR(check_message_size(bytes.size(), limits));
  DecodeBudget budget(bytes.size(), limits);
  return decode_tensor_segments(Segments{bytes}, limits, budget);
}

absl::StatusOr<Structure> decode_structure(std::string_view bytes, const CodecLimits& limits) {
  PSFLOW_RETURN_IF_ERROR(check_message_size(bytes.size(), limits));
  return StructureDecoder(limits, bytes.size()).decode_root(bytes);
}

}  // namespace psflow::internal

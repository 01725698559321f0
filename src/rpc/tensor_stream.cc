#include "rpc/tensor_stream.h"

#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "psflow/status_macros.h"
#include "tensor/bfloat16.h"
#include "tensor/tensor_internal.h"
#include "tensor/wire.h"

static_assert(std::endian::native == std::endian::little,
              "tensor payloads are little-endian on the wire and sent as is");

namespace psflow::internal {

using internal::WireType;
using namespace internal::fields;  // NOLINT: the proto's field numbers

void write_tensor_proto(const Tensor& tensor, ByteBufferWriter& out) {
  write_tensor_proto(tensor, WireDType::kFloat32, out);
}

namespace {

size_t shape_payload_bytes(const Tensor& tensor) {
  size_t bytes = 0;
  for (const int64_t d : tensor.shape()) bytes += internal::varint_size(static_cast<uint64_t>(d));
  return bytes;
}

// TensorProto.dtype and .shape.
void write_dtype_and_shape(const Tensor& tensor, bool bfloat16, std::string* bytes) {
  internal::put_tag(bytes, kTensorDtype, WireType::kVarint);
  internal::put_varint(bytes, bfloat16 ? static_cast<uint64_t>(kWireBFloat16)
                                       : static_cast<uint64_t>(tensor.dtype()));
  if (tensor.rank() > 0) {
    internal::put_tag(bytes, kTensorShape, WireType::kLengthDelimited);
    internal::put_varint(bytes, shape_payload_bytes(tensor));
    for (const int64_t d : tensor.shape()) internal::put_varint(bytes, static_cast<uint64_t>(d));
  }
}

size_t shared_ref_size(uint64_t offset, uint64_t length) {
  return internal::tag_size(kSharedOffset) + internal::varint_size(offset) +
         internal::tag_size(kSharedLength) + internal::varint_size(length);
}

}  // namespace

void write_tensor_proto(const Tensor& tensor, WireDType wire, ByteBufferWriter& out) {
  const bool bfloat16 = sends_bfloat16(tensor, wire);
  std::string* bytes = out.bytes();
  write_dtype_and_shape(tensor, bfloat16, bytes);
  if (tensor.dtype() == DType::kString) {
    for (const std::string& s : tensor.flat<std::string>()) {
      internal::put_tag(bytes, kTensorStringVal, WireType::kLengthDelimited);
      internal::put_varint(bytes, s.size());
      bytes->append(s);
    }
  } else if (bfloat16 && tensor.byte_size() > 0) {
    const auto n = static_cast<size_t>(tensor.num_elements());
    internal::put_tag(bytes, kTensorContent, WireType::kLengthDelimited);
    internal::put_varint(bytes, 2 * n);
    // Narrowed straight into the framing bytes, which the writer hands to
    // gRPC without another copy.
    const size_t at = bytes->size();
    bytes->resize(at + 2 * n);
    narrow_to_bfloat16(tensor.flat<float>().data(), n, bytes->data() + at);
  } else if (tensor.byte_size() > 0) {
    internal::put_tag(bytes, kTensorContent, WireType::kLengthDelimited);
    internal::put_varint(bytes, tensor.byte_size());
    out.append_payload(tensor);
  }
}

int64_t SharedArena::reserve(uint64_t bytes) {
  const uint64_t at = (next_ + kAlignment - 1) / kAlignment * kAlignment;
  if (at > end_ || bytes > end_ - at) return -1;
  next_ = at + bytes;
  return static_cast<int64_t>(at);
}

size_t content_bytes(const Tensor& tensor, WireDType wire) {
  if (!tensor.valid() || tensor.dtype() == DType::kString) return 0;
  return sends_bfloat16(tensor, wire) ? 2 * static_cast<size_t>(tensor.num_elements())
                                      : tensor.byte_size();
}

bool shareable(const Tensor& tensor, WireDType wire) {
  return content_bytes(tensor, wire) >= SharedArena::kMinBytes;
}

size_t shared_tensor_proto_size(const Tensor& tensor, WireDType wire, uint64_t offset) {
  const bool bfloat16 = sends_bfloat16(tensor, wire);
  const uint64_t dtype =
      bfloat16 ? static_cast<uint64_t>(kWireBFloat16) : static_cast<uint64_t>(tensor.dtype());
  size_t size = internal::tag_size(kTensorDtype) + internal::varint_size(dtype);
  if (tensor.rank() > 0) {
    size += internal::length_delimited_size(kTensorShape, shape_payload_bytes(tensor));
  }
  return size + internal::length_delimited_size(
                    kTensorShared, shared_ref_size(offset, content_bytes(tensor, wire)));
}

void write_shared_tensor_proto(const Tensor& tensor, WireDType wire, uint64_t offset,
                               const SharedArena& arena, ByteBufferWriter& out) {
  const bool bfloat16 = sends_bfloat16(tensor, wire);
  const size_t length = content_bytes(tensor, wire);
  // The one pass over the payload: into the region instead of the message.
  if (bfloat16) {
    narrow_to_bfloat16(tensor.flat<float>().data(), static_cast<size_t>(tensor.num_elements()),
                       arena.at(offset));
  } else {
    std::memcpy(arena.at(offset), tensor.raw_data(), length);
  }
  std::string* bytes = out.bytes();
  write_dtype_and_shape(tensor, bfloat16, bytes);
  internal::put_tag(bytes, kTensorShared, WireType::kLengthDelimited);
  internal::put_varint(bytes, shared_ref_size(offset, length));
  internal::put_tag(bytes, kSharedOffset, WireType::kVarint);
  internal::put_varint(bytes, offset);
  internal::put_tag(bytes, kSharedLength, WireType::kVarint);
  internal::put_varint(bytes, length);
}

absl::Status TensorProtoReader::merge(WireStream& stream, const WireStream::Field& message) {
  present_ = true;
  return stream.for_each_field(message, [&](const WireStream::Field& field) -> absl::Status {
    switch (field.number) {
      case kTensorDtype:
        PSFLOW_RETURN_IF_ERROR(stream.expect(field, "TensorProto.dtype", WireType::kVarint));
        fields_.dtype = internal::int32_value(field.value);
        break;
      case kTensorShape:
        if (field.wire_type == WireType::kVarint) {
          PSFLOW_RETURN_IF_ERROR(internal::add_dim(field.value, limits_, &fields_));
        } else if (field.wire_type == WireType::kLengthDelimited) {
          const auto packed = stream.enter(field);
          while (!stream.at_end()) {
            uint64_t dim = 0;
            PSFLOW_RETURN_IF_ERROR(stream.read_varint(&dim));
            PSFLOW_RETURN_IF_ERROR(internal::add_dim(dim, limits_, &fields_));
          }
          stream.leave(packed);
        } else {
          return stream.wrong_type(field, "TensorProto.shape", WireType::kLengthDelimited);
        }
        break;
      case kTensorContent:
        PSFLOW_RETURN_IF_ERROR(
            stream.expect(field, "TensorProto.content", WireType::kLengthDelimited));
        PSFLOW_RETURN_IF_ERROR(read_content(stream, field));
        break;
      case kTensorStringVal:
        PSFLOW_RETURN_IF_ERROR(
            stream.expect(field, "TensorProto.string_val", WireType::kLengthDelimited));
        // Bounds the memory empty entries (2 bytes on the wire each) take.
        PSFLOW_RETURN_IF_ERROR(budget_.charge(DecodeBudget::string_bytes(field.length)));
        PSFLOW_RETURN_IF_ERROR(stream.read_bytes(field, &strings_.emplace_back()));
        ++fields_.string_count;
        break;
      case kTensorShared:
        PSFLOW_RETURN_IF_ERROR(
            stream.expect(field, "TensorProto.shared", WireType::kLengthDelimited));
        PSFLOW_RETURN_IF_ERROR(read_shared(stream, field));
        break;
      default: PSFLOW_RETURN_IF_ERROR(stream.skip_unknown(field)); break;
    }
    return absl::OkStatus();
  });
}

absl::Status TensorProtoReader::read_shared(WireStream& stream, const WireStream::Field& message) {
  has_shared_ = true;
  // A message field seen twice merges: its scalars, the last one wins.
  return stream.for_each_field(message, [&](const WireStream::Field& field) -> absl::Status {
    if (field.number == kSharedOffset || field.number == kSharedLength) {
      PSFLOW_RETURN_IF_ERROR(stream.expect(
          field, field.number == kSharedOffset ? "SharedContent.offset" : "SharedContent.length",
          WireType::kVarint));
      (field.number == kSharedOffset ? shared_offset_ : shared_length_) = field.value;
      return absl::OkStatus();
    }
    return stream.skip_unknown(field);
  });
}

absl::Status TensorProtoReader::take_shared_content() {
  const SharedMemoryRegion* region = shared_source_ == nullptr ? nullptr : shared_source_->region;
  if (region == nullptr) {
    return absl::InvalidArgumentError(
        "TensorProto.shared names shared memory, but this message belongs to no shared-memory "
        "session (send the content in TensorProto.content)");
  }
  if (content_ != nullptr || !strings_.empty()) {
    return absl::InvalidArgumentError(
        "a TensorProto has both shared and inline content; send one of them");
  }
  if (!region->contains(shared_offset_, shared_length_)) {
    return absl::InvalidArgumentError(
        absl::StrCat("TensorProto.shared [", shared_offset_, ", +", shared_length_,
                     ") lies outside the session's region (payload bytes ",
                     SharedMemoryRegion::kHeaderBytes, " to ", region->size(), ")"));
  }
  if (shared_length_ > shared_source_->remaining) {
    return absl::InvalidArgumentError(
        "the message's tensors name more shared bytes in all than the session's region holds");
  }
  shared_source_->remaining -= shared_length_;
  const bool bfloat16 = fields_.dtype == kWireBFloat16;
  const size_t decoded = bfloat16 ? 2 * shared_length_ : shared_length_;
  PSFLOW_RETURN_IF_ERROR(budget_.charge(DecodeBudget::kTensorBytes + decoded));
  const bool float_payload = bfloat16 || fields_.dtype == static_cast<int32_t>(DType::kFloat32);
  if (float_payload && destination_ != nullptr && destination_->size() == decoded && decoded > 0) {
    content_ = destination_;
  } else {
    content_ = internal::allocate_buffer(decoded, /*zero_fill=*/false);
  }
  content_offset_ = decoded - shared_length_;
  // The one copy out of the region: what is validated and used below is
  // this process's own memory.
  if (shared_length_ > 0) {
    std::memcpy(content_->data() + content_offset_, region->data() + shared_offset_,
                shared_length_);
  }
  return absl::OkStatus();
}

absl::Status TensorProtoReader::read_content(WireStream& stream, const WireStream::Field& field) {
  // Encoders write the dtype first; when it comes later (or changes), the
  // layout chosen here is fixed up by finish().
  const bool bfloat16 = fields_.dtype == kWireBFloat16;
  const size_t decoded = bfloat16 ? 2 * field.length : field.length;
  // The one copy of the payload; its size is bounded by the input's.
  PSFLOW_RETURN_IF_ERROR(budget_.charge(DecodeBudget::kTensorBytes + decoded));
  const bool float_payload = bfloat16 || fields_.dtype == static_cast<int32_t>(DType::kFloat32);
  if (float_payload && destination_ != nullptr && destination_->size() == decoded && decoded > 0) {
    content_ = destination_;
  } else {
    content_ = internal::allocate_buffer(decoded, /*zero_fill=*/false);
  }
  content_offset_ = decoded - field.length;
  PSFLOW_RETURN_IF_ERROR(stream.read_raw(field, content_->data() + content_offset_));
  fields_.content_bytes = field.length;
  return absl::OkStatus();
}

absl::StatusOr<Tensor> TensorProtoReader::finish() {
  if (has_shared_) {
    if (fields_.dtype == static_cast<int32_t>(DType::kString)) {
      return absl::InvalidArgumentError("a string tensor cannot have shared content");
    }
    fields_.content_bytes = shared_length_;
  }
  PSFLOW_ASSIGN_OR_RETURN(const int64_t n, internal::validate_tensor_fields(fields_, limits_));
  if (has_shared_) PSFLOW_RETURN_IF_ERROR(take_shared_content());
  const DType dtype = decoded_dtype(fields_.dtype);
  if (dtype == DType::kString) {
    return Tensor::from_strings(std::move(strings_), {n}).reshape(std::move(fields_.shape));
  }
  if (content_ == nullptr) content_ = internal::allocate_buffer(0, /*zero_fill=*/false);
  const bool bfloat16 = fields_.dtype == kWireBFloat16;
  if (bfloat16 && content_offset_ == fields_.content_bytes) {
    // The usual case: widen in place from the buffer's upper half.
    widen_from_bfloat16(content_->data() + content_offset_, static_cast<size_t>(n),
                        reinterpret_cast<float*>(content_->data()));
  } else if (bfloat16 || content_offset_ != 0) {
    // The dtype field came after the content, or changed: rebuild.
    const uint8_t* bytes = content_->data() + content_offset_;
    std::shared_ptr<TensorBuffer> fixed = internal::allocate_buffer(
        bfloat16 ? 2 * fields_.content_bytes : fields_.content_bytes, /*zero_fill=*/false);
    if (bfloat16) {
      widen_from_bfloat16(bytes, static_cast<size_t>(n), reinterpret_cast<float*>(fixed->data()));
    } else if (fields_.content_bytes > 0) {
      std::memcpy(fixed->data(), bytes, fields_.content_bytes);
    }
    content_ = std::move(fixed);
    content_offset_ = 0;
  }
  if (dtype == DType::kBool) {
    PSFLOW_RETURN_IF_ERROR(internal::validate_bool_content(
        std::string_view(reinterpret_cast<const char*>(content_->data()), content_->size())));
  }
  return Tensor::from_buffer(dtype, std::move(fields_.shape), std::move(content_));
}

}  // namespace psflow::internal

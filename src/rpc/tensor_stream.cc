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

void write_tensor_proto(const Tensor& tensor, WireDType wire, ByteBufferWriter& out) {
  const bool bfloat16 = sends_bfloat16(tensor, wire);
  std::string* bytes = out.bytes();
  internal::put_tag(bytes, kTensorDtype, WireType::kVarint);
  internal::put_varint(bytes, bfloat16 ? static_cast<uint64_t>(kWireBFloat16)
                                       : static_cast<uint64_t>(tensor.dtype()));
  if (tensor.rank() > 0) {
    size_t shape_bytes = 0;
    for (const int64_t d : tensor.shape()) {
      shape_bytes += internal::varint_size(static_cast<uint64_t>(d));
    }
    internal::put_tag(bytes, kTensorShape, WireType::kLengthDelimited);
    internal::put_varint(bytes, shape_bytes);
    for (const int64_t d : tensor.shape()) internal::put_varint(bytes, static_cast<uint64_t>(d));
  }
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
      default: PSFLOW_RETURN_IF_ERROR(stream.skip_unknown(field)); break;
    }
    return absl::OkStatus();
  });
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
  PSFLOW_ASSIGN_OR_RETURN(const int64_t n, internal::validate_tensor_fields(fields_, limits_));
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

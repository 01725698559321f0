// The tensor / structure wire codec (src/tensor/codec_*.cc, wire.cc,
// proto_convert.cc): every way bytes from a peer become a Tensor or a
// Structure. The first byte picks the path and the limits:
//   bit 0-1: decode_tensor, decode_structure, or the generated parser
//            followed by tensor_from_proto / structure_from_proto (the
//            path of gRPC methods with typed messages);
//   bit 2:   small limits (depth 4, rank 3), to reach the limit checks.
// DT_BFLOAT16 tensors (float32 sent with 2 bytes an element) decode to
// float32 on every path; float32 tensors also round-trip as bfloat16.
// What decodes must encode, decode again and encode to the same bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_input.h"
#include "psflow/v1/tensor.pb.h"
#include "tensor/codec.h"

namespace psflow::fuzz {
namespace {

using internal::CodecLimits;

void tensor_round_trip(const Tensor& tensor, const CodecLimits& limits) {
  const std::string bytes = internal::encode_tensor(tensor);
  check(bytes.size() == internal::encoded_size(tensor));
  absl::StatusOr<Tensor> again = internal::decode_tensor(bytes, limits);
  check(again.ok());
  check(internal::encode_tensor(*again) == bytes);
  if (tensor.dtype() != DType::kFloat32) return;
  // Sent as bfloat16, it decodes to float32 whose bfloat16 encoding is the
  // same bytes (rounding is idempotent, NaNs stay NaNs).
  std::string narrow;
  internal::encode_tensor(tensor, WireDType::kBFloat16, &narrow);
  check(narrow.size() == internal::encoded_size(tensor, WireDType::kBFloat16));
  absl::StatusOr<Tensor> widened = internal::decode_tensor(narrow, limits);
  check(widened.ok());
  check(widened->dtype() == DType::kFloat32 && widened->shape() == tensor.shape());
  std::string again_narrow;
  internal::encode_tensor(*widened, WireDType::kBFloat16, &again_narrow);
  check(again_narrow == narrow);
}

void structure_round_trip(const Structure& structure, const CodecLimits& limits) {
  const std::string bytes = internal::encode_structure(structure);
  check(bytes.size() == internal::encoded_size(structure));
  absl::StatusOr<Structure> again = internal::decode_structure(bytes, limits);
  check(again.ok());
  check(internal::encode_structure(*again) == bytes);
}

}  // namespace
}  // namespace psflow::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  psflow::fuzz::silence_protobuf_logs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace psflow;
  using namespace psflow::fuzz;
  std::string_view bytes = as_bytes(data, size);
  const uint8_t selector = take_selector(&bytes);
  internal::CodecLimits limits;
  if (selector & 4) {
    limits.max_depth = 4;
    limits.max_rank = 3;
  }
  switch (selector & 3) {
    case 0: {
      absl::StatusOr<Tensor> tensor = internal::decode_tensor(bytes, limits);
      if (tensor.ok()) tensor_round_trip(*tensor, limits);
      break;
    }
    case 1: {
      absl::StatusOr<Structure> structure = internal::decode_structure(bytes, limits);
      if (structure.ok()) structure_round_trip(*structure, limits);
      break;
    }
    case 2: {
      v1::TensorProto proto;
      if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) break;
      absl::StatusOr<Tensor> tensor = internal::tensor_from_proto(&proto, limits);
      if (tensor.ok()) {
        tensor_round_trip(*tensor, limits);
        v1::TensorProto out;
        internal::tensor_to_proto(*tensor, &out);
        check(out.SerializeAsString().size() == internal::encoded_size(*tensor));
      }
      break;
    }
    default: {
      v1::StructureProto proto;
      if (!proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) break;
      absl::StatusOr<Structure> structure = internal::structure_from_proto(&proto, limits);
      if (structure.ok()) {
        structure_round_trip(*structure, limits);
        v1::StructureProto out;
        internal::structure_to_proto(*structure, &out);
        check(out.SerializeAsString().size() == internal::encoded_size(*structure));
      }
      break;
    }
  }
  return 0;
}

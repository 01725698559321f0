// Wire codec: Tensor and Structure <-> psflow.v1.TensorProto / StructureProto
// bytes (proto/psflow/v1/tensor.proto).
//
// encode_* writes the protobuf wire format directly, byte for byte what the
// generated SerializeToString writes for the same message, copying a tensor's
// payload exactly once (buffer -> output). decode_* parses the wire format
// directly and copies a payload exactly once (input -> a fresh aligned
// buffer). Messages any protobuf implementation serialized decode here, and
// what encode_* writes parses with the generated classes.
//
// Decoding treats its input as hostile: every problem is INVALID_ARGUMENT
// naming it, checks come before allocations, and the size of what is
// allocated is bounded by the size of the input. Unknown fields are skipped
// (forward compatibility); a known field with the wrong wire type is an
// error. Dict keys travel as proto `string` fields, which must be UTF-8;
// keys that are not will be rejected by every decoder, this one included.
//
// Thread-safety: free functions without shared state.
#ifndef PSFLOW_TENSOR_CODEC_H_
#define PSFLOW_TENSOR_CODEC_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "psflow/structure.h"
#include "psflow/tensor.h"
#include "psflow/v1/tensor.pb.h"
#include "psflow/wire_dtype.h"

namespace psflow::internal {

// Bounds on what decoding accepts.
struct CodecLimits {
  // Checked before parsing. Values above 2^31 - 1 (protobuf's own limit)
  // act as 2^31 - 1.
  size_t max_message_bytes = 1u << 30;
  // Deepest nesting of tuples/lists/dicts (Structure::depth()). Decoding
  // recurses once per level, so this also bounds its stack use; keep it in
  // the hundreds at most. Generated protobuf parsers (the gRPC path) stop at
  // 100 nested messages: 50 levels of tuples or lists, 33 of dicts.
  int max_depth = 64;
  // Highest tensor rank.
  int max_rank = 32;
  // Memory a decoded value may take: at most max_expansion times the size
  // of its encoding, plus expansion_floor_bytes. Tiny elements cost far
  // more in memory than on the wire (an empty string: 2 bytes sent, 32
  // held; an empty tuple: 2 sent, a Structure held), so without this a
  // small message could pin gigabytes. Charged as decoding goes, before
  // the memory is taken; beyond it decoding is INVALID_ARGUMENT naming the
  // bound. Numeric tensors and long strings stay within 1x.
  size_t max_expansion = 8;
  size_t expansion_floor_bytes = size_t{16} << 20;
};

// Size of the encoding, without producing it.
[[nodiscard]] size_t encoded_size(const Tensor& tensor);
// Appends the serialized TensorProto of `tensor` to `*out`.
void encode_tensor(const Tensor& tensor, std::string* out);
[[nodiscard]] std::string encode_tensor(const Tensor& tensor);
// Whether `tensor` goes on the wire as DT_BFLOAT16 under `wire`: only
// float32 tensors do; other dtypes are sent as they are.
[[nodiscard]] bool sends_bfloat16(const Tensor& tensor, WireDType wire);
// As above, a float32 tensor sent as `wire` (tensor/bfloat16.h rounding);
// the decoders give back float32.
[[nodiscard]] size_t encoded_size(const Tensor& tensor, WireDType wire);
void encode_tensor(const Tensor& tensor, WireDType wire, std::string* out);
// Parses a serialized TensorProto. An invalid (default) Tensor encodes as a
// message without a dtype, which decoding rejects.
[[nodiscard]] absl::StatusOr<Tensor> decode_tensor(std::string_view bytes,
                                                   const CodecLimits& limits = {});

[[nodiscard]] size_t encoded_size(const Structure& structure);
// Appends the serialized StructureProto of `structure` to `*out`.
void encode_structure(const Structure& structure, std::string* out);
[[nodiscard]] std::string encode_structure(const Structure& structure);
[[nodiscard]] absl::StatusOr<Structure> decode_structure(std::string_view bytes,
                                                         const CodecLimits& limits = {});

// For the RPC layer, whose messages arrive already parsed. tensor_from_proto
// validates like decode_tensor and moves `proto`'s content and string_val
// into the tensor without copying (leaving those fields of `proto` empty).
// max_message_bytes does not apply.
[[nodiscard]] absl::StatusOr<Tensor> tensor_from_proto(v1::TensorProto* proto,
                                                       const CodecLimits& limits = {});
// Overwrites `*proto`; copies the payload once.
void tensor_to_proto(const Tensor& tensor, v1::TensorProto* proto);
// As tensor_from_proto, for every tensor in the structure.
[[nodiscard]] absl::StatusOr<Structure> structure_from_proto(v1::StructureProto* proto,
                                                             const CodecLimits& limits = {});
void structure_to_proto(const Structure& structure, v1::StructureProto* proto);

}  // namespace psflow::internal

#endif  // PSFLOW_TENSOR_CODEC_H_

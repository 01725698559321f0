// Validation shared by the byte decoder and the proto converters (internal).
#ifndef PSFLOW_TENSOR_CODEC_INTERNAL_H_
#define PSFLOW_TENSOR_CODEC_INTERNAL_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/structure.h"
#include "psflow/tensor.h"
#include "tensor/codec.h"

namespace psflow::internal {

// Field numbers of proto/psflow/v1/tensor.proto.
namespace fields {
inline constexpr uint32_t kTensorDtype = 1;
inline constexpr uint32_t kTensorShape = 2;
inline constexpr uint32_t kTensorContent = 3;
inline constexpr uint32_t kTensorStringVal = 4;
inline constexpr uint32_t kTensorShared = 5;
inline constexpr uint32_t kSharedOffset = 1;
inline constexpr uint32_t kSharedLength = 2;
inline constexpr uint32_t kStructNone = 1;
inline constexpr uint32_t kStructTensor = 2;
inline constexpr uint32_t kStructInt = 3;
inline constexpr uint32_t kStructFloat = 4;
inline constexpr uint32_t kStructBool = 5;
inline constexpr uint32_t kStructString = 6;
inline constexpr uint32_t kStructTuple = 7;
inline constexpr uint32_t kStructList = 8;
inline constexpr uint32_t kStructDict = 9;
inline constexpr uint32_t kListItems = 1;
inline constexpr uint32_t kDictFields = 1;
inline constexpr uint32_t kFieldKey = 1;
inline constexpr uint32_t kFieldValue = 2;
}  // namespace fields

// psflow.v1.DT_BFLOAT16: float32 tensors sent with 2 bytes per element
// (tensor/bfloat16.h); every decoder widens them back to float32.
inline constexpr int32_t kWireBFloat16 = 8;

// A message may arrive as several length-delimited pieces that protobuf
// merges (a repeated occurrence of a singular message field); decoding
// reads them in order as one message.
using Segments = std::vector<std::string_view>;

// The fields of a TensorProto that decide whether it is a valid tensor.
struct TensorFields {
  int32_t dtype = 0;
  Shape shape;
  size_t content_bytes = 0;
  int64_t string_count = 0;
};

// Checks dtype, rank, shape, and that content / string_val match the shape;
// returns the element count. Runs before anything is allocated. A
// kWireBFloat16 tensor is checked as float32 with 2-byte elements.
[[nodiscard]] absl::StatusOr<int64_t> validate_tensor_fields(const TensorFields& fields,
                                                             const CodecLimits& limits);
// The dtype of the tensor decoded from wire dtype `wire` (validated):
// float32 for kWireBFloat16, else the same value.
[[nodiscard]] inline DType decoded_dtype(int32_t wire) {
  return wire == kWireBFloat16 ? DType::kFloat32 : static_cast<DType>(wire);
}
[[nodiscard]] absl::Status rank_error(const CodecLimits& limits);
// Appends `dim` to fields->shape; rank_error past max_rank. Inline: both
// tensor decoders call it for every dimension.
[[nodiscard]] inline absl::Status add_dim(uint64_t dim, const CodecLimits& limits,
                                          TensorFields* fields) {
  if (fields->shape.size() >= static_cast<size_t>(std::max(limits.max_rank, 0))) {
    return rank_error(limits);
  }
  fields->shape.push_back(static_cast<int64_t>(dim));
  return absl::OkStatus();
}
// Every byte of a bool tensor's content must be 0 or 1 (other values would
// be undefined behaviour when read as bool).
[[nodiscard]] absl::Status validate_bool_content(std::string_view content);
// Dict keys are proto3 `string` fields, which must be UTF-8.
[[nodiscard]] absl::Status validate_key(std::string_view key);
[[nodiscard]] absl::Status depth_error(const CodecLimits& limits);

// The memory a decode may take (CodecLimits::max_expansion), charged in
// the model below before the memory is allocated.
// Thread-safety: not thread-safe; one per decode call.
class DecodeBudget {
 public:
  // Held per structure node, per tensor, per string, per dict entry.
  static constexpr size_t kNodeBytes = sizeof(Structure);
  static constexpr size_t kTensorBytes = 128;
  static constexpr size_t kDictEntryBytes = 64;
  // What a std::string of `length` bytes holds (inline up to 15 bytes).
  static constexpr size_t string_bytes(size_t length) {
    return sizeof(std::string) + (length > 15 ? length + 1 : 0);
  }

  DecodeBudget(size_t wire_bytes, const CodecLimits& limits);
  // INVALID_ARGUMENT once the total charged exceeds the bound.
  [[nodiscard]] absl::Status charge(size_t bytes);
  [[nodiscard]] size_t used() const { return used_; }

 private:
  size_t wire_bytes_;
  size_t limit_;
  size_t max_expansion_;
  size_t floor_;
  size_t used_ = 0;
};

// As tensor_from_proto, charging `budget`.
[[nodiscard]] absl::StatusOr<Tensor> tensor_from_proto(v1::TensorProto* proto,
                                                       const CodecLimits& limits,
                                                       DecodeBudget& budget);

// Where in a structure decoding is, so that errors can say "at [1]['v']".
// Thread-safety: not thread-safe; one per decode call.
class DecodePath {
 public:
  void push_index(size_t i);
  void push_key(std::string_view key);
  void pop();
  // `status` with the current path in front of its message.
  [[nodiscard]] absl::Status annotate(const absl::Status& status) const;

 private:
  std::string path_;
  std::vector<size_t> marks_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TENSOR_CODEC_INTERNAL_H_

// ExecuteRequest / ExecuteResponse (proto/psflow/v1/variable.proto) written
// and read straight between gRPC byte buffers and native batches.
//
// The bytes are the protobuf wire format of those messages, so any protobuf
// implementation can produce and parse them; only the C++ path is special:
// tensor payloads are sent from the tensors' own buffers (zero copy; see
// ByteBufferWriter) and received with one copy, straight from gRPC's slices
// into one aligned buffer per tensor. The generated classes would copy a
// payload twice on each side (tensor -> proto string -> serialized bytes),
// and their handling of large bytes fields is slow.
#ifndef PSFLOW_PS_REQUEST_GRPC_EXECUTE_CODEC_H_
#define PSFLOW_PS_REQUEST_GRPC_EXECUTE_CODEC_H_

#include <grpcpp/support/byte_buffer.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ps/request/execute_batch.h"
#include "psflow/tensor.h"
#include "rpc/shared_memory_region.h"
#include "rpc/tensor_stream.h"
#include "tensor/codec.h"

namespace psflow::internal {

// Most ops (and most optimizers) one ExecuteRequest may hold: each costs
// the ps a few hundred bytes of bookkeeping however small it is on the wire,
// so a request of empty ops must not turn 20 MB into gigabytes. A step of
// the largest models touches far fewer variables per ps task.
inline constexpr size_t kMaxOpsPerRequest = size_t{1} << 16;

// Trailing metadata of an Execute refused because it names a
// shared-memory session the ps does not hold for the caller: the client
// sends the call again with its contents in the message.
inline constexpr char kUnknownSharedMemorySessionMetadata[] =
    "psflow-unknown-shared-memory-session";

// ExecuteRequest.shared_memory: the caller's session and the part of its
// region the ps may fill with result contents.
struct SharedMemoryCallInfo {
  std::string session;
  uint64_t result_offset = 0;
  uint64_t result_bytes = 0;
};

// A request's use of shared memory, for encode_execute_request: tensor
// contents of at least SharedArena::kMinBytes go to `arena` while it has
// room (the rest in the message), and what is left of it after them is
// offered to the ps for results.
struct SharedRequest {
  std::string session;
  SharedArena arena;
};

// The serialized ExecuteRequest. The buffer shares the batch's large
// tensors: they must not be written to while it (or a call sending it)
// lives.
[[nodiscard]] grpc::ByteBuffer encode_execute_request(const ExecuteBatch& batch,
                                                      SharedRequest* shared = nullptr);
// ExecuteRequest.shared_memory alone (nullopt when absent), read before the
// request itself so that its session's region is known when its tensors
// are. INVALID_ARGUMENT when malformed.
[[nodiscard]] absl::StatusOr<std::optional<SharedMemoryCallInfo>> read_shared_memory_call(
    const grpc::ByteBuffer& bytes, const CodecLimits& limits = {});
// Parses an ExecuteRequest, treating the bytes as hostile: INVALID_ARGUMENT
// names what is malformed (and the op or optimizer index), bounded by
// `limits`. Optimizers are converted and validated. Op kinds and tensors
// are not checked against variables here (execute_variable_ops does that).
// Tensor contents in shared memory are read from `region` (copied out
// once; without a region they are INVALID_ARGUMENT).
[[nodiscard]] absl::StatusOr<ExecuteBatch> decode_execute_request(
    const grpc::ByteBuffer& bytes, const CodecLimits& limits = {},
    const SharedMemoryRegion* region = nullptr);

// Size of the serialized ExecuteResponse holding `results`, result i sent
// as wire[i] (float32 where `wire` is shorter).
[[nodiscard]] size_t execute_response_size(const std::vector<Tensor>& results,
                                           const std::vector<WireDType>& wire = {});
// The serialized ExecuteResponse; shares the results' large buffers (those
// sent as bfloat16 are narrowed into the message instead). With `arena`
// (the caller's result part of its shared region), result contents of at
// least SharedArena::kMinBytes are copied there while it has room.
[[nodiscard]] grpc::ByteBuffer encode_execute_response(const std::vector<Tensor>& results,
                                                       const std::vector<WireDType>& wire = {},
                                                       SharedArena* arena = nullptr);
// Result i lands in destinations[i] when that is non-null and the result
// is float32 of its size (TensorProtoReader::set_destination); bfloat16
// results come back as float32. Contents in shared memory are read from
// `region`.
[[nodiscard]] absl::StatusOr<std::vector<Tensor>> decode_execute_response(
    const grpc::ByteBuffer& bytes, const CodecLimits& limits = {},
    const std::vector<std::shared_ptr<TensorBuffer>>& destinations = {},
    const SharedMemoryRegion* region = nullptr);

}  // namespace psflow::internal

#endif  // PSFLOW_PS_REQUEST_GRPC_EXECUTE_CODEC_H_

// The ps task's request path (src/ps/request/grpc_execute_codec.cc,
// execute_batch.cc, src/ps/server/execute.cc): Execute's bytes as they
// arrive from gRPC, decoded and run against a fresh VariableStore that
// holds two variables ("w": float32 [4, 2], "n": int64 [3]), exactly as
// VariableServiceImpl::Execute does. The first byte splits the bytes into
// 1-4 slices (gRPC delivers a message in slices of any size) and picks
// the direction (its bit 7: decode_execute_response instead). A request
// that decodes must encode and decode to the same bytes.
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_input.h"
#include "ps/request/grpc_execute_codec.h"
#include "ps/server/execute.h"
#include "ps/server/variable_store.h"

namespace psflow::fuzz {
namespace {

// `bytes` in `pieces` slices.
grpc::ByteBuffer sliced(std::string_view bytes, size_t pieces) {
  std::vector<grpc::Slice> slices;
  const size_t step = bytes.size() / pieces + 1;
  for (size_t at = 0; at < bytes.size(); at += step) {
    const std::string_view part = bytes.substr(at, step);
    slices.emplace_back(part.data(), part.size());
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

std::string flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  check(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices)
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

internal::ExecuteBatch seed_batch() {
  internal::ExecuteBatch batch;
  internal::VariableOpArgs w;
  w.kind = v1::VariableOp::CREATE;
  w.variable = "w";
  w.value = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  batch.ops.push_back(w);
  internal::VariableOpArgs n;
  n.kind = v1::VariableOp::CREATE;
  n.variable = "n";
  n.value = Tensor::from_vector<int64_t>({1, 2, 3}, {3});
  batch.ops.push_back(n);
  return batch;
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
  const grpc::ByteBuffer buffer = sliced(bytes, 1 + (selector & 3));
  internal::CodecLimits limits;
  limits.max_message_bytes = size_t{1} << 20;
  if (selector & 0x80) {
    absl::StatusOr<std::vector<Tensor>> results = internal::decode_execute_response(buffer, limits);
    if (results.ok()) {
      const std::string encoded = flatten(internal::encode_execute_response(*results));
      check(encoded.size() == internal::execute_response_size(*results));
      check(internal::decode_execute_response(sliced(encoded, 1), limits).ok());
      // Decoded again into destination buffers (the reused receive buffers
      // of pulls), one of each result's size: the same values.
      std::vector<std::shared_ptr<TensorBuffer>> destinations;
      for (const Tensor& t : *results) {
        destinations.push_back(t.dtype() == DType::kFloat32 && t.byte_size() > 0
                                   ? TensorBuffer::allocate(t.byte_size())
                                   : nullptr);
      }
      absl::StatusOr<std::vector<Tensor>> landed =
          internal::decode_execute_response(buffer, limits, destinations);
      check(landed.ok() && landed->size() == results->size());
      for (size_t i = 0; i < results->size(); ++i) {
        check(internal::encode_tensor((*landed)[i]) == internal::encode_tensor((*results)[i]));
      }
    }
    return 0;
  }
  absl::StatusOr<internal::ExecuteBatch> batch = internal::decode_execute_request(buffer, limits);
  if (!batch.ok()) return 0;
  const std::string encoded = flatten(internal::encode_execute_request(*batch));
  absl::StatusOr<internal::ExecuteBatch> again =
      internal::decode_execute_request(sliced(encoded, 2), limits);
  check(again.ok());
  check(flatten(internal::encode_execute_request(*again)) == encoded);

  internal::VariableStore store;
  internal::ExecuteBatch setup = seed_batch();
  std::vector<Tensor> ignored;
  check(internal::execute_variable_ops(store, setup, &ignored).ok());
  std::vector<Tensor> results;
  std::vector<WireDType> wire;
  if (internal::execute_variable_ops(store, *batch, &results, &wire).ok()) {
    // The response as sent, bfloat16 results included, reads back.
    const grpc::ByteBuffer response = internal::encode_execute_response(results, wire);
    check(response.Length() == internal::execute_response_size(results, wire));
    check(internal::decode_execute_response(response, limits).ok());
  }
  return 0;
}

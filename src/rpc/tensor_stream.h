// TensorProto fields written into and read from gRPC byte buffers: payloads
// are sent from the tensor's own buffer and received with one copy.
#ifndef PSFLOW_RPC_TENSOR_STREAM_H_
#define PSFLOW_RPC_TENSOR_STREAM_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/tensor.h"
#include "rpc/byte_buffer_writer.h"
#include "rpc/shared_memory_region.h"
#include "rpc/wire_stream.h"
#include "tensor/codec.h"
#include "tensor/codec_internal.h"

namespace psflow::internal {

// Writes the TensorProto body of a valid `tensor`, byte for byte what
// encode_tensor writes (its length is encoded_size(tensor)); the payload
// goes through append_payload, so large ones are not copied.
void write_tensor_proto(const Tensor& tensor, ByteBufferWriter& out);
// As above, a float32 tensor sent as `wire` (encoded_size(tensor, wire)
// bytes): bfloat16 elements are narrowed straight into the message.
void write_tensor_proto(const Tensor& tensor, WireDType wire, ByteBufferWriter& out);

// A call's slice [begin, end) of a shared-memory region, handed out from
// its start: where an Execute call's tensor contents go instead of the
// message (TensorProto.shared).
// Thread-safety: not thread-safe; one per call being encoded.
class SharedArena {
 public:
  // Contents smaller than this travel in the message: for them the
  // bookkeeping would cost more than the copy it saves.
  static constexpr size_t kMinBytes = size_t{4} << 10;
  static constexpr size_t kAlignment = 64;

  SharedArena(uint8_t* base, uint64_t begin, uint64_t end) : base_(base), next_(begin), end_(end) {}
  // The region offset of `bytes` more, or -1 when they do not fit.
  [[nodiscard]] int64_t reserve(uint64_t bytes);
  [[nodiscard]] uint8_t* at(uint64_t offset) const { return base_ + offset; }
  [[nodiscard]] uint64_t next() const { return next_; }
  [[nodiscard]] uint64_t end() const { return end_; }

 private:
  uint8_t* base_;
  uint64_t next_;
  uint64_t end_;
};

// Bytes of `tensor`'s content sent as `wire`; 0 for strings.
[[nodiscard]] size_t content_bytes(const Tensor& tensor, WireDType wire);
// Whether `tensor`'s content may go in shared memory: fixed-width and at
// least SharedArena::kMinBytes.
[[nodiscard]] bool shareable(const Tensor& tensor, WireDType wire);
// Size of the TensorProto body of `tensor` whose content (sent as `wire`)
// lies at `offset` of a shared region.
[[nodiscard]] size_t shared_tensor_proto_size(const Tensor& tensor, WireDType wire,
                                              uint64_t offset);
// Copies (narrowing for bfloat16) `tensor`'s content to `arena` at
// `offset` and writes its TensorProto body naming it there.
void write_shared_tensor_proto(const Tensor& tensor, WireDType wire, uint64_t offset,
                               const SharedArena& arena, ByteBufferWriter& out);

// Where a message's TensorProto.shared contents are read from: the call's
// region, and how many bytes of it the message may still name (at most
// the region's size in all, so that one slice named many times cannot
// make a small message decode into much more memory than it maps).
struct SharedSource {
  const SharedMemoryRegion* region = nullptr;
  uint64_t remaining = 0;
};

// Reads one TensorProto field of a message. Protobuf merges repeated
// occurrences of a singular message field (scalars: the last wins; repeated
// fields: concatenated), so every occurrence is passed to merge() and the
// tensor is built once at the end. The content bytes are copied once,
// straight from the stream into a fresh aligned buffer. Validation matches
// decode_tensor (INVALID_ARGUMENT naming the problem). DT_BFLOAT16 content
// is widened to float32 as it lands.
//
// With a destination buffer (set_destination), a float32 payload of
// exactly the destination's size (as float32, or as bfloat16 widened)
// lands in it instead of a fresh buffer: the receive path of pulls whose
// buffers are reused across steps. Other payloads ignore it.
// Thread-safety: not thread-safe; one per field being read.
class TensorProtoReader {
 public:
  // `limits` and `budget` (the memory the whole message may take once
  // decoded, shared by its readers) must outlive the reader.
  TensorProtoReader(const CodecLimits& limits, DecodeBudget& budget)
      : limits_(limits), budget_(budget) {}

  // Reads one occurrence; `field` is the length-delimited field just read
  // by stream.next().
  [[nodiscard]] absl::Status merge(WireStream& stream, const WireStream::Field& field);
  // Whether merge() was called.
  [[nodiscard]] bool present() const { return present_; }
  // Call before merge(). The buffer must not be read or written by anyone
  // else while the reader may write to it.
  void set_destination(std::shared_ptr<TensorBuffer> buffer) { destination_ = std::move(buffer); }
  // Where TensorProto.shared contents come from; without one (the default)
  // a tensor naming shared content is INVALID_ARGUMENT. `source` must
  // outlive finish(); its bytes are copied out there, once, so that a
  // peer writing to the region meanwhile can change values but not
  // what was validated.
  void set_shared_source(SharedSource* source) { shared_source_ = source; }
  [[nodiscard]] absl::StatusOr<Tensor> finish();

 private:
  absl::Status read_content(WireStream& stream, const WireStream::Field& field);
  absl::Status read_shared(WireStream& stream, const WireStream::Field& field);
  absl::Status take_shared_content();
  const CodecLimits& limits_;
  DecodeBudget& budget_;
  bool present_ = false;
  internal::TensorFields fields_;
  std::shared_ptr<TensorBuffer> content_;
  // The content's bytes start this far into content_: bfloat16 content is
  // read into the upper half of a buffer twice its size and widened in
  // place by finish(), so that it costs no second buffer.
  size_t content_offset_ = 0;
  std::shared_ptr<TensorBuffer> destination_;
  std::vector<std::string> strings_;
  SharedSource* shared_source_ = nullptr;
  bool has_shared_ = false;
  uint64_t shared_offset_ = 0;
  uint64_t shared_length_ = 0;
};

}  // namespace psflow::internal

#endif  // PSFLOW_RPC_TENSOR_STREAM_H_

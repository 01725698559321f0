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
  [[nodiscard]] absl::StatusOr<Tensor> finish();

 private:
  absl::Status read_content(WireStream& stream, const WireStream::Field& field);
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
};

}  // namespace psflow::internal

#endif  // PSFLOW_RPC_TENSOR_STREAM_H_

// Builds grpc::ByteBuffers whose large tensor payloads are referenced, not
// copied.
#ifndef PSFLOW_RPC_BYTE_BUFFER_WRITER_H_
#define PSFLOW_RPC_BYTE_BUFFER_WRITER_H_

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstddef>
#include <string>
#include <vector>

#include "psflow/tensor.h"

namespace psflow::internal {

// Accumulates a message as small bytes (protobuf framing, small payloads:
// copied) and large payloads (a slice per payload that points into the
// tensor's buffer and keeps it alive until gRPC has sent it: zero copy).
// Sending then costs no copy in user space; the kernel's copy into the
// socket is the only one.
// Thread-safety: not thread-safe (a builder).
class ByteBufferWriter {
 public:
  // Payloads smaller than this are copied with the surrounding bytes: a
  // slice of their own would cost more than the copy.
  static constexpr size_t kMinSharedPayloadBytes = size_t{16} << 10;

  // Where to append framing bytes (tensor/wire.h's put_* helpers); the
  // pointer stays valid for the writer's lifetime.
  [[nodiscard]] std::string* bytes() { return &pending_; }
  // Appends the element bytes of a fixed-width tensor.
  void append_payload(const Tensor& tensor);
  // Bytes written so far.
  [[nodiscard]] size_t size() const { return flushed_ + pending_.size(); }
  // The message; the writer is left empty.
  [[nodiscard]] grpc::ByteBuffer finish();

 private:
  void flush();

  std::vector<grpc::Slice> slices_;
  std::string pending_;
  size_t flushed_ = 0;
};

}  // namespace psflow::internal

#endif  // PSFLOW_RPC_BYTE_BUFFER_WRITER_H_

#include "rpc/byte_buffer_writer.h"

#include <utility>

namespace psflow::internal {
namespace {

// Framing runs shorter than this are copied into a fresh slice; longer ones
// move their string into the slice instead.
constexpr size_t kMaxCopiedFramingBytes = 1024;

void delete_tensor(void* tensor) { delete static_cast<Tensor*>(tensor); }
void delete_string(void* bytes) { delete static_cast<std::string*>(bytes); }

}  // namespace

void ByteBufferWriter::append_payload(const Tensor& tensor) {
  const size_t n = tensor.byte_size();
  if (n == 0) return;
  const auto* data = static_cast<const char*>(tensor.raw_data());
  if (n < kMinSharedPayloadBytes) {
    pending_.append(data, n);
    return;
  }
  flush();
  // gRPC only reads through the pointer; the slice owns a Tensor copy,
  // which keeps the buffer alive until the last slice reference is gone.
  auto* owner = new Tensor(tensor);
  slices_.emplace_back(const_cast<char*>(data), n, &delete_tensor, owner);
  flushed_ += n;
}

void ByteBufferWriter::flush() {
  if (pending_.empty()) return;
  flushed_ += pending_.size();
  if (pending_.size() <= kMaxCopiedFramingBytes) {
    slices_.emplace_back(pending_.data(), pending_.size());
    pending_.clear();
    return;
  }
  auto* owned = new std::string(std::move(pending_));
  pending_.clear();
  slices_.emplace_back(owned->data(), owned->size(), &delete_string, owned);
}

grpc::ByteBuffer ByteBufferWriter::finish() {
  flush();
  grpc::ByteBuffer buffer(slices_.data(), slices_.size());
  slices_.clear();
  flushed_ = 0;
  return buffer;
}

}  // namespace psflow::internal

// Buffers reused across steps: the receive side of pulls that land in the
// worker's parameter buffers instead of a fresh allocation per step.
#ifndef PSFLOW_TENSOR_BUFFER_POOL_H_
#define PSFLOW_TENSOR_BUFFER_POOL_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "psflow/tensor.h"

namespace psflow::internal {

// Keeps one buffer for one destination (a variable's pulled value) and
// hands it out again once every holder of the previous handout has let it
// go: a tensor decoded into it, copies of that tensor, slices. While it is
// held, take() allocates a new one (so no holder ever sees its bytes
// change), which then becomes the kept one. The return happens in the
// handout's destructor under the pool's mutex, so the next writer is
// ordered after every reader of the previous contents.
// Thread-safety: thread-safe; handouts may outlive the pool.
class BufferPool {
 public:
  BufferPool() : state_(std::make_shared<State>()) {}

  // A buffer of exactly `bytes` bytes (64-byte aligned) with unspecified
  // contents.
  [[nodiscard]] std::shared_ptr<TensorBuffer> take(size_t bytes);
  // How many buffers take() has allocated so far (tests, benchmarks).
  [[nodiscard]] int64_t allocations() const;

 private:
  struct State {
    absl::Mutex mu;
    std::shared_ptr<TensorBuffer> idle ABSL_GUARDED_BY(mu);
    int64_t allocations ABSL_GUARDED_BY(mu) = 0;
  };
  class Handout;

  std::shared_ptr<State> state_;
};

// Bytes [offset, offset + size) of `parent` as a buffer of their own,
// keeping `parent` alive: one shard's place in a whole variable's buffer.
// `offset + size` must not exceed parent->size().
[[nodiscard]] std::shared_ptr<TensorBuffer> sub_buffer(std::shared_ptr<TensorBuffer> parent,
                                                       size_t offset, size_t size);

}  // namespace psflow::internal

#endif  // PSFLOW_TENSOR_BUFFER_POOL_H_

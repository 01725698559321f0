#include "tensor/buffer_pool.h"

#include <utility>

#include "base/logging.h"
#include "tensor/tensor_internal.h"

namespace psflow::internal {

// The pool's buffer as handed out; gives it back when destroyed.
// Thread-safety: immutable after construction.
class BufferPool::Handout final : public TensorBuffer {
 public:
  Handout(std::shared_ptr<TensorBuffer> inner, std::shared_ptr<State> pool)
      : inner_(std::move(inner)), pool_(std::move(pool)) {}
  ~Handout() override {
    absl::MutexLock lock(&pool_->mu);
    // A buffer allocated while this one was out may be kept already; the
    // most recent handout wins, the other is freed.
    pool_->idle = std::move(inner_);
  }
  [[nodiscard]] uint8_t* data() const override { return inner_->data(); }
  [[nodiscard]] size_t size() const override { return inner_->size(); }

 private:
  std::shared_ptr<TensorBuffer> inner_;
  std::shared_ptr<State> pool_;
};

std::shared_ptr<TensorBuffer> BufferPool::take(size_t bytes) {
  std::shared_ptr<TensorBuffer> buffer;
  {
    absl::MutexLock lock(&state_->mu);
    if (state_->idle != nullptr && state_->idle->size() == bytes) {
      buffer = std::move(state_->idle);
    } else {
      state_->idle.reset();
      ++state_->allocations;
    }
  }
  if (buffer == nullptr) buffer = allocate_buffer(bytes, /*zero_fill=*/false);
  return std::make_shared<Handout>(std::move(buffer), state_);
}

int64_t BufferPool::allocations() const {
  absl::MutexLock lock(&state_->mu);
  return state_->allocations;
}

namespace {

// Thread-safety: immutable after construction.
class SubBuffer final : public TensorBuffer {
 public:
  SubBuffer(std::shared_ptr<TensorBuffer> parent, size_t offset, size_t size)
      : parent_(std::move(parent)), offset_(offset), size_(size) {}
  [[nodiscard]] uint8_t* data() const override { return parent_->data() + offset_; }
  [[nodiscard]] size_t size() const override { return size_; }

 private:
  std::shared_ptr<TensorBuffer> parent_;
  size_t offset_;
  size_t size_;
};

}  // namespace

std::shared_ptr<TensorBuffer> sub_buffer(std::shared_ptr<TensorBuffer> parent, size_t offset,
                                         size_t size) {
  PSFLOW_CHECK(offset <= parent->size() && size <= parent->size() - offset, "sub_buffer [", offset,
               ", ", offset + size, ") outside a buffer of ", parent->size(), " bytes");
  return std::make_shared<SubBuffer>(std::move(parent), offset, size);
}

}  // namespace psflow::internal

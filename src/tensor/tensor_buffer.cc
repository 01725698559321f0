// TensorBuffer implementations: aligned heap blocks, mapped large blocks,
// and adopted strings.
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "psflow/tensor.h"
#include "tensor/tensor_internal.h"

namespace psflow {
namespace {

constexpr size_t kBufferAlignment = 64;

// Buffers this large bypass malloc. glibc maps every block of 32 MiB or more
// afresh (its largest mmap threshold) and unmaps it on free, so each new
// tensor would fault in fresh zeroed 4 KiB pages one at a time, which costs
// more than the copy that fills them (64 MiB decode: 1.7 GB/s against
// 7-10 GB/s memcpy). We map them ourselves, 2 MiB aligned with
// MADV_HUGEPAGE (512x fewer faults), and keep a few freed mappings for
// reuse, since a parameter server sees the same large sizes again and again
// (every push of a gradient). The threshold is well below glibc's because
// huge pages also matter for access: an embedding table of a few MiB read
// and updated at random rows takes a TLB miss per row on 4 KiB pages
// (sparse Adagrad over a 25 MiB table with its accumulator: ~20% faster
// per row on huge pages). Smaller blocks malloc recycles by itself.
constexpr size_t kMappedBufferBytes = size_t{4} << 20;
constexpr size_t kHugePageBytes = size_t{2} << 20;
// Bound on the memory freed mappings may keep: what the cache buys is
// avoiding the kernel's page zeroing, not holding the working set.
constexpr size_t kMaxCachedMappings = 4;
constexpr size_t kMaxCachedBytes = size_t{256} << 20;

// An anonymous mapping whose `data` is 2 MiB aligned and `capacity` long.
struct Mapping {
  uint8_t* raw = nullptr;
  size_t mapped_bytes = 0;
  uint8_t* data = nullptr;
  size_t capacity = 0;
};

Mapping map_pages(size_t capacity) {
  Mapping m;
  m.mapped_bytes = capacity + kHugePageBytes;
  void* raw =
      mmap(nullptr, m.mapped_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  m.raw = static_cast<uint8_t*>(raw);
  m.data = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(m.raw) + kHugePageBytes - 1) &
                                      ~(uintptr_t{kHugePageBytes} - 1));
  m.capacity = capacity;
  // Advice only: without transparent huge pages this is a no-op. Only whole
  // huge pages: a partial last one would hold up to 2 MiB of memory the
  // tensor never uses (a 4.1 MiB tensor would take 6 MiB).
  const size_t whole_pages = capacity & ~(kHugePageBytes - 1);
  if (whole_pages > 0) (void)madvise(m.data, whole_pages, MADV_HUGEPAGE);
  return m;
}

// Recently freed large mappings, handed out again best-fit.
// Thread-safety: thread-safe.
class MappingCache {
 public:
  // Never destroyed: buffers may be freed during static destruction.
  static MappingCache& instance() {
    static MappingCache* cache = new MappingCache();
    return *cache;
  }

  // The smallest cached mapping of at least `bytes` (and not more than twice
  // that, to bound waste), if any.
  std::optional<Mapping> take(size_t bytes) {
    absl::MutexLock lock(&mu_);
    size_t best = free_.size();
    for (size_t i = 0; i < free_.size(); ++i) {
      const size_t c = free_[i].capacity;
      if (c >= bytes && c / 2 <= bytes && (best == free_.size() || c < free_[best].capacity)) {
        best = i;
      }
    }
    if (best == free_.size()) return std::nullopt;
    Mapping m = free_[best];
    free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(best));
    cached_bytes_ -= m.capacity;
    return m;
  }

  // Keeps `m` for reuse, evicting (unmapping) the oldest entries beyond the
  // limits: the sizes freed last are the likeliest to be asked for next.
  void give(const Mapping& m) {
    std::vector<Mapping> evicted;
    {
      absl::MutexLock lock(&mu_);
      free_.push_back(m);
      cached_bytes_ += m.capacity;
      while (free_.size() > kMaxCachedMappings || cached_bytes_ > kMaxCachedBytes) {
        evicted.push_back(free_.front());
        cached_bytes_ -= free_.front().capacity;
        free_.erase(free_.begin());
      }
    }
    for (const Mapping& e : evicted) munmap(e.raw, e.mapped_bytes);
  }

 private:
  absl::Mutex mu_;
  std::vector<Mapping> free_ ABSL_GUARDED_BY(mu_);
  size_t cached_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

// Heap block aligned for any SIMD width. Thread-safety: immutable.
class AlignedBuffer final : public TensorBuffer {
 public:
  AlignedBuffer(uint8_t* data, size_t size) : data_(data), size_(size) {}
  ~AlignedBuffer() override { ::operator delete (data_, std::align_val_t{kBufferAlignment}); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  uint8_t* data() const override { return data_; }
  size_t size() const override { return size_; }

 private:
  uint8_t* const data_;
  const size_t size_;
};

// A large buffer in its own mapping (see kMappedBufferBytes), returned to
// the MappingCache when freed. Thread-safety: immutable.
class MappedBuffer final : public TensorBuffer {
 public:
  MappedBuffer(const Mapping& mapping, size_t size) : mapping_(mapping), size_(size) {}
  ~MappedBuffer() override { MappingCache::instance().give(mapping_); }
  MappedBuffer(const MappedBuffer&) = delete;
  MappedBuffer& operator=(const MappedBuffer&) = delete;

  uint8_t* data() const override { return mapping_.data; }
  size_t size() const override { return size_; }

 private:
  const Mapping mapping_;
  const size_t size_;
};

// Owns a std::string's heap block, so that bytes a parser already produced
// become tensor storage without a copy. Thread-safety: immutable.
class StringBuffer final : public TensorBuffer {
 public:
  explicit StringBuffer(std::string bytes) : bytes_(std::move(bytes)) {}

  uint8_t* data() const override { return reinterpret_cast<uint8_t*>(bytes_.data()); }
  size_t size() const override { return bytes_.size(); }

 private:
  mutable std::string bytes_;
};

}  // namespace

namespace internal {

std::shared_ptr<TensorBuffer> allocate_buffer(size_t bytes, bool zero_fill) {
  if (bytes >= kMappedBufferBytes) {
    std::optional<Mapping> reused = MappingCache::instance().take(bytes);
    if (reused.has_value()) {
      if (zero_fill) std::memset(reused->data, 0, bytes);
      return std::make_shared<MappedBuffer>(*reused, bytes);
    }
    // Fresh pages are zero already. A caller about to overwrite them all
    // gets them faulted in by one call rather than a trap per page (older
    // kernels refuse the advice; that is fine).
    const Mapping fresh = map_pages(bytes);
    if (!zero_fill) (void)madvise(fresh.data, bytes, MADV_POPULATE_WRITE);
    return std::make_shared<MappedBuffer>(fresh, bytes);
  }
  auto* data = static_cast<uint8_t*>(::operator new (bytes, std::align_val_t{kBufferAlignment}));
  if (zero_fill && bytes > 0) std::memset(data, 0, bytes);
  return std::make_shared<AlignedBuffer>(data, bytes);
}

}  // namespace internal

std::shared_ptr<TensorBuffer> TensorBuffer::allocate(size_t bytes) {
  return internal::allocate_buffer(bytes, /*zero_fill=*/true);
}

std::shared_ptr<TensorBuffer> TensorBuffer::adopt(std::string bytes) {
  return std::make_shared<StringBuffer>(std::move(bytes));
}

}  // namespace psflow

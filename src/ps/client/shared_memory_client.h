// A client's shared-memory session with one ps task (see
// rpc/shared_memory_region.h): the mapped region and the share-out of its
// payload bytes among the Execute calls in flight.
#ifndef PSFLOW_PS_CLIENT_SHARED_MEMORY_CLIENT_H_
#define PSFLOW_PS_CLIENT_SHARED_MEMORY_CLIENT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "ps/request/execute_batch.h"
#include "psflow/tensor.h"
#include "rpc/shared_memory_region.h"

namespace psflow::internal {

// Thread-safety: thread-safe.
class SharedMemoryClientSession {
 public:
  // Part of the region held by one call.
  struct Slice {
    uint64_t offset = 0;
    uint64_t bytes = 0;
  };

  SharedMemoryClientSession(std::string token, std::unique_ptr<SharedMemoryRegion> region);

  [[nodiscard]] const std::string& token() const { return token_; }
  [[nodiscard]] const SharedMemoryRegion& region() const { return *region_; }

  // A free slice of at least `bytes`; nullopt when none is free (the call
  // then sends its contents in the message).
  [[nodiscard]] std::optional<Slice> allocate(uint64_t bytes) ABSL_LOCKS_EXCLUDED(mu_);
  // The call that held `slice` got its answer: the ps is done with it.
  void release(Slice slice) ABSL_LOCKS_EXCLUDED(mu_);
  // The call that held `slice` ended without an answer (cancelled, timed
  // out, connection lost): the ps may still read or write it, so it is
  // never handed out again. Returns whether so much is retired that the
  // session should be replaced.
  [[nodiscard]] bool retire(Slice slice) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const std::string token_;
  const std::unique_ptr<SharedMemoryRegion> region_;
  absl::Mutex mu_;
  // Free ranges by offset, coalesced.
  std::map<uint64_t, uint64_t> free_ ABSL_GUARDED_BY(mu_);
  uint64_t retired_ ABSL_GUARDED_BY(mu_) = 0;
};

// The content bytes an op's answer had last time (0: not known).
using ResultHint = std::function<uint64_t(const VariableOpArgs&)>;

// Bytes of the region a call of `batch` can use: its shareable tensor
// contents, and room for its results (the size of `destinations` where
// known, else `hint`'s, else a default), each rounded up to the arena's
// alignment. 0 when nothing would go there.
[[nodiscard]] uint64_t shared_bytes_wanted(
    const ExecuteBatch& batch, const std::vector<std::shared_ptr<TensorBuffer>>& destinations,
    const ResultHint& hint = nullptr);

}  // namespace psflow::internal

#endif  // PSFLOW_PS_CLIENT_SHARED_MEMORY_CLIENT_H_

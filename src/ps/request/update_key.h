// The identity of one update a scheduled closure makes (v1::UpdateKey), by
// which parameter servers apply each update at most once (internal).
#ifndef PSFLOW_PS_REQUEST_UPDATE_KEY_H_
#define PSFLOW_PS_REQUEST_UPDATE_KEY_H_

#include <atomic>
#include <cstdint>
#include <utility>

namespace psflow::internal {

// Thread-safety: a value type.
struct UpdateKey {
  uint64_t session = 0;     // the coordinator's, random per coordinator
  uint64_t closure_id = 0;  // the same on every retry of the closure
  uint64_t sequence = 0;    // the update's position among the closure's
  friend bool operator==(const UpdateKey&, const UpdateKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const UpdateKey& k) {
    return H::combine(std::move(h), k.session, k.closure_id, k.sequence);
  }
};

// The keys of one run of a closure's updates, handed out in the order the
// run makes them. A retry of the closure that makes the same updates in the
// same order gets the same keys, so each ps applies each update once. The
// worker runtime makes one per call of a scheduled function and the
// WorkerContext hands it to the variables and optimizers the function uses
// (WorkerContext::variable, WorkerContext::bind); their requests carry it to
// the ps clients, which stamp every batch that changes state.
// Thread-safety: thread-safe. Updates that one run makes from several
// threads at once get keys in no fixed order, and so no exactly-once
// guarantee.
class UpdateKeys {
 public:
  UpdateKeys(uint64_t session, uint64_t closure_id) : session_(session), closure_id_(closure_id) {}
  UpdateKeys(const UpdateKeys&) = delete;
  UpdateKeys& operator=(const UpdateKeys&) = delete;

  // The key of the run's next update (consuming a sequence number).
  [[nodiscard]] UpdateKey next() {
    return UpdateKey{session_, closure_id_, next_sequence_.fetch_add(1, std::memory_order_relaxed)};
  }

 private:
  const uint64_t session_;
  const uint64_t closure_id_;
  std::atomic<uint64_t> next_sequence_{0};
};

}  // namespace psflow::internal

#endif  // PSFLOW_PS_REQUEST_UPDATE_KEY_H_

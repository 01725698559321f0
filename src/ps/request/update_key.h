// The identity of one update a scheduled closure makes (v1::UpdateKey), by
// which parameter servers apply each update at most once (internal).
#ifndef PSFLOW_PS_REQUEST_UPDATE_KEY_H_
#define PSFLOW_PS_REQUEST_UPDATE_KEY_H_

#include <cstdint>
#include <optional>
#include <utility>

namespace psflow {

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

// The closure this thread runs on a worker, if any: the worker runtime sets
// it around each function call, and variable clients stamp every request
// that updates variables with next_update_key(). Updates made in the same
// order on a retry get the same keys; a function that updates variables
// from several threads at once gets no exactly-once guarantee for those.
// Thread-safety: thread-local state; use on the thread that runs the call.
class ScopedUpdateContext {
 public:
  ScopedUpdateContext(uint64_t session, uint64_t closure_id);
  ~ScopedUpdateContext();
  ScopedUpdateContext(const ScopedUpdateContext&) = delete;
  ScopedUpdateContext& operator=(const ScopedUpdateContext&) = delete;

 private:
  struct State {
    uint64_t session = 0;
    uint64_t closure_id = 0;
    uint64_t next_sequence = 0;
    bool active = false;
  };
  State previous_;
  friend std::optional<UpdateKey> next_update_key();
  static State& current();
};

// The key of this thread's next update (consuming a sequence number), or
// nullopt outside a closure.
[[nodiscard]] std::optional<UpdateKey> next_update_key();

}  // namespace psflow

#endif  // PSFLOW_PS_REQUEST_UPDATE_KEY_H_

// The shared-memory sessions a ps task has handed out (OpenSharedMemory),
// each owned by the caller that opened it: another caller naming its token
// is told the session does not exist, as for an unknown one.
#ifndef PSFLOW_PS_SERVER_SHARED_MEMORY_SESSIONS_H_
#define PSFLOW_PS_SERVER_SHARED_MEMORY_SESSIONS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "rpc/peer_identity.h"
#include "rpc/shared_memory_region.h"

namespace psflow::internal {

struct SharedMemoryOptions {
  // Off: every OpenSharedMemory is refused (FAILED_PRECONDITION) and
  // clients keep sending payloads over gRPC.
  bool enabled = true;
  // Largest region one session gets; a larger request is granted this.
  size_t max_session_bytes = size_t{256} << 20;
  // Regions of all sessions together. Their pages take memory only once
  // touched, but a client may touch all of its region, so this bounds what
  // the sessions can cost the ps.
  size_t budget_bytes = size_t{2} << 30;
  int max_sessions = 256;
  // A session unused this long is dropped when another is opened (its
  // client, if alive, opens a new one on its next call).
  absl::Duration idle_timeout = absl::Minutes(10);
};

// Thread-safety: thread-safe.
class SharedMemorySessions {
 public:
  struct Opened {
    std::string token;
    std::shared_ptr<SharedMemoryRegion> region;
  };

  explicit SharedMemorySessions(SharedMemoryOptions options = {}) : options_(options) {}

  // A new session of about `bytes` (rounded to pages, at most
  // max_session_bytes) for `caller` on the host whose boot id is `boot_id`
  // in PID namespace `pid_namespace` (empty: not checked).
  // FAILED_PRECONDITION when sessions are off or the caller is on another
  // host or in another PID namespace; RESOURCE_EXHAUSTED when the budget
  // is spent.
  absl::StatusOr<Opened> open(const PeerIdentity& caller, std::string_view boot_id,
                              std::string_view pid_namespace, size_t bytes)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The region of `caller`'s session `token`; NOT_FOUND when there is no
  // such session for this caller. The region stays mapped while the
  // returned pointer lives, even if the session is closed meanwhile.
  absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> find(const PeerIdentity& caller,
                                                           std::string_view token)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Ends `caller`'s session `token`; NOT_FOUND when there is none.
  absl::Status close(const PeerIdentity& caller, std::string_view token) ABSL_LOCKS_EXCLUDED(mu_);

  [[nodiscard]] int size() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Session {
    std::string owner;
    std::shared_ptr<SharedMemoryRegion> region;
    absl::Time last_used;
  };
  void drop_idle(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SharedMemoryOptions options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Session> sessions_ ABSL_GUARDED_BY(mu_);
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace psflow::internal

#endif  // PSFLOW_PS_SERVER_SHARED_MEMORY_SESSIONS_H_

// The coordinator's per-worker handles and their release on the workers
// (internal): which iterators and resources are still held, by user
// handles or by closures that use them, and the batched disposal of the
// others (TFF's RemoteExecutor: handles queue their ids, full batches go
// out as one request; TF releases per-worker resources once no reference
// remains).
#ifndef PSFLOW_COORDINATOR_PER_WORKER_REGISTRY_H_
#define PSFLOW_COORDINATOR_PER_WORKER_REGISTRY_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "psflow/remote_value.h"
#include "worker/per_worker_lease.h"

namespace psflow::internal {

// Issues ids (a prefix of its own, so that it recognises them) and leases.
// When a lease ends (the last user handle and the last closure using it are
// gone) its id is queued for every worker; a thread of its own sends the
// queue, one DisposePerWorker request per worker, once `batch_size` ids
// wait, and whenever flush() asks. A worker that cannot be reached keeps
// its ids for the next send (at most kMaxKeptPerWorker; beyond, the oldest
// are dropped with a warning: a worker unreachable that long has most
// likely restarted, which lost them anyway).
//
// Thread-safety: thread-safe. Owned through a shared_ptr: leases hold it
// weakly and outlive it harmlessly.
class PerWorkerRegistry : public PerWorkerIssuer,
                          public std::enable_shared_from_this<PerWorkerRegistry> {
 public:
  // Releases `ids` on worker `worker` (a short, bounded call); OK when the
  // worker dropped them or never had them.
  using Send = absl::AnyInvocable<absl::Status(int worker, const std::vector<std::string>& ids)>;
  static constexpr size_t kMaxKeptPerWorker = 1 << 20;

  // `batch_size` >= 1. Call start() once the object is owned by a shared_ptr.
  PerWorkerRegistry(int num_workers, size_t batch_size, Send send);
  // stop() must have been called (or start() never).
  ~PerWorkerRegistry() override;
  PerWorkerRegistry(const PerWorkerRegistry&) = delete;
  PerWorkerRegistry& operator=(const PerWorkerRegistry&) = delete;

  void start();
  // Releases every id this registry issued, live ones included (no
  // closure can use them once the coordinator is gone, as TFF's
  // DisposeExecutor frees all), best effort; then ends the thread. `send`
  // is not called afterwards.
  void stop() ABSL_LOCKS_EXCLUDED(mu_);

  [[nodiscard]] Issued issue() override ABSL_LOCKS_EXCLUDED(mu_);

  // The leases of the handles of this registry inside `args` (so that a
  // closure keeps them while it is queued or runs); FAILED_PRECONDITION
  // naming the handle when one was released already. Handles of other
  // origins pass through without a lease.
  [[nodiscard]] absl::StatusOr<std::vector<std::shared_ptr<const PerWorkerLease>>> pin(
      const RemoteStructure& args) const ABSL_LOCKS_EXCLUDED(mu_);

  // Sends every queued release now and returns once each worker answered
  // or failed (join()). Returns at once when nothing is queued.
  void flush() ABSL_LOCKS_EXCLUDED(mu_);

  // Ids issued and not released, for tests.
  [[nodiscard]] size_t num_live() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void release(const std::string& id) ABSL_LOCKS_EXCLUDED(mu_);
  void loop() ABSL_LOCKS_EXCLUDED(mu_);
  bool batch_full_locked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool anything_queued_locked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int num_workers_;
  const size_t batch_size_;
  Send send_;
  // Every id issued here starts with it.
  const std::string prefix_;

  mutable absl::Mutex mu_;
  uint64_t next_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<std::string, std::weak_ptr<const PerWorkerLease>> live_ ABSL_GUARDED_BY(mu_);
  // Released ids not sent yet, per worker; and ids a send failed for.
  std::vector<std::vector<std::string>> queued_ ABSL_GUARDED_BY(mu_);
  std::vector<std::vector<std::string>> kept_ ABSL_GUARDED_BY(mu_);
  // flush(): rounds asked for and rounds done.
  uint64_t flushes_wanted_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t flushes_done_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ = false;

  std::thread thread_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_COORDINATOR_PER_WORKER_REGISTRY_H_

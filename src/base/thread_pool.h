// A fixed set of threads running closures in FIFO order.
#ifndef PSFLOW_BASE_THREAD_POOL_H_
#define PSFLOW_BASE_THREAD_POOL_H_

#include <deque>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"

namespace psflow::internal {

// Runs work that must not occupy gRPC's callback threads (they also drive
// the transport, so a handler busy for milliseconds stalls every other call
// of the process). Fixed size: the work is CPU- and memory-bound, so more
// threads than cores would only add switching.
// Thread-safety: schedule() may be called from any thread, including the
// pool's own; the destructor runs every closure already scheduled, then
// joins the threads (it must not run on one of them).
class ThreadPool {
 public:
  // `num_threads` <= 0 means one per core.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void schedule(absl::AnyInvocable<void()> work) ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] int num_threads() const { return static_cast<int>(threads_.size()); }

 private:
  void run();

  absl::Mutex mu_;
  std::deque<absl::AnyInvocable<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_BASE_THREAD_POOL_H_

// The pushes of one closure's steps, sent in the background (internal):
// a worker that overlaps communication with computation queues each
// layer's gradients here as the backward pass produces them and goes on
// computing.
#ifndef PSFLOW_TRAIN_PUSH_QUEUE_H_
#define PSFLOW_TRAIN_PUSH_QUEUE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace psflow::internal {

// Runs the queued pushes one at a time, in the order queued, on its own
// thread. One thread and FIFO order are what keep updates exactly-once: a
// bound optimizer hands its update keys out in the order its requests are
// made, so a retried closure that queues the same pushes in the same order
// sends them under the same keys. After a push fails the later ones are
// dropped unsent (the closure fails and its retry sends them).
// Thread-safety: thread-safe.
class PushQueue {
 public:
  using Push = std::function<absl::Status()>;

  PushQueue();
  // Waits for the queued pushes (they are not cancelled: a push already
  // handed to the ps cannot be taken back, and one dropped would be lost
  // from the step that made it).
  ~PushQueue();
  PushQueue(const PushQueue&) = delete;
  PushQueue& operator=(const PushQueue&) = delete;

  // Queues a push of training step `step` (non-decreasing across calls).
  void enqueue(int64_t step, Push push);
  // Waits until every queued push of steps <= `step` has been sent and
  // answered; returns the first error of any push so far.
  [[nodiscard]] absl::Status wait_through(int64_t step);
  // Waits for every queued push; the first error of any push so far.
  [[nodiscard]] absl::Status drain();

 private:
  struct Item {
    int64_t step;
    Push push;
  };
  void loop();
  bool done_through(int64_t step) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  absl::CondVar changed_;  // a push queued or finished, or stop_ set
  std::deque<Item> queue_ ABSL_GUARDED_BY(mu_);
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  int64_t running_step_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_PUSH_QUEUE_H_

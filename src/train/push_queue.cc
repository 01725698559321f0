#include "train/push_queue.h"

#include <limits>

namespace psflow::internal {

PushQueue::PushQueue() : thread_([this] { loop(); }) {}

PushQueue::~PushQueue() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    changed_.SignalAll();
  }
  thread_.join();
}

void PushQueue::enqueue(int64_t step, Push push) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(Item{step, std::move(push)});
  changed_.SignalAll();
}

bool PushQueue::done_through(int64_t step) const {
  if (running_ && running_step_ <= step) return false;
  return queue_.empty() || queue_.front().step > step;
}

absl::Status PushQueue::wait_through(int64_t step) {
  absl::MutexLock lock(&mu_);
  while (!done_through(step)) changed_.Wait(&mu_);
  return error_;
}

absl::Status PushQueue::drain() { return wait_through(std::numeric_limits<int64_t>::max()); }

void PushQueue::loop() {
  mu_.Lock();
  while (true) {
    while (queue_.empty() && !stop_) changed_.Wait(&mu_);
    if (queue_.empty()) break;  // stop_ and nothing left
    Item item = std::move(queue_.front());
    queue_.pop_front();
    if (!error_.ok()) {
      changed_.SignalAll();
      continue;  // dropped: the closure fails and its retry resends
    }
    running_ = true;
    running_step_ = item.step;
    mu_.Unlock();
    absl::Status status = item.push();
    mu_.Lock();
    running_ = false;
    if (!status.ok() && error_.ok()) error_ = std::move(status);
    changed_.SignalAll();
  }
  mu_.Unlock();
}

}  // namespace psflow::internal

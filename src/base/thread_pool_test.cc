#include "base/thread_pool.h"

#include <atomic>
#include <memory>
#include <thread>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

TEST(ThreadPoolTest, RunsEveryClosureOnItsThreads) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.num_threads(), 3);
  constexpr int kClosures = 1000;
  absl::BlockingCounter done(kClosures);
  std::atomic<int> on_caller{0};
  const std::thread::id caller = std::this_thread::get_id();
  for (int i = 0; i < kClosures; ++i) {
    pool.schedule([&] {
      if (std::this_thread::get_id() == caller) ++on_caller;
      done.DecrementCount();
    });
  }
  done.Wait();
  EXPECT_EQ(on_caller.load(), 0);
}

TEST(ThreadPoolTest, DestructorRunsWhatIsQueuedAndAcceptsMoveOnlyWork) {
  std::atomic<int> ran{0};
  absl::Notification release;
  {
    ThreadPool pool(1);
    pool.schedule([&] { release.WaitForNotification(); });
    for (int i = 0; i < 10; ++i) {
      pool.schedule([&ran, token = std::make_unique<int>(i)] { ran += 1 + 0 * *token; });
    }
    release.Notify();
  }
  EXPECT_EQ(ran.load(), 10);
}

TEST(ThreadPoolTest, DefaultSizeIsOnePerCore) {
  ThreadPool pool(0);
  EXPECT_GE(pool.num_threads(), 1);
}

}  // namespace
}  // namespace psflow::internal

// The queue on its own, with the test acting as the dispatcher.
#include "coordinator/closure_queue.h"

#include <memory>
#include <thread>

#include "absl/synchronization/notification.h"
#include "coordinator/coordinator_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::kNegativeCheck;
using ::psflow::internal::testing::kTestTimeout;

std::shared_ptr<Closure> closure(uint64_t id, RemoteStructure args = {}) {
  return std::make_shared<Closure>(id, "f", std::move(args));
}

class ClosureQueueTest : public ::testing::Test {
 protected:
  std::shared_ptr<ClosureQueue> make_queue(int64_t bound) {
    return std::make_shared<ClosureQueue>(bound, [this] { ++first_errors_; });
  }
  int first_errors_ = 0;
};

TEST_F(ClosureQueueTest, FifoOrderAndCounts) {
  auto queue = make_queue(0);
  for (uint64_t id = 1; id <= 3; ++id) ASSERT_TRUE(queue->put(closure(id)).ok());
  EXPECT_EQ(queue->num_queued(), 3);
  std::shared_ptr<Closure> first = queue->get();
  EXPECT_EQ(first->id(), 1u);
  EXPECT_EQ(queue->num_in_flight(), 1);
  EXPECT_FALSE(*queue->done());
  queue->put_back(first);  // To the tail.
  EXPECT_EQ(queue->get()->id(), 2u);
  EXPECT_EQ(queue->get()->id(), 3u);
  std::shared_ptr<Closure> again = queue->get();
  EXPECT_EQ(again->id(), 1u);
  EXPECT_EQ(queue->num_in_flight(), 3);
  queue->stop();
  queue->put_back(again);  // After stop: cancelled.
  EXPECT_EQ(again->output().fetch().status().code(), absl::StatusCode::kCancelled);
}

TEST_F(ClosureQueueTest, WaitingClosuresCountTowardsTheBoundAndPutBackMayExceedIt) {
  auto queue = make_queue(2);
  auto input = std::make_shared<internal::RemoteValueState>(99, "input");
  ASSERT_TRUE(queue->put(closure(1)).ok());
  ASSERT_TRUE(queue->put(closure(2, RemoteValue(input))).ok());  // Waits.
  EXPECT_EQ(queue->num_queued(), 2);

  absl::Notification third_put;
  std::thread putter([&] {
    EXPECT_TRUE(queue->put(closure(3)).ok());
    third_put.Notify();
  });
  EXPECT_FALSE(third_put.WaitForNotificationWithTimeout(kNegativeCheck));
  std::shared_ptr<Closure> running = queue->get();  // Frees a slot.
  EXPECT_EQ(running->id(), 1u);
  ASSERT_TRUE(third_put.WaitForNotificationWithTimeout(kTestTimeout));
  putter.join();
  EXPECT_EQ(queue->num_queued(), 2);
  queue->put_back(running);  // Never blocks, even over the bound.
  EXPECT_EQ(queue->num_queued(), 3);

  // The waiting closure joins the tail once its input is READY.
  input->set_result(Structure(5));
  EXPECT_EQ(queue->get()->id(), 3u);
  EXPECT_EQ(queue->get()->id(), 1u);
  std::shared_ptr<Closure> dependent = queue->get();
  EXPECT_EQ(dependent->id(), 2u);
  EXPECT_EQ(dependent->resolve_args(0), Structure(5));
}

TEST_F(ClosureQueueTest, FirstFailureCancelsEverythingQueuedAndIsReportedOnce) {
  auto queue = make_queue(0);
  auto never = std::make_shared<internal::RemoteValueState>(99, "input");
  ASSERT_TRUE(queue->put(closure(1)).ok());
  ASSERT_TRUE(queue->put(closure(2)).ok());
  std::shared_ptr<Closure> failing = queue->get();
  std::shared_ptr<Closure> other = queue->get();
  std::shared_ptr<Closure> queued = closure(3);
  std::shared_ptr<Closure> waiting = closure(4, RemoteValue(never));
  // Fed by the failing closure: gets an input error, not CANCELLED.
  std::shared_ptr<Closure> fed = closure(5, RemoteStructure::list({failing->output()}));
  ASSERT_TRUE(queue->put(queued).ok());
  ASSERT_TRUE(queue->put(waiting).ok());
  ASSERT_TRUE(queue->put(fed).ok());

  queue->mark_failed(failing, absl::DataLossError("first"));
  EXPECT_EQ(first_errors_, 1);
  EXPECT_EQ(queue->num_queued(), 0);
  EXPECT_EQ(queued->output().fetch().status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(waiting->output().fetch().status().code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(is_closure_input_error(fed->output().fetch().status()));

  // `other` is still in flight: a report must wait for it.
  absl::Notification reported;
  absl::Status report;
  std::thread joiner([&] {
    report = queue->wait();
    reported.Notify();
  });
  EXPECT_FALSE(reported.WaitForNotificationWithTimeout(kNegativeCheck));
  queue->mark_failed(other, absl::InternalError("second"));  // Absorbed.
  EXPECT_EQ(first_errors_, 1);
  ASSERT_TRUE(reported.WaitForNotificationWithTimeout(kTestTimeout));
  joiner.join();
  EXPECT_EQ(report, absl::DataLossError("first"));
  EXPECT_TRUE(queue->wait().ok());
  EXPECT_TRUE(*queue->done());
  EXPECT_EQ(other->output().fetch().status(), absl::InternalError("second"));
}

}  // namespace
}  // namespace psflow::internal

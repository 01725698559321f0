#include "base/stop_request.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

TEST(StopRequestTest, TheFirstRequestWinsAndReturnsTheActivity) {
  StopRequest stop;
  EXPECT_FALSE(stop.requested());
  EXPECT_TRUE(stop.reason().ok());
  ASSERT_TRUE(stop.set_activity({"waiting for ps 0", /*at_once=*/true}));
  std::optional<StopActivity> seen = stop.request(absl::CancelledError("first"));
  ASSERT_TRUE(seen.has_value());
  EXPECT_EQ(seen->what, "waiting for ps 0");
  EXPECT_TRUE(seen->at_once);
  EXPECT_FALSE(stop.request(absl::CancelledError("second")).has_value());
  EXPECT_TRUE(stop.requested());
  EXPECT_EQ(stop.reason(), absl::CancelledError("first"));
  // Work that starts after the stop is told to stop instead; what it does
  // then is still recorded, for messages.
  EXPECT_FALSE(stop.set_activity({"saving a checkpoint", false}));
  EXPECT_EQ(stop.activity().what, "saving a checkpoint");
}

TEST(StopRequestTest, HandlersRunOnceEitherWayAndNeverAfterTheirCallbackIsGone) {
  StopRequest stop;
  std::vector<std::string> calls;
  StopRequest::Callback before =
      stop.on_stop([&](const absl::Status& reason) { calls.push_back("before"); });
  {
    StopRequest::Callback dropped =
        stop.on_stop([&](const absl::Status& reason) { calls.push_back("dropped"); });
  }
  (void)stop.request(absl::CancelledError("interrupted"));
  StopRequest::Callback after = stop.on_stop(
      [&](const absl::Status& reason) { calls.push_back(std::string(reason.message())); });
  EXPECT_EQ(calls, (std::vector<std::string>{"before", "interrupted"}));
}

TEST(StopRequestTest, WaitForReturnsOnceRequestedFromAnotherThread) {
  StopRequest stop;
  EXPECT_FALSE(stop.wait_for(absl::ZeroDuration()));
  std::thread requester([&] { (void)stop.request(absl::CancelledError("interrupted")); });
  EXPECT_TRUE(stop.wait_for(absl::Seconds(60)));
  requester.join();
}

}  // namespace
}  // namespace psflow::internal

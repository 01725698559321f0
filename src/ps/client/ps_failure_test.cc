#include "ps/client/ps_failure.h"

#include "gtest/gtest.h"
#include "ps/request/lost_state.h"

namespace psflow::internal {
namespace {

absl::Status flagged(absl::Status status) {
  status.SetPayload(kPsHoldsNothingPayload, absl::Cord("1"));
  return status;
}

TEST(PsFailureTest, OnlyAFlaggedNotFoundBecomesUnavailableKeepingItsMessage) {
  const absl::Status lost =
      as_ps_failure(flagged(absl::NotFoundError("/job:ps/replica:0/task:1 (a:1): no variable")));
  EXPECT_EQ(lost.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(lost.message(), "/job:ps/replica:0/task:1 (a:1): no variable");
  EXPECT_TRUE(lost.GetPayload(kPsHoldsNothingPayload).has_value());
  // A variable missing from a ps that holds others is the caller's mistake.
  EXPECT_EQ(as_ps_failure(absl::NotFoundError("no variable")).code(), absl::StatusCode::kNotFound);
  // The flag means nothing on other codes.
  EXPECT_EQ(as_ps_failure(flagged(absl::InvalidArgumentError("x"))).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(as_ps_failure(absl::OkStatus()).ok());
}

}  // namespace
}  // namespace psflow::internal

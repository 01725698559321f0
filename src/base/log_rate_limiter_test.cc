#include "base/log_rate_limiter.h"

#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

TEST(LogRateLimiterTest, BoundsLinesPerSiteAndWindowAndCountsTheDropped) {
  LogRateLimiter limiter(/*max_lines=*/3, absl::Seconds(1));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(limiter.admit("a.cc", 1, t0).allowed);
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(limiter.admit("a.cc", 1, t0).allowed);
  // Another site has its own budget.
  EXPECT_TRUE(limiter.admit("a.cc", 2, t0).allowed);
  EXPECT_TRUE(limiter.admit("b.cc", 1, t0).allowed);
  // The next window says how many were dropped, once.
  const LogRateLimiter::Decision next = limiter.admit("a.cc", 1, t0 + absl::Seconds(1));
  EXPECT_TRUE(next.allowed);
  EXPECT_EQ(next.dropped, 100);
  EXPECT_EQ(limiter.admit("a.cc", 1, t0 + absl::Seconds(1)).dropped, 0);
}

}  // namespace
}  // namespace psflow::internal

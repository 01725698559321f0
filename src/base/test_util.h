// Helpers for tests only (include from *_test.cc files).
#ifndef PSFLOW_BASE_TEST_UTIL_H_
#define PSFLOW_BASE_TEST_UTIL_H_

#include <utility>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace psflow::internal {

// The value of `s`, failing the test when it is not OK (a non-fatal
// failure naming the status, then the bad access throws, which fails the
// test even where ASSERT_* cannot be used).
template <typename T>
T ok_value(absl::StatusOr<T> s) {
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(s).value();
}

}  // namespace psflow::internal

#endif  // PSFLOW_BASE_TEST_UTIL_H_

#include "rpc/task_status.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

int count_lines(const std::string& text) {
  int lines = 0;
  for (char c : text) lines += c == '\n' ? 1 : 0;
  return lines;
}

TEST(TaskStatusTest, ErrorsAreLoggedTheFirstTimeThenAtPowersOfTwo) {
  TaskStatus status("ps", 0);
  ::testing::internal::CaptureStderr();
  status.note_error("Execute", absl::OkStatus());
  for (int i = 0; i < 9; ++i) {
    status.note_error("Execute", absl::InvalidArgumentError(absl::StrCat("bad shape ", i)));
  }
  status.note_error("Execute", absl::NotFoundError("no variable named 'w'"));
  const std::string log = ::testing::internal::GetCapturedStderr();
  // The 1st, 2nd, 4th and 8th INVALID_ARGUMENT, and the first NOT_FOUND.
  EXPECT_EQ(count_lines(log), 5) << log;
  EXPECT_THAT(log, HasSubstr("/job:ps/replica:0/task:0: Execute failed: INVALID_ARGUMENT: "
                             "bad shape 0"));
  EXPECT_THAT(log, HasSubstr("has failed with INVALID_ARGUMENT 8 times"));
  EXPECT_THAT(log, HasSubstr("the latest: bad shape 7"));
  EXPECT_THAT(log, HasSubstr("Execute failed: NOT_FOUND: no variable named 'w'"));
  EXPECT_THAT(log, Not(HasSubstr("bad shape 8")));
}

TEST(TaskStatusTest, AClientsBytesCannotForgeLogLinesOrGrowTheTable) {
  TaskStatus status("worker", 1);
  ::testing::internal::CaptureStderr();
  status.note_error("RunFunction 'a\nI 00:00:00 forged'",
                    absl::InvalidArgumentError("line one\nline two"));
  for (size_t i = 0; i < TaskStatus::kMaxErrorKinds + 50; ++i) {
    status.note_error(absl::StrCat("RunFunction 'f", i, "'"), absl::NotFoundError("unknown"));
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(log, HasSubstr("RunFunction 'a\\nI 00:00:00 forged' failed: INVALID_ARGUMENT: "
                             "line one\\nline two"));
  // One line per kind up to the bound, then the rest counted together.
  EXPECT_THAT(log, HasSubstr("other calls failed: NOT_FOUND"));
  EXPECT_THAT(log, HasSubstr("other calls has failed with NOT_FOUND 32 times"));
  EXPECT_THAT(log, Not(HasSubstr(absl::StrCat("'f", TaskStatus::kMaxErrorKinds, "'"))));
  for (absl::string_view line : absl::StrSplit(log, '\n', absl::SkipEmpty())) {
    EXPECT_THAT(line, HasSubstr("/job:worker/replica:0/task:1")) << line;
  }
}

}  // namespace
}  // namespace psflow::internal

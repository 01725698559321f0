#include "train/progress.h"

#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

std::string read_all(std::FILE* file) {
  std::rewind(file);
  std::string out;
  char buffer[512];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), file)) > 0;) out.append(buffer, n);
  return out;
}

TEST(FormatEtaTest, MinutesAndSecondsOrHours) {
  EXPECT_EQ(format_eta(absl::Seconds(0)), "0:00");
  EXPECT_EQ(format_eta(absl::Seconds(65)), "1:05");
  EXPECT_EQ(format_eta(absl::Seconds(3723)), "1:02:03");
  EXPECT_EQ(format_eta(absl::Seconds(-3)), "0:00");
}

// A log's line every tenth of the epoch ends with the time left in the
// epoch and, with epochs after it, in the run.
TEST(ProgressBarTest, ALogLineShowsTheEtaOfTheEpochAndTheRun) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    ProgressBar bar(file, /*interactive=*/false, "epoch 1/3", 10, /*run_steps_after=*/20);
    bar.update(5, 0.25);
  }
  {
    ProgressBar last(file, /*interactive=*/false, "epoch 3/3", 10);
    last.update(10, 0.25);
  }
  const std::string out = read_all(file);
  std::fclose(file);
  EXPECT_THAT(out, HasSubstr("epoch 1/3 ["));
  EXPECT_THAT(out, HasSubstr("5/10 steps"));
  EXPECT_THAT(out, testing::ContainsRegex(
                       "loss 0.2500 ETA [0-9]+:[0-9][0-9] \\(run [0-9]+:[0-9][0-9]\\)\n"));
  // The last epoch has no run ETA beside its own.
  EXPECT_THAT(out, testing::ContainsRegex("10/10 steps .* ETA 0:00\n"));
}

// The step observer sees every update, drawn or not.
TEST(ProgressBarTest, TellsTheStepObserver) {
  struct Seen final : StepObserver {
    void on_steps(int64_t done, double loss) override {
      last_done = done;
      last_loss = loss;
      ++calls;
    }
    int64_t last_done = 0;
    double last_loss = 0;
    int calls = 0;
  } seen;
  ProgressBar bar(nullptr, false, "epoch 1/1", 100, 0, &seen);
  for (int i = 1; i <= 7; ++i) bar.update(i, 0.5);
  EXPECT_EQ(seen.calls, 7);
  EXPECT_EQ(seen.last_done, 7);
  EXPECT_DOUBLE_EQ(seen.last_loss, 0.5);
}

}  // namespace
}  // namespace psflow::internal

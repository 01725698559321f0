// Resuming past damaged checkpoints and from a chosen one, with variables in
// this process: nothing deleted or overwritten, retention and numbering
// after a fallback.
#include "train/resume_checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "checkpoint/checkpoint_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/strategy.h"
#include "strategy/strategy_test_util.h"

namespace psflow::internal {
namespace {

namespace fs = std::filesystem;
using ::psflow::internal::testing::read_all;
using ::psflow::internal::testing::TempDir;
using ::psflow::internal::testing::value_or_fail;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> entries_of(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// One variable w (its value is the step it was saved at) and an optimizer
// whose iterations number the checkpoints, in this process.
struct LocalRun {
  LocalRun() {
    w = value_or_fail(create_variable(Tensor::scalar<float>(0), {.name = "w"}));
    OptimizerConfig sgd;
    optimizer = value_or_fail(Optimizer::create(sgd, 0.1));
  }
  CheckpointManager manager(const std::string& dir) const {
    return value_or_fail(CheckpointManager::create(
        value_or_fail(Checkpoint::create({{"w", w}}, *optimizer)), dir, 3));
  }
  void set_step(int64_t step) const {
    ASSERT_TRUE(w.assign(Tensor::scalar<float>(static_cast<float>(step))).ok());
    ASSERT_TRUE(optimizer->iterations().assign(Tensor::scalar<int64_t>(step)).ok());
  }
  float w_value() const { return value_or_fail(w.read_value()).scalar_value<float>(); }

  ShardedVariable w;
  std::optional<Optimizer> optimizer;
};

void corrupt(const std::string& file) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(-5, std::ios::end);
  f.put('\x7f');
}

// Captures what restore_resume_checkpoint prints.
struct Output {
  Output() : file(std::tmpfile()) {}
  ~Output() { std::fclose(file); }
  std::string text() const {
    std::rewind(file);
    std::string out;
    for (int c = std::fgetc(file); c != EOF; c = std::fgetc(file)) out.push_back(char(c));
    return out;
  }
  std::FILE* file;
};

TEST(ResumeCheckpointTest, FallsBackPastDamagedCheckpointsAndKeepsThem) {
  TempDir tmp;
  const std::string dir = tmp / "checkpoints";
  LocalRun first;
  CheckpointManager manager = first.manager(dir);
  for (int64_t step : {100, 200, 300}) {
    first.set_step(step);
    ASSERT_TRUE(manager.save().ok());
  }
  corrupt(dir + "/ckpt-300/chief-0.safetensors");
  fs::remove(dir + "/ckpt-200/chief-0.safetensors");  // incomplete
  fs::create_directories(dir + "/ckpt-250");          // no index.json
  const std::string damaged_bytes = read_all(dir + "/ckpt-300/chief-0.safetensors");

  LocalRun second;
  CheckpointManager resumed = second.manager(dir);
  // TF's semantics stay for the public API: the latest, damaged or not.
  EXPECT_EQ(resumed.latest_checkpoint(), dir + "/ckpt-300");
  EXPECT_FALSE(resumed.restore_or_initialize().ok());
  Output out;
  EXPECT_EQ(value_or_fail(restore_resume_checkpoint(resumed, "", out.file)), dir + "/ckpt-100");
  EXPECT_EQ(second.w_value(), 100);
  const std::string said = out.text();
  EXPECT_THAT(said, HasSubstr(absl::StrCat("skipping checkpoint ", dir, "/ckpt-300: ", dir,
                                           "/ckpt-300/chief-0.safetensors: CRC32 is")));
  EXPECT_THAT(said, HasSubstr(absl::StrCat("skipping checkpoint ", dir, "/ckpt-200: ")));
  EXPECT_THAT(said, HasSubstr(absl::StrCat("skipping checkpoint ", dir,
                                           "/ckpt-250: it has no index.json")));
  EXPECT_THAT(said,
              HasSubstr(absl::StrCat("renamed ", dir, "/ckpt-300 to ", dir, "/ckpt-300.corrupt")));
  // Kept for inspection, byte for byte, and no longer a checkpoint.
  EXPECT_EQ(read_all(dir + "/ckpt-300.corrupt/chief-0.safetensors"), damaged_bytes);
  EXPECT_THAT(resumed.checkpoints(), ElementsAre(dir + "/ckpt-100"));
  EXPECT_EQ(resumed.latest_checkpoint(), dir + "/ckpt-100");

  // Training on saves ckpt-200 .. ckpt-500 anew: none replaces a damaged
  // one, and max_to_keep (3) counts the usable ones only.
  for (int64_t step : {200, 300, 400, 500}) {
    second.set_step(step);
    ASSERT_TRUE(resumed.save().ok());
  }
  EXPECT_THAT(entries_of(dir), ElementsAre("ckpt-200.corrupt", "ckpt-250.corrupt", "ckpt-300",
                                           "ckpt-300.corrupt", "ckpt-400", "ckpt-500"));
  EXPECT_EQ(read_all(dir + "/ckpt-300.corrupt/chief-0.safetensors"), damaged_bytes);

  // Damaged again at the same step: a second name beside the first.
  corrupt(dir + "/ckpt-500/chief-0.safetensors");
  LocalRun third;
  CheckpointManager again = third.manager(dir);
  EXPECT_EQ(value_or_fail(restore_resume_checkpoint(again, "", nullptr)), dir + "/ckpt-400");
  corrupt(dir + "/ckpt-400/chief-0.safetensors");
  corrupt(dir + "/ckpt-300/chief-0.safetensors");
  Output none;
  EXPECT_EQ(value_or_fail(restore_resume_checkpoint(again, "", none.file)), std::nullopt);
  EXPECT_THAT(none.text(), HasSubstr("no intact checkpoint left in " + dir +
                                     ": training starts from the initial values"));
  EXPECT_THAT(entries_of(dir),
              ElementsAre("ckpt-200.corrupt", "ckpt-250.corrupt", "ckpt-300.corrupt",
                          "ckpt-300.corrupt-2", "ckpt-400.corrupt", "ckpt-500.corrupt"));
}

TEST(ResumeCheckpointTest, AnIntactCheckpointOfAnotherModelIsAnErrorNotDamage) {
  TempDir tmp;
  const std::string dir = tmp / "checkpoints";
  LocalRun first;
  CheckpointManager manager = first.manager(dir);
  first.set_step(100);
  ASSERT_TRUE(manager.save().ok());
  ShardedVariable other = value_or_fail(create_variable(Tensor::scalar<float>(0), {.name = "u"}));
  CheckpointManager wrong = value_or_fail(
      CheckpointManager::create(value_or_fail(Checkpoint::create({{"u", other}})), dir, 3));
  absl::StatusOr<std::optional<std::string>> resumed =
      restore_resume_checkpoint(wrong, "", nullptr);
  ASSERT_FALSE(resumed.ok());
  EXPECT_THAT(resumed.status().message(), HasSubstr("cannot resume from " + dir + "/ckpt-100"));
  EXPECT_THAT(resumed.status().message(), HasSubstr("no variable 'u'"));
  EXPECT_THAT(entries_of(dir), ElementsAre("ckpt-100"));
}

TEST(ResumeCheckpointTest, ResumesFromAChosenCheckpointAndSetsTheNewerOnesAside) {
  TempDir tmp;
  const std::string dir = tmp / "checkpoints";
  LocalRun first;
  CheckpointManager manager = first.manager(dir);
  for (int64_t step : {100, 200, 300}) {
    first.set_step(step);
    ASSERT_TRUE(manager.save().ok());
  }
  corrupt(dir + "/ckpt-200/chief-0.safetensors");
  LocalRun second;
  CheckpointManager resumed = second.manager(dir);

  absl::StatusOr<std::optional<std::string>> missing =
      restore_resume_checkpoint(resumed, "ckpt-999", nullptr);
  ASSERT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_THAT(missing.status().message(),
              HasSubstr("--checkpoint 'ckpt-999': there is no checkpoint directory " + dir +
                        "/ckpt-999; the checkpoints in " + dir +
                        " are ckpt-100, ckpt-200 (not "
                        "usable: " +
                        dir + "/ckpt-200/chief-0.safetensors: CRC32 is"));
  EXPECT_THAT(missing.status().message(), HasSubstr("), ckpt-300"));

  absl::StatusOr<std::optional<std::string>> damaged =
      restore_resume_checkpoint(resumed, "ckpt-200", nullptr);
  ASSERT_TRUE(absl::IsInvalidArgument(damaged.status())) << damaged.status();
  EXPECT_THAT(damaged.status().message(), HasSubstr("--checkpoint 'ckpt-200': " + dir +
                                                    "/ckpt-200 is not a valid checkpoint ("));
  EXPECT_THAT(entries_of(dir), ElementsAre("ckpt-100", "ckpt-200", "ckpt-300"));

  Output out;
  EXPECT_EQ(value_or_fail(restore_resume_checkpoint(resumed, "ckpt-100", out.file)),
            dir + "/ckpt-100");
  EXPECT_EQ(second.w_value(), 100);
  EXPECT_THAT(out.text(),
              HasSubstr("renamed " + dir + "/ckpt-300 to " + dir + "/ckpt-300.superseded"));
  EXPECT_THAT(entries_of(dir),
              ElementsAre("ckpt-100", "ckpt-200.superseded", "ckpt-300.superseded"));

  // A path outside the run's directory works as well.
  LocalRun third;
  CheckpointManager other = third.manager(tmp / "other");
  EXPECT_EQ(value_or_fail(restore_resume_checkpoint(other, dir + "/ckpt-100", nullptr)),
            dir + "/ckpt-100");
  EXPECT_EQ(third.w_value(), 100);
}

}  // namespace
}  // namespace psflow::internal

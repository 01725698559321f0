#include "train/resume_check.h"

#include <filesystem>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "train/run_files.h"
#include "train/run_record.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

// A run directory trained with `trained` (batch 128 by default) whose
// latest checkpoint is ckpt-<steps>.
std::string trained_run(const std::string& name, int64_t steps, TrainOptions trained = {}) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/checkpoints/ckpt-" + std::to_string(steps));
  Invocation inv;
  inv.options_json = invocation_options_json(trained, TrainSummary());
  const nlohmann::json record = {{"history", nlohmann::json::array()},
                                 {"invocations", invocations_json({inv})}};
  EXPECT_TRUE(write_run_file(dir, kRunRecordFile, record.dump()).ok());
  return dir;
}

TrainOptions batch_128() {
  TrainOptions o;
  o.batch_size = 128;
  return o;
}

TEST(ResumeCheckTest, AnotherBatchSizeIsRefusedNamingBothAndTheFix) {
  TrainOptions o = batch_128();
  o.run_dir = trained_run("psflow-resume-batch", 3750, batch_128());
  o.batch_size = 32;
  const absl::Status status = check_resume_options(o);
  ASSERT_TRUE(absl::IsInvalidArgument(status)) << status;
  EXPECT_THAT(status.message(), HasSubstr(o.run_dir + " (ckpt-3750) was trained with "
                                                      "--batch-size 128"));
  EXPECT_THAT(status.message(), HasSubstr("cannot resume with --batch-size 32"));
  EXPECT_THAT(status.message(),
              HasSubstr("resume with --batch-size 128, or use another --run-dir"));
}

TEST(ResumeCheckTest, TheModelOptimizerDataAndSeedMayNotChangeEither) {
  const std::string dir = trained_run("psflow-resume-fixed", 468, batch_128());
  TrainOptions o = batch_128();
  o.run_dir = dir;
  TrainOptions model = o;
  model.model = "logreg";
  EXPECT_THAT(check_resume_options(model).message(), HasSubstr("resume with --model mlp"));
  TrainOptions optimizer = o;
  optimizer.optimizer = "sgd";
  EXPECT_THAT(check_resume_options(optimizer).message(), HasSubstr("resume with --optimizer adam"));
  TrainOptions data = o;
  data.data_dir = "/elsewhere";
  EXPECT_THAT(check_resume_options(data).message(), HasSubstr("resume without --data-dir"));
  TrainOptions seed = o;
  seed.seed = 3;
  EXPECT_THAT(check_resume_options(seed).message(), HasSubstr("resume with --seed 0"));
}

TEST(ResumeCheckTest, EpochsRateAndClusterMayChange) {
  TrainOptions o = batch_128();
  o.run_dir = trained_run("psflow-resume-free", 468, batch_128());
  o.epochs = 9;
  o.learning_rate = 0.01;
  o.lr_schedule = "constant";
  o.steps_per_execution = 20;
  o.partitioner = "fixed:2";
  o.ps_recovery = true;
  EXPECT_TRUE(check_resume_options(o).ok()) << check_resume_options(o);
}

// Without trained steps in a checkpoint there is nothing to resume: a new
// start may take any options.
TEST(ResumeCheckTest, NoTrainedCheckpointNoCheck) {
  TrainOptions o = batch_128();
  o.run_dir = trained_run("psflow-resume-ckpt0", 0, batch_128());
  o.batch_size = 32;
  EXPECT_TRUE(check_resume_options(o).ok());
  o.run_dir = ::testing::TempDir() + "/psflow-resume-nothing-there";
  EXPECT_TRUE(check_resume_options(o).ok());
}

}  // namespace
}  // namespace psflow::internal

// The long chaos suite (`make chaos`): several epochs with a worker killed
// every two seconds; several epochs with a ps killed three times, with
// recovery on; a worker paused (SIGSTOP) for 30 s.
#include <filesystem>
#include <fstream>
#include <string>

#include "chaos_common.h"
#include "nlohmann/json.hpp"
#include "train/wide_deep.h"

namespace psflow::internal {
namespace {

// Five epochs of `steps_per_epoch` with the ps killed three times: each
// kill recovered, some steps rolled back, and every step in the end
// trained once (the optimizer counted each exactly once).
void expect_three_recoveries_and_every_step_once(const testing::ChaosRun& run,
                                                 int64_t steps_per_epoch) {
  EXPECT_EQ(run.kills, 3);
  EXPECT_EQ(run.summary->ps_recoveries, 3);
  EXPECT_GT(run.summary->rolled_back_steps, 0);
  EXPECT_EQ(run.summary->steps, 5 * steps_per_epoch);
  EXPECT_EQ(run.summary->optimizer_iterations, 5 * steps_per_epoch);
}

TEST(ChaosTest, FiveEpochsWithAWorkerKilledEveryTwoSeconds) {
  TrainOptions options;  // The demo's defaults: mlp, batch 32, adam, cosine.
  testing::ChaosRun run = testing::train_while_killing_workers(options, absl::Seconds(2));
  ASSERT_TRUE(run.summary.ok()) << run.summary.status();
  EXPECT_GE(run.kills, 5);
  const int64_t steps = 5 * (60000 / 32);
  EXPECT_EQ(run.summary->steps, steps);
  EXPECT_EQ(run.summary->optimizer_iterations, steps);
  // The fault-free run reaches 0.885.
  EXPECT_GT(run.summary->test_accuracy, 0.87);
}

TEST(ChaosTest, FiveEpochsWithAPsKilledThreeTimesAndRecovered) {
  TrainOptions options;  // The demo's defaults.
  options.run_dir = ::testing::TempDir() + "/psflow-chaos-ps-kills";
  std::filesystem::remove_all(options.run_dir);
  const int64_t steps_per_epoch = 60000 / 32;
  // Each kill comes 2 s into epochs 2, 3 and 4 (about a third of an epoch).
  testing::ChaosRun run = testing::train_while_killing_ps(
      options, testing::epoch_checkpoints(steps_per_epoch, 1, 3), absl::Seconds(2));
  ASSERT_TRUE(run.summary.ok()) << run.summary.status();
  expect_three_recoveries_and_every_step_once(run, steps_per_epoch);
  EXPECT_GT(run.summary->test_accuracy, 0.87);
}

// The same three ps kills in a wide & deep run of `psflow train --model
// wide_deep`'s defaults (200,000 generated examples, batch 256, Adagrad):
// sharded embedding tables and their accumulators come back from each
// checkpoint and the run ends as a fault-free one would.
TEST(ChaosTest, WideDeepFiveEpochsWithAPsKilledThreeTimesAndRecovered) {
  TrainOptions options;
  options.model = kWideDeepModel;
  options.epochs = 5;
  options.batch_size = kWideDeepDefaultBatchSize;
  options.optimizer = kWideDeepDefaultOptimizer;
  options.learning_rate = kWideDeepDefaultLearningRate;
  options.out = nullptr;
  options.run_dir = ::testing::TempDir() + "/psflow-chaos-wide-deep-ps-kills";
  std::filesystem::remove_all(options.run_dir);
  const int64_t steps_per_epoch = 200000 / kWideDeepDefaultBatchSize;
  // Each kill comes 1 s into epochs 2, 3 and 4.
  testing::ChaosRun run =
      testing::train_while_killing_ps(options, testing::epoch_checkpoints(steps_per_epoch, 1, 3),
                                      absl::Seconds(1), testing::wide_deep_train());
  ASSERT_TRUE(run.summary.ok()) << run.summary.status();
  expect_three_recoveries_and_every_step_once(run, steps_per_epoch);
  // A fault-free run of this configuration ends at test AUC 0.757 and
  // accuracy 0.688; after one epoch it has 0.740 and 0.675.
  EXPECT_GT(run.summary->test_accuracy, 0.68);
  std::ifstream summary_file(options.run_dir + "/summary.json");
  const nlohmann::json summary = nlohmann::json::parse(summary_file);
  EXPECT_GT(summary["test_auc"].get<double>(), 0.75) << summary.dump(2);
  EXPECT_EQ(summary["ps_recoveries"], 3);
}

// A paused worker (SIGSTOP: the process is there, its socket open, but it
// answers nothing) is noticed by the channel keepalive (about 20 s), its
// closure runs on the other worker, and when it resumes (SIGCONT) the
// updates of the closure it was running are not applied a second time.
TEST(ChaosTest, AWorkerPausedLongerThanTheKeepaliveIsWorkedAround) {
  TrainOptions options;  // The demo's defaults, 3 epochs.
  options.epochs = 3;
  options.out = nullptr;
  testing::PauseRun paused =
      testing::train_while_pausing_a_worker(options, absl::Seconds(2), absl::Seconds(30));
  ASSERT_TRUE(paused.run.summary.ok()) << paused.run.summary.status();
  ASSERT_EQ(paused.run.kills, 1);
  EXPECT_EQ(paused.paused_worker_restarts, 0);
  const int64_t steps = 3 * (60000 / 32);
  EXPECT_EQ(paused.run.summary->steps, steps);
  EXPECT_EQ(paused.run.summary->optimizer_iterations, steps);
  EXPECT_GT(paused.run.summary->test_accuracy, 0.86);
}

}  // namespace
}  // namespace psflow::internal

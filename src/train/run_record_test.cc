#include "train/run_record.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "train/run_files.h"

namespace psflow::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

EpochMetrics epoch(int number, int64_t steps, int64_t end_step, int invocation) {
  EpochMetrics m;
  m.epoch = number;
  m.steps = steps;
  m.examples = steps * 32;
  m.seconds = 2.5;
  m.train = {0.5, 0.8, {{"auc", 0.75}}};
  m.test = {0.6, 0.7, {{"auc", 0.7}}};
  m.end_step = end_step;
  m.invocation = invocation;
  return m;
}

// What summary_json writes of a record (the part load_run_record reads).
std::string record_json(const TrainSummary& s) {
  return nlohmann::json({{"history", history_json(s.history)},
                         {"invocations", invocations_json(s.invocations)},
                         {"ps_recoveries", s.ps_recoveries},
                         {"rolled_back_steps", s.rolled_back_steps}})
      .dump();
}

TEST(RunRecordTest, ARecordWrittenIsReadBack) {
  const std::string dir = fresh_dir("psflow-run-record-round-trip");
  TrainSummary s;
  s.history = {epoch(1, 100, 100, 0), epoch(2, 100, 200, 1)};
  Invocation first;
  first.started = "2026-01-02T03:04:05Z";
  first.ended = kInvocationStopped;
  first.reason = "interrupted by SIGTERM";
  first.options_json = R"({"batch_size":32,"model":"mlp"})";
  first.epochs = {1};
  first.steps = 150;
  first.wall_seconds = 9.5;
  Invocation second;
  second.first_epoch = 2;
  second.first_step = 150;
  second.epochs = {2};
  s.invocations = {first, second};
  s.ps_recoveries = 1;
  s.rolled_back_steps = 7;
  ASSERT_TRUE(write_run_file(dir, kRunRecordFile, record_json(s)).ok());

  absl::StatusOr<std::optional<TrainSummary>> read = load_run_record(dir);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  const TrainSummary& r = **read;
  ASSERT_EQ(r.history.size(), 2u);
  EXPECT_EQ(r.history[1].epoch, 2);
  EXPECT_EQ(r.history[1].end_step, 200);
  EXPECT_EQ(r.history[1].invocation, 1);
  EXPECT_EQ(r.history[1].examples, 3200);
  EXPECT_DOUBLE_EQ(r.history[0].train.loss, 0.5);
  EXPECT_EQ(r.history[0].test.find("auc"), 0.7);
  EXPECT_EQ(r.history[0].train.find("auc"), 0.75);
  ASSERT_EQ(r.invocations.size(), 2u);
  EXPECT_EQ(r.invocations[0].started, first.started);
  EXPECT_EQ(r.invocations[0].ended, kInvocationStopped);
  EXPECT_EQ(r.invocations[0].reason, first.reason);
  EXPECT_EQ(nlohmann::json::parse(r.invocations[0].options_json)["batch_size"], 32);
  EXPECT_THAT(r.invocations[0].epochs, ElementsAre(1));
  EXPECT_EQ(r.invocations[0].steps, 150);
  EXPECT_EQ(r.invocations[1].ended, kInvocationRunning);
  EXPECT_EQ(r.invocations[1].first_step, 150);
  EXPECT_EQ(r.ps_recoveries, 1);
  EXPECT_EQ(r.rolled_back_steps, 7);
  EXPECT_EQ(last_invocation_options(r), nlohmann::json::object());
  EXPECT_EQ(last_invocation_options(TrainSummary()), nlohmann::json::object());
}

TEST(RunRecordTest, NoRecordIsNullopt) {
  absl::StatusOr<std::optional<TrainSummary>> read =
      load_run_record(fresh_dir("psflow-run-record-none"));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->has_value());
}

TEST(RunRecordTest, ABrokenRecordIsNamedWithTheFix) {
  const std::string dir = fresh_dir("psflow-run-record-broken");
  ASSERT_TRUE(write_run_file(dir, kRunRecordFile, "{\"history\": 3").ok());
  absl::StatusOr<std::optional<TrainSummary>> read = load_run_record(dir);
  ASSERT_FALSE(read.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(read.status()));
  EXPECT_THAT(read.status().message(), HasSubstr(dir + "/run_record.json"));
  EXPECT_THAT(read.status().message(), HasSubstr("move it away"));
}

// A summary.json of a run made before run_record.json: its top-level
// options become one complete invocation's, its epochs' end steps follow
// from the steps it restored.
TEST(RunRecordTest, AnOlderSummaryIsReadAsOneCompleteInvocation) {
  const std::string dir = fresh_dir("psflow-run-record-legacy");
  const nlohmann::json legacy = {
      {"model", "mlp"},
      {"batch_size", 128},
      {"optimizer", "adam"},
      {"seed", 0},
      {"restored_steps", 468},
      {"steps", 936},
      {"history", {{{"epoch", 2}, {"steps", 468}, {"train_loss", 0.4}, {"seconds", 3.0}}}}};
  ASSERT_TRUE(write_run_file(dir, kSummaryFile, legacy.dump()).ok());
  absl::StatusOr<std::optional<TrainSummary>> read = load_run_record(dir);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  ASSERT_EQ((*read)->history.size(), 1u);
  EXPECT_EQ((*read)->history[0].end_step, 936);
  ASSERT_EQ((*read)->invocations.size(), 1u);
  EXPECT_EQ((*read)->invocations[0].ended, kInvocationComplete);
  EXPECT_THAT((*read)->invocations[0].epochs, ElementsAre(2));
  EXPECT_EQ(last_invocation_options(**read)["batch_size"], 128);
}

TEST(RunRecordTest, CarryOnKeepsTheEpochsTheCheckpointHoldsAndMarksTheLostInvocation) {
  TrainSummary record;
  record.history = {epoch(1, 100, 100, 0), epoch(2, 100, 200, 0), epoch(3, 100, 300, 1)};
  Invocation stopped;
  stopped.ended = kInvocationStopped;
  Invocation killed;  // still "running": it never said how it ended
  record.invocations = {stopped, killed};
  record.ps_recoveries = 2;

  TrainSummary run;
  run.ps_recoveries = 0;
  carry_on(record, /*restored_steps=*/250, run);  // ckpt-250: epochs 1 and 2, half of 3
  ASSERT_EQ(run.history.size(), 2u);
  EXPECT_EQ(run.history.back().epoch, 2);
  ASSERT_EQ(run.invocations.size(), 2u);
  EXPECT_EQ(run.invocations[0].ended, kInvocationStopped);
  EXPECT_EQ(run.invocations[1].ended, kInvocationLost);
  EXPECT_EQ(run.ps_recoveries, 2);

  // No checkpoint: the run starts again, its epochs are not its model's.
  TrainSummary fresh;
  carry_on(record, 0, fresh);
  EXPECT_TRUE(fresh.history.empty());
  EXPECT_EQ(fresh.invocations.size(), 2u);
}

TEST(RunRecordTest, InvocationOptionsHoldEveryOptionThatShapesTheRun) {
  TrainOptions o;
  o.steps_per_execution = 10;
  o.partitioner = "fixed:2";
  o.data_dir = "/data";
  o.ps_recovery = true;
  TrainSummary where;
  where.num_ps = 2;
  where.num_workers = 3;
  const nlohmann::json j = nlohmann::json::parse(invocation_options_json(o, where));
  for (const char* key :
       {"model", "strategy", "epochs", "batch_size", "optimizer", "learning_rate", "lr_schedule",
        "steps_per_execution", "seed", "data_dir", "partitioner", "ps_recovery",
        "ps_recovery_timeout_seconds", "max_ps_recoveries", "num_ps", "num_workers", "overlap"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["steps_per_execution"], 10);
  EXPECT_EQ(j["partitioner"], "fixed:2");
  EXPECT_EQ(j["num_workers"], 3);
  EXPECT_FALSE(j.contains("replicas"));  // parameter servers
  o.strategy = kMirroredStrategy;
  o.replicas = 4;
  EXPECT_EQ(nlohmann::json::parse(invocation_options_json(o, where))["replicas"], 4);
}

}  // namespace
}  // namespace psflow::internal

// `psflow train --model dlrm` as a real process (chief, 1 ps and 2 worker
// processes) on a small generated Criteo file written by `psflow datagen
// criteo`: the dynamic table fills on the ps, and the held-out AUC shows the
// model learned.
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test_process.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::test_environment;
using ::psflow::internal::testing::TestProcess;
using ::testing::HasSubstr;

std::string run_to_end(const std::vector<std::string>& argv, absl::Duration timeout) {
  TestProcess p(argv, test_environment());
  EXPECT_GT(p.pid(), 0);
  const std::string out = p.read_stdout(absl::Now() + timeout);
  EXPECT_EQ(p.wait_exit_code(absl::Now() + absl::Seconds(30)), 0)
      << out << p.read_stderr(absl::Now() + absl::Seconds(1));
  return out;
}

TEST(DlrmCliTest, TrainsOnAGeneratedCriteoFile) {
  const std::string dir = ::testing::TempDir() + "/psflow-dlrm-cli";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string data = dir + "/day_0.tsv";
  const std::string out1 = run_to_end(
      {PSFLOW_BINARY_PATH, "datagen", "criteo", "--rows", "60000", "--seed", "3", "--out", data},
      absl::Seconds(60));
  EXPECT_THAT(out1, HasSubstr("wrote 60000 Criteo-shaped rows"));
  const std::string run_dir = dir + "/run";
  const std::string out =
      run_to_end({PSFLOW_BINARY_PATH, "train", "--model", "dlrm", "--data-dir", data, "--num-ps",
                  "1", "--num-workers", "2", "--epochs", "3", "--batch-size", "256",
                  "--steps-per-execution", "10", "--run-dir", run_dir, "--insecure"},
                 absl::Seconds(120));
  EXPECT_THAT(out, HasSubstr("54000 train / 6000 test examples"));
  EXPECT_THAT(out, HasSubstr("epoch 3/3: train loss"));
  std::ifstream file(run_dir + "/summary.json");
  ASSERT_TRUE(file.good()) << "no summary.json in " << run_dir << "\n" << out;
  const nlohmann::json s = nlohmann::json::parse(file);
  EXPECT_EQ(s["model"], "dlrm");
  EXPECT_EQ(s["steps"], 3 * (54000 / 256));
  EXPECT_EQ(s["train_examples"], 54000);
  EXPECT_EQ(s["test_examples"], 6000);
  // The table holds a row per distinct key looked up: many thousands
  // (26 columns of power-law values), each created on the ps.
  EXPECT_GT(s["table"]["rows"].get<int64_t>(), 20000) << s.dump(2);
  EXPECT_EQ(s["table"]["rows"], s["table"]["created"]);
  // Both workers' steps applied one sparse update each to the one ps.
  EXPECT_EQ(s["table"]["applies"], s["steps"]);
  // Three epochs of this data reach about 0.72 (0.75 with 200,000 rows);
  // a model that learns nothing stays at 0.5 and at the log loss of the
  // click rate (about 0.65).
  EXPECT_GT(s["test_auc"].get<double>(), 0.67) << s.dump(2);
  EXPECT_LT(s["test_loss"].get<double>(), 0.62) << s.dump(2);

  // A rerun with one more epoch on 2 ps resumes from the last checkpoint,
  // the table's rows included (re-hashed over 2 ps): the rows are back and
  // the AUC goes on from where it was (embeddings started afresh would
  // fall back towards 0.5 after one epoch).
  const std::string resumed =
      run_to_end({PSFLOW_BINARY_PATH, "train", "--model", "dlrm", "--data-dir", data, "--num-ps",
                  "2", "--num-workers", "2", "--epochs", "4", "--batch-size", "256",
                  "--steps-per-execution", "10", "--run-dir", run_dir, "--insecure"},
                 absl::Seconds(120));
  EXPECT_THAT(resumed, HasSubstr("resuming from"));
  EXPECT_THAT(resumed, HasSubstr("starting at epoch 4"));
  std::ifstream again(run_dir + "/summary.json");
  const nlohmann::json r = nlohmann::json::parse(again);
  EXPECT_GE(r["table"]["rows"].get<int64_t>(), s["table"]["rows"].get<int64_t>()) << r.dump(2);
  EXPECT_GT(r["test_auc"].get<double>(), s["test_auc"].get<double>() - 0.01) << r.dump(2);
  std::filesystem::remove_all(dir);
}

TEST(DlrmCliTest, ABadLineNamesFileLineAndField) {
  const std::string dir = ::testing::TempDir() + "/psflow-dlrm-bad";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string line = "1";
  for (int i = 0; i < 13; ++i) line += "\t1";
  for (int i = 0; i < 26; ++i) line += "\tab";
  {
    std::ofstream f(dir + "/bad.tsv");
    for (int i = 0; i < 100; ++i) f << line << "\n";
    f << "0\t1\t2\n";
  }
  TestProcess p(
      {PSFLOW_BINARY_PATH, "train", "--model", "dlrm", "--data-dir", dir + "/bad.tsv", "--num-ps",
       "1", "--num-workers", "1", "--epochs", "1", "--run-dir", dir + "/run", "--insecure"},
      test_environment());
  ASSERT_GT(p.pid(), 0);
  const std::string out = p.read_stdout(absl::Now() + absl::Seconds(60));
  const std::string err = p.read_stderr(absl::Now() + absl::Seconds(5));
  EXPECT_NE(p.wait_exit_code(absl::Now() + absl::Seconds(30)), 0);
  EXPECT_THAT(err + out, HasSubstr(dir + "/bad.tsv:101: 3 tab-separated fields"));
  // --bad-lines skip trains on the good lines and counts the bad one.
  const std::string skipped =
      run_to_end({PSFLOW_BINARY_PATH, "train", "--model", "dlrm", "--data-dir", dir + "/bad.tsv",
                  "--bad-lines", "skip", "--num-ps", "1", "--num-workers", "1", "--epochs", "1",
                  "--batch-size", "16", "--run-dir", dir + "/run-skip", "--insecure"},
                 absl::Seconds(60));
  EXPECT_THAT(skipped, HasSubstr("90 train / 10 test examples; 1 bad line(s) skipped"));
  std::ifstream file(dir + "/run-skip/summary.json");
  ASSERT_TRUE(file.good()) << skipped;
  EXPECT_EQ(nlohmann::json::parse(file)["skipped_lines"], 1);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace psflow::internal

// `psflow train --overlap on`: pushes and reads overlapped with computation
// in real ps and worker processes, against the same run with overlap off.
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test_process.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::test_environment;
using ::psflow::internal::testing::TestProcess;

nlohmann::json train(const std::string& overlap) {
  const std::string run_dir = ::testing::TempDir() + "/psflow-overlap-" + overlap;
  std::filesystem::remove_all(run_dir);
  TestProcess psflow({PSFLOW_BINARY_PATH, "train", "--num-ps", "2", "--num-workers", "2",
                      "--epochs", "2", "--batch-size", "128", "--steps-per-execution", "10",
                      "--overlap", overlap, "--run-dir", run_dir},
                     test_environment());
  EXPECT_GT(psflow.pid(), 0);
  const std::string out = psflow.read_stdout(absl::Now() + absl::Seconds(400));
  EXPECT_EQ(psflow.wait_exit_code(absl::Now() + absl::Seconds(30)), 0)
      << out << psflow.read_stderr(absl::Now() + absl::Seconds(1));
  std::ifstream file(run_dir + "/summary.json");
  EXPECT_TRUE(file.good()) << "no summary.json in " << run_dir;
  return file.good() ? nlohmann::json::parse(file) : nlohmann::json::object();
}

// Two epochs of the mlp on 2 ps and 2 workers, 10 steps per closure: with
// overlap on, every step applies exactly once (iterations == steps), the
// loss falls, and the test accuracy is that of the run without overlap
// (about 0.84 here; a read that missed more than its own last step, or a
// lost or doubled layer's update, moves it by more than the tolerance).
TEST(OverlapCliTest, OverlapTrainsAsWellAsWithout) {
  const nlohmann::json on = train("on");
  const nlohmann::json off = train("off");
  ASSERT_TRUE(on.contains("history") && off.contains("history")) << on.dump(2) << off.dump(2);
  EXPECT_EQ(on["steps"], 2 * (60000 / 128));
  EXPECT_EQ(on["optimizer_iterations"], on["steps"]);
  EXPECT_EQ(off["optimizer_iterations"], off["steps"]);
  EXPECT_EQ(on["invocations"][0]["options"]["overlap"], true);
  EXPECT_EQ(off["invocations"][0]["options"]["overlap"], false);
  ASSERT_EQ(on["history"].size(), 2u);
  const double first = on["history"][0]["train_loss"].get<double>();
  const double second = on["history"][1]["train_loss"].get<double>();
  EXPECT_LT(first, 0.9 * 2.302585) << "no better than chance (ln 10) in epoch 1";
  EXPECT_LT(second, first) << "the loss did not fall";
  const double acc_on = on["test_accuracy"].get<double>();
  const double acc_off = off["test_accuracy"].get<double>();
  EXPECT_GT(acc_on, 0.8);
  EXPECT_NEAR(acc_on, acc_off, 0.015) << "overlap on " << acc_on << ", off " << acc_off;
}

}  // namespace
}  // namespace psflow::internal

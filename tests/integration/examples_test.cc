// The programs in examples/, run as users run them: each is its own
// coordinator and, through psflow/main.h, its own ps and worker tasks.
#include <csignal>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_process.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::test_environment;
using ::psflow::internal::testing::TestProcess;
using ::psflow::internal::testing::wait_for_process_exit;
using ::testing::HasSubstr;

struct ExampleRun {
  int exit_code = -1;
  std::string out;
  std::string err;
};

ExampleRun run_example(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {PSFLOW_CUSTOM_TRAINING_LOOP_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  TestProcess example(argv, test_environment());
  ExampleRun run;
  if (example.pid() <= 0) return run;
  run.out = example.read_stdout(absl::Now() + absl::Seconds(240));
  run.exit_code = example.wait_exit_code(absl::Now() + absl::Seconds(30));
  run.err = example.read_stderr(absl::Now() + absl::Seconds(5));
  return run;
}

// The largest error of the learned parameters, from the last line.
double parameter_error(const std::string& out) {
  const std::string marker = "largest parameter error ";
  const size_t at = out.rfind(marker);
  if (at == std::string::npos) return 1e9;
  double error = 1e9;
  if (!absl::SimpleAtod(out.substr(at + marker.size(), out.find('\n', at) - at - marker.size()),
                        &error)) {
    return 1e9;
  }
  return error;
}

// Linear regression on a local cluster of the example binary itself: a ps
// killed at step 150 costs the steps since the checkpoint at 100, every
// step applies once in the end, and the weights are learned. A rerun on the
// same directory resumes from the last checkpoint and has nothing to do.
TEST(ExamplesTest, CustomTrainingLoopLearnsSurvivesAKilledPsAndResumes) {
  const std::string dir = ::testing::TempDir() + "/psflow-example-custom-loop";
  std::filesystem::remove_all(dir);
  const ExampleRun first = run_example(
      {"--steps", "300", "--kill-ps-at", "150", "--num-workers", "2", "--checkpoint-dir", dir});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_THAT(first.out, HasSubstr("w: 2 parts on /job:ps/replica:0/task:0/device:CPU:0 and "
                                   "/job:ps/replica:0/task:1/device:CPU:0"));
  EXPECT_THAT(first.out, HasSubstr("killing ps 1 at step 150"));
  EXPECT_THAT(first.out, HasSubstr("ps recovery 1: /job:ps/replica:0/task:1 restarted"));
  EXPECT_THAT(first.out, HasSubstr(absl::StrCat("restored all 2 ps tasks from ", dir,
                                                "/ckpt-100 (100 steps)")));
  EXPECT_THAT(first.out, HasSubstr("done: 300 optimizer steps"));
  EXPECT_THAT(first.out, HasSubstr("1 ps recoveries"));
  EXPECT_LT(parameter_error(first.out), 0.01) << first.out;

  const ExampleRun rerun = run_example({"--steps", "300", "--checkpoint-dir", dir});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.out << rerun.err;
  EXPECT_THAT(rerun.out, HasSubstr(absl::StrCat("resumed from ", dir, "/ckpt-300 at step 300")));
  EXPECT_THAT(rerun.out, HasSubstr("done: 300 optimizer steps"));
  EXPECT_THAT(rerun.out, HasSubstr("0 ps recoveries"));
  EXPECT_LT(parameter_error(rerun.out), 0.01) << rerun.out;
  std::filesystem::remove_all(dir);
}

// What the --tf-config-demo printed about its run: the folder and every
// process it started.
struct DemoRun {
  std::string folder;
  std::vector<int> pids;  // The ps and worker tasks, and the chief.
};

DemoRun parse_demo(const std::string& out) {
  DemoRun demo;
  for (size_t at = 0; at < out.size();) {
    const size_t end = std::min(out.find('\n', at), out.size());
    const std::string line = out.substr(at, end - at);
    at = end + 1;
    const std::string folder = "tf-config demo: folder ";
    if (line.starts_with(folder)) demo.folder = line.substr(folder.size());
    const size_t pid_at = line.find(" pid ");
    if (!line.starts_with("tf-config demo: ") || pid_at == std::string::npos) continue;
    int pid = 0;
    const size_t digits = pid_at + 5;
    if (absl::SimpleAtoi(line.substr(digits, line.find(':', digits) - digits), &pid)) {
      demo.pids.push_back(pid);
    }
  }
  return demo;
}

// No process the demo started is left, and its folder is gone.
void expect_cleaned_up(const DemoRun& demo, const std::string& out) {
  EXPECT_FALSE(demo.folder.empty()) << out;
  EXPECT_FALSE(std::filesystem::exists(demo.folder)) << demo.folder;
  EXPECT_EQ(demo.pids.size(), 5u) << out;  // 2 ps, 2 workers, the chief.
  for (int pid : demo.pids) {
    EXPECT_TRUE(wait_for_process_exit(pid, absl::Now() + absl::Seconds(5))) << "pid " << pid;
  }
}

// The guide's TF_CONFIG path (docs/custom_model.md): ps and worker tasks of
// the example binary started as `<binary> server` with their TF_CONFIG, the
// binary as their chief with its own; it trains, the loss falls, and the
// tasks and the temporary folder are gone afterwards.
TEST(ExamplesTest, CustomTrainingLoopRunsAsTheChiefOfATfConfigCluster) {
  const ExampleRun run = run_example({"--tf-config-demo", "--steps", "200",
                                      "--steps-per-checkpoint", "50", "--demo-timeout", "200"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr(R"(`<program> server` with TF_CONFIG='{"cluster": )"));
  EXPECT_THAT(run.out, HasSubstr(R"("task": {"type": "chief", "index": 0}})"));
  EXPECT_THAT(run.out, HasSubstr("chief of the TF_CONFIG cluster: 2 ps, 2 workers"));
  EXPECT_THAT(run.out, HasSubstr("loss fell from"));
  EXPECT_THAT(run.out, HasSubstr("done: 200 optimizer steps"));
  EXPECT_LT(parameter_error(run.out), 0.05) << run.out;
  EXPECT_THAT(run.out, HasSubstr("tf-config demo: stopped the 4 tasks"));
  expect_cleaned_up(parse_demo(run.out), run.out);
}

// A demo stopped midway (SIGTERM while the chief trains) still stops every
// task and the chief and removes its folder; it exits 128+SIGTERM.
TEST(ExamplesTest, AnInterruptedTfConfigDemoCleansUp) {
  TestProcess example({PSFLOW_CUSTOM_TRAINING_LOOP_PATH, "--tf-config-demo", "--steps", "1000000",
                       "--steps-per-checkpoint", "20"},
                      test_environment());
  ASSERT_GT(example.pid(), 0);
  std::string out;
  const absl::Time deadline = absl::Now() + absl::Seconds(120);
  // Bounded in lines as in time: the demo prints a handful before training.
  for (int lines = 0; lines < 1000; ++lines) {
    std::optional<std::string> line = example.read_line(deadline);
    if (!line.has_value()) break;
    out += *line + "\n";
    if (line->starts_with("step ")) break;
  }
  ASSERT_THAT(out, HasSubstr("\nstep ")) << out << example.read_stderr(absl::Now());
  ASSERT_TRUE(example.signal(SIGTERM));
  out += example.read_stdout(absl::Now() + absl::Seconds(60));
  EXPECT_EQ(example.wait_exit_code(absl::Now() + absl::Seconds(30)), 128 + SIGTERM) << out;
  EXPECT_THAT(out, HasSubstr("tf-config demo: signal 15, stopping the chief"));
  expect_cleaned_up(parse_demo(out), out);
}

// Started as a task with a bad role, the program says why and exits 2, as
// `psflow server` does.
TEST(ExamplesTest, ABadTaskRoleIsAUsageError) {
  TestProcess example(
      {PSFLOW_CUSTOM_TRAINING_LOOP_PATH, "server"},
      test_environment(
          {{"TF_CONFIG",
            R"({"cluster": {"ps": ["127.0.0.1:1"]}, "task": {"type": "ps", "index": 3}})"}}));
  ASSERT_GT(example.pid(), 0);
  const std::string err = example.read_stderr(absl::Now() + absl::Seconds(30));
  EXPECT_EQ(example.wait_exit_code(absl::Now() + absl::Seconds(30)), 2) << err;
  EXPECT_THAT(err, HasSubstr("No task with index 3 in job 'ps'"));
}

}  // namespace
}  // namespace psflow::internal

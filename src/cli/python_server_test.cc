// `psflow server --python MODULE`: which command lines become the Python
// task, and what a failed exec reports. The exec itself is exercised by
// the Python tests (LocalCluster(python_module=...) starts every task
// through it).
#include "cli/python_server.h"

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

std::optional<int> run(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return exec_python_server_if_asked(static_cast<int>(args.size()), argv.data());
}

// Any exec in these tests fails at once instead of replacing the test.
class PythonServerTest : public ::testing::Test {
 protected:
  void SetUp() override { setenv("PSFLOW_PYTHON", "/nonexistent/python3", 1); }
  void TearDown() override {
    unsetenv("PSFLOW_PYTHON");
    unsetenv("TF_CONFIG");
  }
};

TEST_F(PythonServerTest, OtherCommandLinesAreLeftAlone) {
  EXPECT_EQ(run({"psflow", "server", "--job", "worker", "--task", "0"}), std::nullopt);
  EXPECT_EQ(run({"psflow", "train", "--python", "m"}), std::nullopt);
  EXPECT_EQ(run({"psflow"}), std::nullopt);
  // After "--" nothing is a flag.
  EXPECT_EQ(run({"psflow", "server", "--", "--python", "m"}), std::nullopt);
}

TEST_F(PythonServerTest, PythonFlagExecsTheInterpreterAndReportsAFailure) {
  EXPECT_EQ(run({"psflow", "server", "--python", "my_model.steps", "--job", "worker"}), 1);
  EXPECT_EQ(run({"psflow", "server", "--job", "worker", "--python=my_model.steps"}), 1);
}

TEST_F(PythonServerTest, APsStaysThisProcess) {
  EXPECT_EQ(run({"psflow", "server", "--job", "ps", "--python", "m"}), std::nullopt);
  EXPECT_EQ(run({"psflow", "server", "--python=m", "--job=ps"}), std::nullopt);
  constexpr char kCluster[] = R"("cluster":{"ps":["127.0.0.1:1"],"worker":["127.0.0.1:2"]})";
  setenv("TF_CONFIG", (std::string("{") + kCluster + R"(,"task":{"type":"ps","index":0}})").c_str(),
         1);
  EXPECT_EQ(run({"psflow", "server", "--python", "m"}), std::nullopt);
  // --job overrides TF_CONFIG, as in the server.
  EXPECT_EQ(run({"psflow", "server", "--job", "worker", "--python", "m"}), 1);
  setenv("TF_CONFIG",
         (std::string("{") + kCluster + R"(,"task":{"type":"worker","index":0}})").c_str(), 1);
  EXPECT_EQ(run({"psflow", "server", "--python", "m"}), 1);
}

}  // namespace
}  // namespace psflow::internal

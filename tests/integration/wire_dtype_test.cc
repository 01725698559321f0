// bfloat16 on the wire against real ps processes: a strategy's variables
// pulled and pushed as bfloat16 (the ps keeping float32), the option
// carried in handles, pulls landing in reused buffers, and `psflow train
// --wire-dtype bfloat16` learning.
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "base/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "ps/client/variable_client.h"
#include "psflow/cluster_resolver.h"
#include "psflow/optimizer.h"
#include "psflow/partitioners.h"
#include "psflow/strategy.h"
#include "strategy/client_lookup.h"
#include "suite_cluster.h"
#include "test_process.h"

namespace psflow::internal {
namespace {

using testing::test_environment;
using testing::TestProcess;

// Not bfloat16 values: rounding them shows.
constexpr float kOffGrid = 1.0f + 0x1p-10f;

class WireDTypeIntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { start_suite_cluster(cluster_, 2, 1, PSFLOW_BINARY_PATH); }
  static void TearDownTestSuite() { stop_suite_cluster(cluster_); }
  void SetUp() override { ASSERT_NE(cluster_, nullptr); }

  static std::unique_ptr<ParameterServerStrategy> make_strategy(WireDType wire) {
    ParameterServerStrategyOptions options;
    options.wire_dtype = wire;
    return ok_value(
        ParameterServerStrategy::create(SimpleClusterResolver(cluster_->cluster_spec(), "chief", 0),
                                        ok_value(fixed_shards_partitioner(2)), options));
  }

  // Fresh gRPC clients, as a worker process makes.
  static VariableClientLookup worker_lookup() {
    std::vector<std::shared_ptr<VariableClient>> clients;
    for (int i = 0; i < 2; ++i) {
      clients.push_back(make_grpc_variable_client(
          ok_value(cluster_->cluster_spec().task_address("ps", i)), task_name("ps", i)));
    }
    return ps_client_lookup(std::move(clients));
  }

  static LocalCluster* cluster_;
};

LocalCluster* WireDTypeIntegrationTest::cluster_ = nullptr;

TEST_F(WireDTypeIntegrationTest, BFloat16PullsAndPushesKeepFloat32OnThePs) {
  auto strategy = make_strategy(WireDType::kBFloat16);
  StrategyScope scope = strategy->scope();
  const Tensor initial = Tensor::from_vector<float>({kOffGrid, 2, -kOffGrid, 4}, {4, 1});
  ShardedVariable v = ok_value(create_variable(initial, {.name = "w"}));
  ShardedVariable exact =
      ok_value(create_variable(initial, {.name = "exact", .wire_dtype = WireDType::kFloat32}));
  ASSERT_EQ(v.variables().size(), 2u);
  EXPECT_EQ(v.handle().wire_dtype, WireDType::kBFloat16);
  EXPECT_EQ(exact.handle().wire_dtype, WireDType::kFloat32);

  std::vector<Tensor> read = ok_value(read_values({v, exact}));
  EXPECT_EQ(read[0], Tensor::from_vector<float>({1, 2, -1, 4}, {4, 1}));
  EXPECT_EQ(read[1], initial);

  // The handle carries the wire dtype to workers; a float32 copy of it
  // reads the master value, which kept its low bits.
  VariableHandle handle = ok_value(VariableHandle::from_structure(v.handle().to_structure()));
  EXPECT_EQ(handle.wire_dtype, WireDType::kBFloat16);
  const VariableClientLookup lookup = worker_lookup();
  ShardedVariable on_worker = ok_value(ShardedVariable::from_handle(handle, lookup));
  EXPECT_EQ(ok_value(read_values({on_worker}))[0], read[0]);
  handle.wire_dtype = WireDType::kFloat32;
  ShardedVariable float_view = ok_value(ShardedVariable::from_handle(handle, lookup));
  EXPECT_EQ(ok_value(read_values({float_view}))[0], initial);

  // A gradient of kOffGrid arrives as 1.0; SGD applies it to float32.
  OptimizerConfig sgd;
  sgd.kind = OptimizerConfig::Kind::kSgd;
  Optimizer optimizer = ok_value(Optimizer::create(sgd, 1.0));
  const Tensor grad = Tensor::from_vector<float>({kOffGrid, 0, 0, 0.5f}, {4, 1});
  ASSERT_TRUE(optimizer.apply_gradients({{grad, on_worker}, {grad, exact}}).ok());
  EXPECT_EQ(ok_value(read_values({float_view}))[0],
            Tensor::from_vector<float>({kOffGrid - 1, 2, -kOffGrid, 3.5f}, {4, 1}));
  EXPECT_EQ(ok_value(read_values({exact}))[0],
            Tensor::from_vector<float>({0, 2, -kOffGrid, 3.5f}, {4, 1}));
}

TEST_F(WireDTypeIntegrationTest, PullsLandInTheSameBufferStepAfterStep) {
  for (const WireDType wire : {WireDType::kFloat32, WireDType::kBFloat16}) {
    auto strategy = make_strategy(wire);
    StrategyScope scope = strategy->scope();
    Tensor initial(DType::kFloat32, {64, 8});
    for (int64_t i = 0; i < initial.num_elements(); ++i) {
      initial.mutable_flat<float>()[i] = static_cast<float>(i % 64);  // exact in bfloat16
    }
    ShardedVariable v = ok_value(create_variable(initial, {.name = "reused"}));
    ASSERT_EQ(v.variables().size(), 2u);  // both shards land in one buffer
    const void* first = nullptr;
    {
      std::vector<Tensor> step1 = ok_value(read_values({v}));
      EXPECT_EQ(step1[0], initial);
      first = step1[0].raw_data();
    }
    std::vector<Tensor> step2 = ok_value(read_values({v}));
    EXPECT_EQ(step2[0].raw_data(), first) << wire_dtype_name(wire);
    EXPECT_EQ(step2[0], initial);
    // While a step still holds its value, the next pull goes elsewhere and
    // the held value does not change.
    Tensor ones(DType::kFloat32, {64, 8});
    for (float& x : ones.mutable_flat<float>()) x = 1;
    ASSERT_TRUE(v.assign_add(ones).ok());
    std::vector<Tensor> step3 = ok_value(read_values({v}));
    EXPECT_NE(step3[0].raw_data(), first);
    EXPECT_EQ(step3[0].flat<float>()[5], 6.0f);
    EXPECT_EQ(step2[0], initial);
  }
}

// The training loop with --wire-dtype bfloat16: the loss falls from epoch
// to epoch and the test accuracy is far above chance.
TEST(WireDTypeCliTest, TrainingWithBFloat16Learns) {
  const std::string run_dir = ::testing::TempDir() + "/psflow-train-bf16";
  std::filesystem::remove_all(run_dir);
  TestProcess psflow(
      {PSFLOW_BINARY_PATH, "train", "--num-ps", "1", "--num-workers", "2", "--epochs", "2",
       "--batch-size", "128", "--wire-dtype", "bfloat16", "--run-dir", run_dir},
      test_environment());
  ASSERT_GT(psflow.pid(), 0);
  const std::string out = psflow.read_stdout(absl::Now() + absl::Seconds(300));
  ASSERT_EQ(psflow.wait_exit_code(absl::Now() + absl::Seconds(30)), 0)
      << out << psflow.read_stderr(absl::Now() + absl::Seconds(1));
  const std::regex epoch_loss(R"(epoch (\d)/2: train loss ([0-9.]+))");
  std::vector<double> losses;
  for (auto it = std::sregex_iterator(out.begin(), out.end(), epoch_loss);
       it != std::sregex_iterator(); ++it) {
    losses.push_back(std::stod((*it)[2].str()));
  }
  ASSERT_EQ(losses.size(), 2u) << out;
  EXPECT_LT(losses[1], losses[0]) << out;
  std::ifstream file(run_dir + "/summary.json");
  ASSERT_TRUE(file.good()) << "no summary.json in " << run_dir;
  const nlohmann::json summary = nlohmann::json::parse(file);
  EXPECT_EQ(summary["wire_dtype"], "bfloat16");
  EXPECT_GT(summary["test_accuracy"].get<double>(), 0.8) << summary.dump(2);
}

}  // namespace
}  // namespace psflow::internal

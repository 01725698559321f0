// Every hyper-parameter of OptimizerConfig, in each format it travels in,
// under the name it has always had there: closure arguments (Structure),
// the ps wire (OptimizerProto) and the checkpoint index (JSON).
#include <string>

#include "base/test_util.h"
#include "checkpoint/index.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "optimizer/optimizer.h"
#include "ps/request/execute_batch.h"
#include "psflow/v1/variable.pb.h"
#include "train/step_config.h"

namespace psflow::internal {
namespace {

// Every hyper-parameter set, each to a value of its own.
OptimizerConfig distinct_config() {
  OptimizerConfig c;
  c.kind = OptimizerConfig::Kind::kFtrl;
  c.momentum = 0.11;
  c.nesterov = true;
  c.initial_accumulator_value = 0.12;
  c.epsilon = 0.13;
  c.beta_1 = 0.14;
  c.beta_2 = 0.15;
  c.learning_rate_power = -0.16;
  c.l1_regularization_strength = 0.17;
  c.l2_regularization_strength = 0.18;
  c.beta = 0.19;
  return c;
}

TEST(OptimizerFormatsTest, ClosureArgumentsKeepTheShortFtrlNames) {
  const OptimizerConfig c = distinct_config();
  const Structure s = optimizer_config_to_structure(c);
  EXPECT_EQ(s, Structure::dict({{"kind", "ftrl"},
                                {"momentum", 0.11},
                                {"nesterov", true},
                                {"initial_accumulator_value", 0.12},
                                {"epsilon", 0.13},
                                {"beta_1", 0.14},
                                {"beta_2", 0.15},
                                {"learning_rate_power", -0.16},
                                {"l1", 0.17},
                                {"l2", 0.18},
                                {"beta", 0.19}}));
  EXPECT_EQ(ok_value(optimizer_config_from_structure(s)), c);
}

TEST(OptimizerFormatsTest, TheWireNamesEveryHyperParameterAsItsMember) {
  const OptimizerConfig c = distinct_config();
  v1::OptimizerProto p;
  optimizer_to_proto(c, &p);
  EXPECT_EQ(p.kind(), "ftrl");
  EXPECT_EQ(p.momentum(), 0.11);
  EXPECT_TRUE(p.nesterov());
  EXPECT_EQ(p.initial_accumulator_value(), 0.12);
  EXPECT_EQ(p.epsilon(), 0.13);
  EXPECT_EQ(p.beta_1(), 0.14);
  EXPECT_EQ(p.beta_2(), 0.15);
  EXPECT_EQ(p.learning_rate_power(), -0.16);
  EXPECT_EQ(p.l1_regularization_strength(), 0.17);
  EXPECT_EQ(p.l2_regularization_strength(), 0.18);
  EXPECT_EQ(p.beta(), 0.19);
  EXPECT_EQ(ok_value(optimizer_from_proto(p)), c);
}

TEST(OptimizerFormatsTest, TheCheckpointIndexNamesEveryHyperParameterAsItsMember) {
  checkpoint::CheckpointIndex index;
  index.iterations = 1;
  index.optimizer = distinct_config();
  const nlohmann::json j = nlohmann::json::parse(checkpoint::index_to_json(index));
  EXPECT_EQ(j["optimizer"], nlohmann::json({{"kind", "ftrl"},
                                            {"momentum", 0.11},
                                            {"nesterov", true},
                                            {"initial_accumulator_value", 0.12},
                                            {"epsilon", 0.13},
                                            {"beta_1", 0.14},
                                            {"beta_2", 0.15},
                                            {"learning_rate_power", -0.16},
                                            {"l1_regularization_strength", 0.17},
                                            {"l2_regularization_strength", 0.18},
                                            {"beta", 0.19}}));
}

}  // namespace
}  // namespace psflow::internal

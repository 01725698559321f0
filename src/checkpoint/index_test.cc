#include "checkpoint/index.h"

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal::checkpoint {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::json;

CheckpointIndex sample() {
  CheckpointIndex index;
  index.iterations = 42;
  OptimizerConfig adam;
  adam.kind = OptimizerConfig::Kind::kAdam;
  adam.beta_1 = 0.8;
  index.optimizer = adam;
  index.files = {{"ps-0.safetensors", "ps", 0, {1234, 0xdeadbeef}},
                 {"ps-1.safetensors", "ps", 1, {99, 7}}};
  VariableEntry w{"model/w", DType::kFloat32, {5, 2}, {}};
  w.parts.push_back({"ps",
                     0,
                     "w/part_0",
                     0,
                     {3, 2},
                     "ps-0.safetensors",
                     "model/w/part_0",
                     "adam",
                     4,
                     {{"m", "model/w/part_0/m"}, {"v", "model/w/part_0/v"}}});
  w.parts.push_back(
      {"ps", 1, "w/part_1", 3, {2, 2}, "ps-1.safetensors", "model/w/part_1", "", 0, {}});
  VariableEntry s{"step", DType::kInt64, {}, {}};
  s.parts.push_back({"ps", 1, "step", 0, {}, "ps-1.safetensors", "step/part_0", "", 0, {}});
  index.variables = {w, s};
  return index;
}

TEST(CheckpointIndexTest, RoundTrips) {
  const CheckpointIndex index = sample();
  const std::string text = index_to_json(index);
  absl::StatusOr<CheckpointIndex> back = parse_index(text, "i.json");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->iterations, 42);
  EXPECT_EQ(back->optimizer, index.optimizer);
  ASSERT_EQ(back->files.size(), 2u);
  EXPECT_EQ(back->files[0].digest, (FileDigest{1234, 0xdeadbeef}));
  ASSERT_EQ(back->variables.size(), 2u);
  const VariableEntry& w = back->variables[0];
  EXPECT_EQ(w.name, "model/w");
  EXPECT_EQ(w.dtype, DType::kFloat32);
  EXPECT_EQ(w.shape, (Shape{5, 2}));
  ASSERT_EQ(w.parts.size(), 2u);
  EXPECT_EQ(w.parts[0].slots.at("v"), "model/w/part_0/v");
  EXPECT_EQ(w.parts[0].steps, 4);
  EXPECT_EQ(w.parts[1].offset, 3);
  EXPECT_EQ(back->variables[1].shape, Shape{});
  EXPECT_NE(back->find_variable("step"), nullptr);
  EXPECT_EQ(back->find_variable("nope"), nullptr);
  // Without an optimizer, neither field is written.
  CheckpointIndex plain = sample();
  plain.iterations.reset();
  plain.optimizer.reset();
  const Json j = Json::parse(index_to_json(plain));
  EXPECT_FALSE(j.contains("iterations"));
  EXPECT_FALSE(j.contains("optimizer"));
  EXPECT_FALSE(parse_index(j.dump(), "i.json")->iterations.has_value());
}

TEST(CheckpointIndexTest, MalformedIndexesAreRejectedNamingWhere) {
  const Json good = Json::parse(index_to_json(sample()));
  struct Case {
    std::function<void(Json&)> edit;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {[](Json& j) { j = Json::array(); }, "not a JSON object"},
      {[](Json& j) { j.erase("format"); }, "index: missing \"format\""},
      {[](Json& j) { j["format"] = "tf"; }, "format 'tf' is not 'psflow-checkpoint'"},
      {[](Json& j) { j["format_version"] = "1"; }, "format_version: is not an integer"},
      {[](Json& j) { j["iterations"] = -1; }, "index.iterations: -1 is outside"},
      {[](Json& j) { j["optimizer"]["kind"] = "rmsprop"; }, "optimizer: unknown optimizer"},
      {[](Json& j) { j["optimizer"]["beta_1"] = 2; }, "optimizer: optimizer beta_1 = 2"},
      {[](Json& j) { j["optimizer"].erase("epsilon"); }, "optimizer: missing \"epsilon\""},
      {[](Json& j) { j["files"] = Json::object(); }, "\"files\" is not an array"},
      {[](Json& j) { j["files"][0]["name"] = "a/b"; }, "files[0]: 'a/b' is not a plain file name"},
      {[](Json& j) { j["files"][0]["name"] = ".."; }, "not a plain file name"},
      {[](Json& j) { j["files"][1]["name"] = "ps-0.safetensors"; }, "listed twice"},
      {[](Json& j) { j["files"][0]["crc32"] = 1LL << 33; }, "files[0].crc32"},
      {[](Json& j) { j["files"][0]["size"] = -3; }, "files[0].size: -3 is outside"},
      {[](Json& j) { j["variables"][0]["name"] = ""; }, "variables[0]: \"name\" is empty"},
      {[](Json& j) { j["variables"][1]["name"] = "model/w"; }, "'model/w' is listed twice"},
      {[](Json& j) { j["variables"][0]["dtype"] = "string"; }, "('model/w'): dtype string"},
      {[](Json& j) { j["variables"][0]["dtype"] = "complex"; }, "('model/w'): unknown dtype"},
      {[](Json& j) {
         j["variables"][0]["shape"] = {5, -2};
       },
       "('model/w').shape[1]"},
      {[](Json& j) { j["variables"][0]["parts"] = Json::array(); }, "('model/w'): has no parts"},
      {[](Json& j) { j["variables"][0]["parts"][1]["offset"] = 4; },
       "('model/w').parts[1]: offset 4 does not continue at row 3"},
      {[](Json& j) {
         j["variables"][0]["parts"][1]["shape"] = {3, 2};
       },
       "('model/w').parts[1]: rows [3, 6) run past the variable's 5 rows"},
      {[](Json& j) {
         j["variables"][0]["parts"][1]["shape"] = {1, 2};
       },
       "('model/w'): the parts cover 4 of 5 rows"},
      {[](Json& j) {
         j["variables"][0]["parts"][1]["shape"] = {2, 3};
       },
       "differs from the variable's [5, 2] beyond axis 0"},
      {[](Json& j) { j["variables"][0]["parts"][1]["shape"] = {2}; }, "has rank 1"},
      {[](Json& j) { j["variables"][0]["parts"][0]["file"] = "ps-9.safetensors"; },
       "file 'ps-9.safetensors' is not listed in \"files\""},
      {[](Json& j) { j["variables"][0]["parts"][0]["slots"].erase("v"); },
       "parts[0]: slots {m} are not those of optimizer 'adam'"},
      {[](Json& j) { j["variables"][0]["parts"][1]["steps"] = 3; }, "has 3 steps but no optimizer"},
      {[](Json& j) { j["variables"][0]["parts"][0]["slots"]["m"] = 5; },
       "slot 'm' does not name a tensor key"},
      {[](Json& j) { j["variables"][1]["parts"][0]["offset"] = 1; },
       "a scalar's part has offset 0"},
      {[](Json& j) { j["variables"][1]["parts"].push_back(j["variables"][1]["parts"][0]); },
       "a scalar has one part, not 2"},
      {[](Json& j) { j["variables"][0]["parts"][0]["task"] = 1.5; },
       "parts[0].task: is not an integer"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].needle);
    Json j = good;
    cases[i].edit(j);
    absl::StatusOr<CheckpointIndex> r = parse_index(j.dump(), "/c/index.json");
    ASSERT_FALSE(r.ok()) << "case " << i << " accepted";
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("/c/index.json: "));
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(cases[i].needle));
  }
  EXPECT_THAT(std::string(parse_index("{", "f").status().message()), HasSubstr("not valid JSON"));
  EXPECT_THAT(
      std::string(
          parse_index(std::string(100, '[') + std::string(100, ']'), "f").status().message()),
      HasSubstr("nests deeper"));
}

}  // namespace
}  // namespace psflow::internal::checkpoint

namespace psflow::internal::checkpoint {
namespace {

CheckpointIndex with_table() {
  CheckpointIndex index = sample();
  TableEntry t;
  t.name = "user_ids";
  t.options.dim = 3;
  t.options.seed = 0xFFFFFFFFFFFFFFF0ULL;  // beyond int64: kept exactly
  t.options.initializer = DynamicEmbeddingInitializer::kNormal;
  t.options.optimizer.kind = OptimizerConfig::Kind::kAdagrad;
  t.options.ttl_steps = 10;
  t.options.admit_after = 2;
  t.options.admit_probability = 0.5;
  for (int task = 0; task < 2; ++task) {
    TableShardEntry e;
    e.task = task;
    e.file = task == 0 ? "ps-0.safetensors" : "ps-1.safetensors";
    e.rows = 5 + task;
    e.clock = 9;
    e.applies = 3;
    e.keys = "k" + std::to_string(task);
    e.values = "v" + std::to_string(task);
    e.last_seen = "l" + std::to_string(task);
    e.slots = {{"accumulator", "a" + std::to_string(task)}};
    t.shards.push_back(e);
  }
  index.tables = {t};
  return index;
}

TEST(CheckpointIndexTablesTest, RoundTripsEveryOptionAndShard) {
  const CheckpointIndex index = with_table();
  absl::StatusOr<CheckpointIndex> back = parse_index(index_to_json(index), "i.json");
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->tables.size(), 1u);
  const TableEntry& t = back->tables[0];
  EXPECT_EQ(t.options, index.tables[0].options);
  ASSERT_EQ(t.shards.size(), 2u);
  EXPECT_EQ(t.shards[1].rows, 6);
  EXPECT_EQ(t.shards[1].clock, 9);
  EXPECT_EQ(t.shards[1].applies, 3);
  EXPECT_EQ(t.shards[1].slots.at("accumulator"), "a1");
  EXPECT_NE(back->find_table("user_ids"), nullptr);
  // Without tables the key is absent (older readers see what they know).
  EXPECT_EQ(index_to_json(sample()).find("\"tables\""), std::string::npos);
}

TEST(CheckpointIndexTablesTest, MalformedTablesAreRefused) {
  auto refused = [](const std::function<void(Json&)>& edit) {
    Json j = Json::parse(index_to_json(with_table()));
    edit(j["tables"][0]);
    absl::StatusOr<CheckpointIndex> r = parse_index(j.dump(), "i.json");
    EXPECT_FALSE(r.ok());
    return std::string(r.status().message());
  };
  EXPECT_THAT(refused([](Json& t) { t["shards"][1]["task"] = 0; }),
              HasSubstr("shards are in task order"));
  EXPECT_THAT(refused([](Json& t) { t["shards"][0]["file"] = "ps-9.safetensors"; }),
              HasSubstr("not listed"));
  EXPECT_THAT(refused([](Json& t) { t["shards"][0]["slots"] = Json::object(); }),
              HasSubstr("slots are not those"));
  EXPECT_THAT(refused([](Json& t) { t["shards"][0]["rows"] = -1; }), HasSubstr("rows"));
  EXPECT_THAT(refused([](Json& t) { t["options"]["initializer"] = "ones"; }),
              HasSubstr("initializer 'ones'"));
  EXPECT_THAT(refused([](Json& t) { t["options"]["seed"] = -1; }), HasSubstr("seed"));
  EXPECT_THAT(refused([](Json& t) { t["shards"] = Json::array(); }), HasSubstr("no shards"));
}

}  // namespace
}  // namespace psflow::internal::checkpoint

// Checkpoint and CheckpointManager against in-process ps tasks (the
// strategy made over in-process clients): round trips of values, slots and step
// counts, resharding, validation before any change, the manager's files.
#include "psflow/checkpoint.h"

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_test_util.h"
#include "checkpoint/file_io.h"
#include "checkpoint/reshard.h"
#include "checkpoint/safetensors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/partitioners.h"
#include "psflow/strategy.h"
#include "strategy/strategy_test_util.h"

namespace psflow::internal {
namespace {

namespace fs = std::filesystem;
using ::psflow::internal::testing::full_state;
using ::psflow::internal::testing::FullState;
using ::psflow::internal::testing::LocalPsCluster;
using ::psflow::internal::testing::TempDir;
using ::psflow::internal::testing::value_or_fail;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

OptimizerConfig config_of(OptimizerConfig::Kind kind) {
  OptimizerConfig c;
  c.kind = kind;
  return c;
}

Tensor w_init() {
  std::vector<float> v(21);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.25f * static_cast<float>(i) - 2;
  return Tensor::from_vector(v, {7, 3});
}

// A model on `num_ps` in-process ps tasks: w [7, 3] (sharded by the
// partitioner), b [3], an int32 counter (never trained) and an optimizer.
struct Model {
  Model(int num_ps, Partitioner partitioner, OptimizerConfig config)
      : cluster(num_ps, std::move(partitioner)) {
    StrategyScope scope = cluster.strategy->scope();
    w = value_or_fail(create_variable(w_init(), {.name = "w"}));
    b = value_or_fail(create_variable(Tensor::from_vector<float>({1, -1, 0.5f}), {.name = "b"}));
    count = value_or_fail(create_variable(Tensor::scalar<int32_t>(5), {.name = "count"}));
    optimizer = value_or_fail(Optimizer::create(config, 0.05));
  }

  Checkpoint checkpoint() const {
    return value_or_fail(
        Checkpoint::create({{"dense/w", w}, {"dense/b", b}, {"count", count}}, optimizer));
  }

  // One step: a sparse gradient for rows `ids` of w (all rows when empty:
  // dense) and a dense one for b, scaled by `k`.
  void train(float k, std::vector<int64_t> ids = {}) const {
    std::vector<GradientAndVariable> grads;
    if (ids.empty()) {
      std::vector<float> g(21);
      for (size_t i = 0; i < g.size(); ++i) g[i] = k * (static_cast<float>(i % 5) - 2);
      grads.push_back({Tensor::from_vector(g, {7, 3}), w});
    } else {
      std::vector<float> rows(ids.size() * 3);
      for (size_t i = 0; i < rows.size(); ++i) rows[i] = k * (1 + static_cast<float>(i));
      grads.push_back(
          {IndexedSlices{Tensor::from_vector(rows, {static_cast<int64_t>(ids.size()), 3}),
                         Tensor::from_vector(ids)},
           w});
    }
    grads.push_back({Tensor::from_vector<float>({k, -2 * k, 0.5f}), b});
    ASSERT_TRUE(optimizer->apply_gradients(grads).ok());
  }

  int64_t iterations() const {
    return value_or_fail(optimizer->iterations().read_value()).scalar_value<int64_t>();
  }

  struct State {
    FullState w, b, count;
    int64_t iterations;
  };
  State state(const OptimizerConfig& fill = {}) const {
    return {full_state(w, fill), full_state(b, fill), full_state(count, fill), iterations()};
  }

  LocalPsCluster cluster;
  ShardedVariable w, b, count;
  std::optional<Optimizer> optimizer;
};

void expect_same(const Model::State& a, const Model::State& b, bool same_steps = true) {
  {
    SCOPED_TRACE("w");
    testing::expect_same_full_state(a.w, b.w, same_steps);
  }
  {
    SCOPED_TRACE("b");
    testing::expect_same_full_state(a.b, b.b, same_steps);
  }
  {
    SCOPED_TRACE("count");
    testing::expect_same_full_state(a.count, b.count, same_steps);
  }
  EXPECT_EQ(a.iterations, b.iterations);
}

std::vector<std::string> entries_of(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(CheckpointTest, SaveModifyRestoreGivesBackValuesSlotsAndSteps) {
  Model m(3, value_or_fail(fixed_shards_partitioner(3)), config_of(OptimizerConfig::Kind::kAdam));
  ASSERT_EQ(m.w.num_parts(), 3u);
  m.train(1, {0, 4});
  m.train(0.5f, {4});
  m.train(2, {1, 0});
  TempDir dir;
  const Checkpoint ckpt = m.checkpoint();
  ASSERT_TRUE(ckpt.save(dir / "ckpt").ok());
  EXPECT_THAT(entries_of(dir.path()), ElementsAre("ckpt"));
  EXPECT_THAT(entries_of(dir / "ckpt"), ElementsAre("index.json", "ps-0.safetensors",
                                                    "ps-1.safetensors", "ps-2.safetensors"));
  const Model::State saved = m.state();
  EXPECT_EQ(saved.iterations, 3);
  EXPECT_THAT(saved.w.optimizers, ElementsAre("adam", "adam", ""));
  EXPECT_THAT(saved.w.steps, ElementsAre(2, 2, 0));
  EXPECT_EQ(value_or_fail(load_checkpoint_iterations(dir / "ckpt")), 3);

  // What one more step gives from the saved state.
  m.train(-1, {0, 3, 6});
  const Model::State reference = m.state();
  // Wander off, then come back.
  ASSERT_TRUE(m.w.assign(Tensor(DType::kFloat32, {7, 3})).ok());
  ASSERT_TRUE(m.count.assign(Tensor::scalar<int32_t>(-1)).ok());
  m.train(3);
  m.train(3);
  ASSERT_TRUE(ckpt.restore(dir / "ckpt").ok());
  expect_same(m.state(), saved);
  // The restored slots and step counts give the same next update.
  m.train(-1, {0, 3, 6});
  expect_same(m.state(), reference);

  // A trailing slash names the same directory.
  ASSERT_TRUE(ckpt.save(dir / "slash/").ok());
  EXPECT_TRUE(fs::exists(dir / "slash/index.json"));
  // Saving over an existing path is refused.
  absl::Status again = ckpt.save(dir / "ckpt");
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists) << again;
}

TEST(CheckpointTest, RestoresIntoOtherShardCountsAndPsCounts) {
  struct Case {
    OptimizerConfig::Kind kind;
    bool dense;
  };
  // Adagrad with sparse gradients leaves the last shard untouched (its
  // rows get the initial accumulator when merged); Adam with dense ones
  // keeps every shard's step count equal, so the reshard is exact.
  for (const Case& c :
       {Case{OptimizerConfig::Kind::kAdagrad, false}, Case{OptimizerConfig::Kind::kAdam, true},
        Case{OptimizerConfig::Kind::kMomentum, false}}) {
    const OptimizerConfig config = config_of(c.kind);
    SCOPED_TRACE(std::string(optimizer_name(c.kind)));
    Model a(3, value_or_fail(fixed_shards_partitioner(3)), config);
    auto step = [&](const Model& m, float k) {
      if (c.dense) {
        m.train(k);
      } else {
        m.train(k, {0, 4, 4});
      }
    };
    step(a, 1);
    step(a, -0.5f);
    TempDir dir;
    ASSERT_TRUE(a.checkpoint().save(dir / "ckpt").ok());
    const Model::State saved = a.state(config);

    Model two(2, value_or_fail(fixed_shards_partitioner(2)), config);
    Model one(1, nullptr, config);
    Model four(2, value_or_fail(fixed_shards_partitioner(4)), config);  // 4 shards over 2 ps
    ASSERT_EQ(two.w.num_parts(), 2u);
    ASSERT_EQ(one.w.num_parts(), 1u);
    ASSERT_EQ(four.w.num_parts(), 4u);
    for (Model* m : {&two, &one, &four}) {
      SCOPED_TRACE(m->w.num_parts());
      ASSERT_TRUE(m->checkpoint().restore(dir / "ckpt").ok());
      expect_same(m->state(config), saved, /*same_steps=*/false);
    }
    step(a, 2);
    for (Model* m : {&two, &one, &four}) {
      SCOPED_TRACE(m->w.num_parts());
      step(*m, 2);
      EXPECT_EQ(value_or_fail(m->w.read_value()), value_or_fail(a.w.read_value()));
      EXPECT_EQ(value_or_fail(m->b.read_value()), value_or_fail(a.b.read_value()));
      EXPECT_EQ(m->iterations(), a.iterations());
    }
  }
}

TEST(CheckpointTest, ReshardedStepCountIsTheLargestOfTheSavedParts) {
  const OptimizerConfig adam = config_of(OptimizerConfig::Kind::kAdam);
  Model a(3, value_or_fail(fixed_shards_partitioner(3)), adam);  // rows 3, 2, 2
  for (int i = 0; i < 3; ++i) a.train(1, {0});
  a.train(1, {4});
  TempDir dir;
  ASSERT_TRUE(a.checkpoint().save(dir / "ckpt").ok());
  EXPECT_THAT(a.state().w.steps, ElementsAre(3, 1, 0));
  Model two(2, value_or_fail(fixed_shards_partitioner(2)), adam);  // rows 4, 3
  ASSERT_TRUE(two.checkpoint().restore(dir / "ckpt").ok());
  const FullState w = full_state(two.w);
  EXPECT_THAT(w.steps, ElementsAre(3, 1));
  EXPECT_THAT(w.optimizers, ElementsAre("adam", "adam"));
  testing::expect_same_full_state(w, a.state().w, /*same_steps=*/false);
}

TEST(CheckpointTest, RestoreRecreatesPartsAPsLostAndSavesChiefVariables) {
  Model m(2, value_or_fail(fixed_shards_partitioner(2)), config_of(OptimizerConfig::Kind::kSgd));
  // A coordinator-local variable (outside any scope) lives on "chief".
  ShardedVariable local = value_or_fail(create_variable(Tensor::from_vector<double>({1, 2})));
  m.train(1);
  TempDir dir;
  const Checkpoint ckpt =
      value_or_fail(Checkpoint::create({{"w", m.w}, {"local", local}}, m.optimizer));
  ASSERT_TRUE(ckpt.save(dir / "c").ok());
  EXPECT_TRUE(fs::exists(dir / "c/chief-0.safetensors"));
  const FullState saved = full_state(m.w);
  // ps 1 restarted and lost its variables.
  m.cluster.stores[1]->erase(m.w.variables()[1].name());
  ASSERT_FALSE(m.w.read_value().ok());
  ASSERT_TRUE(local.assign(Tensor::from_vector<double>({0, 0})).ok());
  ASSERT_TRUE(ckpt.restore(dir / "c").ok());
  testing::expect_same_full_state(full_state(m.w), saved);
  EXPECT_EQ(value_or_fail(local.read_value()), Tensor::from_vector<double>({1, 2}));
}

TEST(CheckpointTest, CreateAndSaveRejectBadInput) {
  LocalPsCluster cluster(1);
  EXPECT_EQ(Checkpoint::create({{"", ShardedVariable()}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status empty = Checkpoint::create({{"v", ShardedVariable()}}).status();
  EXPECT_THAT(std::string(empty.message()), HasSubstr("'v' is an empty ShardedVariable"));
  EXPECT_EQ(Checkpoint::create({{"\xff", ShardedVariable()}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  StrategyScope scope = cluster.strategy->scope();
  ShardedVariable s = value_or_fail(create_variable(Tensor::from_strings({"a", "b"})));
  TempDir dir;
  absl::Status st = value_or_fail(Checkpoint::create({{"names", s}})).save(dir / "x");
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(st.message()), HasSubstr("cannot save variable 'names'"));
  EXPECT_FALSE(fs::exists(dir / "x"));
  EXPECT_TRUE(entries_of(dir.path()).empty()) << "no temporary left behind";
}

// Rewrites index.json of checkpoint `dir` with `edit`.
void edit_index(const std::string& dir, const std::function<void(Json&)>& edit) {
  const std::string path = dir + "/index.json";
  Json j = Json::parse(testing::read_all(path));
  edit(j);
  testing::write_all(path, j.dump(1));
}

Json& part_of(Json& index, const std::string& variable, size_t part) {
  for (Json& v : index["variables"]) {
    if (v["name"] == variable) return v["parts"][part];
  }
  ADD_FAILURE() << "no variable " << variable;
  return index;
}

Json& variable_of(Json& index, const std::string& variable) {
  for (Json& v : index["variables"]) {
    if (v["name"] == variable) return v;
  }
  ADD_FAILURE() << "no variable " << variable;
  return index;
}

TEST(CheckpointTest, ACorruptCheckpointNamesTheProblemAndChangesNothing) {
  const OptimizerConfig adam = config_of(OptimizerConfig::Kind::kAdam);
  Model m(3, value_or_fail(fixed_shards_partitioner(3)), adam);
  m.train(1, {0, 4});
  TempDir dir;
  const std::string good = dir / "good";
  ASSERT_TRUE(m.checkpoint().save(good).ok());
  // Different state from the checkpoint's, which must survive every failure.
  m.train(5);
  ASSERT_TRUE(m.count.assign(Tensor::scalar<int32_t>(77)).ok());
  const Model::State before = m.state();

  struct Case {
    std::string label;
    std::function<void(const std::string&)> corrupt;
    absl::StatusCode code;
    std::vector<std::string> needles;
    std::function<absl::StatusOr<Checkpoint>()> checkpoint = nullptr;
  };
  const std::vector<Case> cases = {
      {"flipped data byte",
       [](const std::string& d) {
         std::string bytes = testing::read_all(d + "/ps-1.safetensors");
         bytes[bytes.size() - 3] ^= 0x40;
         testing::write_all(d + "/ps-1.safetensors", bytes);
       },
       absl::StatusCode::kInvalidArgument,
       {"ps-1.safetensors: CRC32 is", "(the file is corrupt)"}},
      {"truncated file",
       [](const std::string& d) {
         std::string bytes = testing::read_all(d + "/ps-2.safetensors");
         testing::write_all(d + "/ps-2.safetensors", bytes.substr(0, bytes.size() - 5));
       },
       absl::StatusCode::kInvalidArgument,
       {"ps-2.safetensors: the file is", "(truncated or replaced)"}},
      {"garbage file with a matching checksum",
       [](const std::string& d) {
         const std::string garbage = "this is not a safetensors file at all";
         testing::write_all(d + "/ps-0.safetensors", garbage);
         edit_index(d, [&](Json& j) {
           for (Json& f : j["files"]) {
             if (f["name"] != "ps-0.safetensors") continue;
             f["size"] = garbage.size();
             f["crc32"] = checkpoint::crc32_of(garbage);
           }
         });
       },
       absl::StatusCode::kInvalidArgument,
       {"ps-0.safetensors: header length"}},
      {"missing file",
       [](const std::string& d) { fs::remove(d + "/ps-1.safetensors"); },
       absl::StatusCode::kNotFound,
       {"ps-1.safetensors"}},
      {"wrong full shape in the index",
       [](const std::string& d) {
         edit_index(d, [](Json& j) {
           variable_of(j, "dense/w")["shape"] = {8, 3};
           part_of(j, "dense/w", 2)["shape"] = {3, 3};
         });
       },
       absl::StatusCode::kInvalidArgument,
       {"index.json: variable 'dense/w' is float32 [8, 3] in the checkpoint but float32 [7, 3] "
        "here"}},
      {"part shape that does not match its tensor",
       [](const std::string& d) {
         edit_index(d, [](Json& j) {
           part_of(j, "dense/w", 1)["shape"] = {1, 3};
           part_of(j, "dense/w", 2)["offset"] = 4;
           part_of(j, "dense/w", 2)["shape"] = {3, 3};
         });
       },
       absl::StatusCode::kInvalidArgument,
       {"ps-1.safetensors: tensor 'dense/w/part_1' is float32 [2, 3] but index.json's variable "
        "'dense/w' part 1 is float32 [1, 3]"}},
      {"parts that do not tile the rows",
       [](const std::string& d) {
         edit_index(d, [](Json& j) { part_of(j, "dense/w", 1)["offset"] = 2; });
       },
       absl::StatusCode::kInvalidArgument,
       {"index.json: variables[", "('dense/w').parts[1]: offset 2 does not continue at row 3"}},
      {"unknown tensor key",
       [](const std::string& d) {
         edit_index(d, [](Json& j) { part_of(j, "dense/w", 0)["slots"]["m"] = "nope"; });
       },
       absl::StatusCode::kInvalidArgument,
       {"ps-0.safetensors: no tensor 'nope'", "variable 'dense/w' part 0 slot 'm'"}},
      {"wrong dtype in the index",
       [](const std::string& d) {
         edit_index(d, [](Json& j) { variable_of(j, "dense/b")["dtype"] = "float64"; });
       },
       absl::StatusCode::kInvalidArgument,
       {"variable 'dense/b' is float64 [3] in the checkpoint but float32 [3] here"}},
      {"slots of another optimizer",
       [](const std::string& d) {
         edit_index(d, [](Json& j) { part_of(j, "dense/w", 0)["optimizer"] = "adagrad"; });
       },
       absl::StatusCode::kInvalidArgument,
       {"('dense/w').parts[0]: slots {m, v} are not those of optimizer 'adagrad'"}},
      {"garbage index",
       [](const std::string& d) { testing::write_all(d + "/index.json", "{]"); },
       absl::StatusCode::kInvalidArgument,
       {"index.json: not valid JSON"}},
      {"newer format",
       [](const std::string& d) { edit_index(d, [](Json& j) { j["format_version"] = 2; }); },
       absl::StatusCode::kInvalidArgument,
       {"format_version 2 is not one this psflow reads"}},
      {"file outside the checkpoint",
       [](const std::string& d) {
         edit_index(d, [](Json& j) { j["files"][0]["name"] = "../ps-0.safetensors"; });
       },
       absl::StatusCode::kInvalidArgument,
       {"is not a plain file name"}},
      {"no index",
       [](const std::string& d) { fs::remove(d + "/index.json"); },
       absl::StatusCode::kNotFound,
       {"no checkpoint at", "index.json does not exist"}},
      {"a tracked variable the checkpoint lacks",
       [](const std::string&) {},
       absl::StatusCode::kNotFound,
       {"no variable 'extra' in the checkpoint (it holds 'count', 'dense/b', 'dense/w')"},
       [&]() {
         return Checkpoint::create({{"dense/w", m.w}, {"extra", m.b}}, m.optimizer);
       }},
      {"another optimizer kind",
       [](const std::string&) {},
       absl::StatusCode::kInvalidArgument,
       {"saved with the adam optimizer, but this Checkpoint tracks a sgd optimizer"},
       [&]() -> absl::StatusOr<Checkpoint> {
         StrategyScope scope = m.cluster.strategy->scope();
         return Checkpoint::create({{"dense/w", m.w}},
                                   value_or_fail(Optimizer::create(OptimizerConfig(), 0.1)));
       }},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    const std::string copy = dir / absl::StrCat("case", n++);
    fs::copy(good, copy, fs::copy_options::recursive);
    c.corrupt(copy);
    const Checkpoint ckpt = c.checkpoint ? value_or_fail(c.checkpoint()) : m.checkpoint();
    absl::Status s = ckpt.restore(copy);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), c.code) << s;
    for (const std::string& needle : c.needles) {
      EXPECT_THAT(std::string(s.message()), HasSubstr(needle));
    }
    expect_same(m.state(), before);
  }
  // The untouched checkpoint still restores.
  ASSERT_TRUE(m.checkpoint().restore(good).ok());
  EXPECT_EQ(m.iterations(), 1);
}

TEST(CheckpointManagerTest, NumbersByIterationsKeepsTheNewestAndResumes) {
  const OptimizerConfig adagrad = config_of(OptimizerConfig::Kind::kAdagrad);
  Model m(2, value_or_fail(fixed_shards_partitioner(2)), adagrad);
  TempDir dir;
  const std::string root = dir / "run";
  CheckpointManager manager = value_or_fail(CheckpointManager::create(m.checkpoint(), root, 2));
  EXPECT_EQ(manager.latest_checkpoint(), std::nullopt);
  EXPECT_EQ(value_or_fail(manager.restore_or_initialize()), std::nullopt);
  std::vector<std::string> paths;
  for (int i = 0; i < 4; ++i) {
    m.train(1 + static_cast<float>(i));
    paths.push_back(value_or_fail(manager.save()));
  }
  EXPECT_EQ(paths[0], root + "/ckpt-1");
  EXPECT_EQ(paths[3], root + "/ckpt-4");
  EXPECT_THAT(manager.checkpoints(), ElementsAre(root + "/ckpt-3", root + "/ckpt-4"));
  EXPECT_THAT(entries_of(root), ElementsAre("ckpt-3", "ckpt-4"));
  EXPECT_EQ(manager.latest_checkpoint(), root + "/ckpt-4");
  // Saving again at the same step replaces that checkpoint.
  ASSERT_TRUE(m.w.assign_add(Tensor::from_vector(std::vector<float>(21, 1.0f), {7, 3})).ok());
  EXPECT_EQ(value_or_fail(manager.save()), root + "/ckpt-4");
  EXPECT_THAT(entries_of(root), ElementsAre("ckpt-3", "ckpt-4"));
  const Model::State saved = m.state(adagrad);

  // Debris of crashed saves never counts as a checkpoint.
  fs::create_directories(root + "/.ckpt-9.tmp-1-2-3");
  testing::write_all(root + "/.ckpt-9.tmp-1-2-3/index.json", "{}");
  fs::create_directories(root + "/ckpt-10");  // no index.json: incomplete
  EXPECT_EQ(manager.latest_checkpoint(), root + "/ckpt-4");

  // A restarted coordinator: new variables (other stored names), a new
  // optimizer, a new manager over the same directory.
  Model restarted(3, value_or_fail(fixed_shards_partitioner(3)), adagrad);
  CheckpointManager again =
      value_or_fail(CheckpointManager::create(restarted.checkpoint(), root, 2));
  const std::optional<std::string> latest = value_or_fail(again.restore_or_initialize());
  ASSERT_EQ(latest, root + "/ckpt-4");
  EXPECT_EQ(value_or_fail(load_checkpoint_iterations(*latest)), 4);
  expect_same(restarted.state(adagrad), saved, /*same_steps=*/false);
  restarted.train(9);
  m.train(9);
  EXPECT_EQ(value_or_fail(restarted.w.read_value()), value_or_fail(m.w.read_value()));
  EXPECT_EQ(value_or_fail(again.save()), root + "/ckpt-5");
  EXPECT_FALSE(fs::exists(root + "/.ckpt-9.tmp-1-2-3")) << "debris of a crashed save is removed";
  EXPECT_THAT(again.checkpoints(), ElementsAre(root + "/ckpt-4", root + "/ckpt-5"));
}

TEST(CheckpointManagerTest, CountsSavesWithoutAnOptimizerAndValidatesOptions) {
  LocalPsCluster cluster(1);
  ShardedVariable v = [&] {
    StrategyScope scope = cluster.strategy->scope();
    return value_or_fail(create_variable(Tensor::scalar(1.0f)));
  }();
  const Checkpoint ckpt = value_or_fail(Checkpoint::create({{"v", v}}));
  TempDir dir;
  EXPECT_EQ(CheckpointManager::create(ckpt, dir / "m", 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckpointManager::create(ckpt, "", 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  CheckpointManager keep_all =
      value_or_fail(CheckpointManager::create(ckpt, dir / "m", std::nullopt));
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(value_or_fail(keep_all.save()), dir / absl::StrCat("m/ckpt-", i));
  }
  EXPECT_EQ(keep_all.checkpoints().size(), 3u);
  absl::StatusOr<int64_t> it = load_checkpoint_iterations(dir / "m/ckpt-2");
  EXPECT_EQ(it.status().code(), absl::StatusCode::kNotFound) << it.status();
  // A checkpoint without iterations cannot feed an optimizer.
  LocalPsCluster other(1);
  StrategyScope scope = other.strategy->scope();
  ShardedVariable w = value_or_fail(create_variable(Tensor::scalar(0.0f)));
  Optimizer opt = value_or_fail(Optimizer::create(OptimizerConfig(), 0.1));
  absl::Status s = value_or_fail(Checkpoint::create({{"v", w}}, opt)).restore(dir / "m/ckpt-3");
  EXPECT_THAT(std::string(s.message()), HasSubstr("holds no optimizer iterations"));
  EXPECT_EQ(value_or_fail(w.read_value()), Tensor::scalar(0.0f));
  ASSERT_TRUE(value_or_fail(Checkpoint::create({{"v", w}})).restore(dir / "m/ckpt-3").ok());
  EXPECT_EQ(value_or_fail(w.read_value()), Tensor::scalar(1.0f));
}

TEST(ReshardTest, RejectsPartsOfTwoOptimizersAndUnknownAccumulators) {
  auto part = [](int64_t offset, int64_t rows, const std::string& optimizer) {
    checkpoint::SavedPart p;
    p.offset = offset;
    p.state.value = Tensor(DType::kFloat32, {rows, 2});
    p.state.slots.optimizer = optimizer;
    if (!optimizer.empty()) {
      p.state.slots.steps = 1;
      for (std::string_view s : optimizer_slot_names(*optimizer_kind_from_name(optimizer))) {
        p.state.slots.slots.emplace(std::string(s), Tensor(DType::kFloat32, {rows, 2}));
      }
    }
    return p;
  };
  const std::vector<checkpoint::TargetPart> one = {{0, {4, 2}}};
  absl::StatusOr<std::vector<ShardSnapshot>> mixed = checkpoint::reshard(
      "w", DType::kFloat32, {4, 2}, {part(0, 2, "adam"), part(2, 2, "adagrad")}, one, nullptr);
  EXPECT_THAT(std::string(mixed.status().message()),
              HasSubstr("variable 'w': rows [0, 4) come from parts trained by the adam and the "
                        "adagrad optimizers"));
  absl::StatusOr<std::vector<ShardSnapshot>> unknown = checkpoint::reshard(
      "w", DType::kFloat32, {4, 2}, {part(0, 2, "adagrad"), part(2, 2, "")}, one, nullptr);
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("initial accumulator value"));
  OptimizerConfig fill = config_of(OptimizerConfig::Kind::kAdagrad);
  fill.initial_accumulator_value = 0.5;
  absl::StatusOr<std::vector<ShardSnapshot>> filled = checkpoint::reshard(
      "w", DType::kFloat32, {4, 2}, {part(0, 2, "adagrad"), part(2, 2, "")}, one, &fill);
  ASSERT_TRUE(filled.ok()) << filled.status();
  EXPECT_EQ((*filled)[0].slots.slots.at("accumulator"),
            Tensor::from_vector<float>({0, 0, 0, 0, 0.5f, 0.5f, 0.5f, 0.5f}, {4, 2}));
  // Layouts that do not tile are refused.
  EXPECT_FALSE(
      checkpoint::reshard("w", DType::kFloat32, {4, 2}, {part(0, 2, "")}, one, nullptr).ok());
  EXPECT_FALSE(checkpoint::reshard("w", DType::kFloat32, {4, 2}, {part(0, 2, ""), part(2, 2, "")},
                                   {{0, {3, 2}}}, nullptr)
                   .ok());
}

}  // namespace
}  // namespace psflow::internal

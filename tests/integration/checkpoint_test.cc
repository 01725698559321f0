// Checkpoints against real ps processes (LocalCluster, 3 ps): values and
// optimizer slots round trip over gRPC, restores into fewer shards and
// fewer ps tasks, corrupt checkpoints change nothing, the manager keeps
// max_to_keep and a restarted coordinator resumes; Python reads the files.
#include "psflow/checkpoint.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/test_util.h"
#include "checkpoint/file_io.h"
#include "checkpoint/safetensors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "optimizer/optimizer.h"
#include "ps/client/variable_client.h"
#include "ps/request/snapshot_results.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/optimizer.h"
#include "psflow/partitioners.h"
#include "psflow/strategy.h"
#include "strategy/variable_snapshots.h"

namespace psflow::internal {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// A fresh directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = (fs::path(::testing::TempDir()) /
             absl::StrCat("psflow_ckpt_it_", ::getpid(), "_", counter.fetch_add(1)))
                .string();
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  [[nodiscard]] std::string operator/(const std::string& name) const {
    return (fs::path(path_) / name).string();
  }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

OptimizerConfig config_of(OptimizerConfig::Kind kind) {
  OptimizerConfig c;
  c.kind = kind;
  return c;
}

Tensor emb_init() {
  std::vector<float> v(13 * 4);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 0.125f * static_cast<float>(i) - 3;
  return Tensor::from_vector(v, {13, 4});
}

// Value and slots of a variable, reassembled over its parts as one tensor
// each (slot rows of parts without optimizer state read as the slot's
// initial value), plus each part's step count.
struct FullState {
  Tensor value;
  std::map<std::string, Tensor> slots;
  std::vector<int64_t> steps;
};

Tensor concat_rows(const std::vector<Tensor>& parts) {
  if (parts.size() == 1) return parts[0];
  Shape shape = parts[0].shape();
  shape[0] = 0;
  for (const Tensor& p : parts) shape[0] += p.dim(0);
  Tensor out(parts[0].dtype(), shape);
  size_t at = 0;
  for (const Tensor& p : parts) {
    std::memcpy(static_cast<uint8_t*>(out.mutable_raw_data()) + at, p.raw_data(), p.byte_size());
    at += p.byte_size();
  }
  return out;
}

FullState full_state(const ShardedVariable& v, const OptimizerConfig& config) {
  FullState out;
  auto snaps = internal::snapshot_variables({v});
  EXPECT_TRUE(snaps.ok()) << snaps.status();
  if (!snaps.ok()) return out;
  std::vector<Tensor> values;
  for (const ShardSnapshot& s : (*snaps)[0]) {
    values.push_back(s.value);
    out.steps.push_back(s.slots.steps);
  }
  out.value = concat_rows(values);
  for (std::string_view slot : optimizer_slot_names(config.kind)) {
    std::vector<Tensor> rows;
    for (const ShardSnapshot& s : (*snaps)[0]) {
      auto it = s.slots.slots.find(slot);
      if (it != s.slots.slots.end()) {
        rows.push_back(it->second);
      } else {
        Tensor init(DType::kFloat32, s.value.shape());
        init.mutable_vec<float>().setConstant(
            static_cast<float>(optimizer_slot_initial_value(config, slot)));
        rows.push_back(init);
      }
    }
    out.slots.emplace(std::string(slot), concat_rows(rows));
  }
  return out;
}

void expect_same(const FullState& a, const FullState& b, bool same_steps = true) {
  EXPECT_EQ(a.value, b.value);
  ASSERT_EQ(a.slots.size(), b.slots.size());
  for (const auto& [name, t] : a.slots) EXPECT_EQ(t, b.slots.at(name)) << "slot " << name;
  if (same_steps) {
    EXPECT_EQ(a.steps, b.steps);
  }
}

class CheckpointIntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    LocalClusterOptions options;
    options.num_ps = 3;
    options.num_workers = 1;
    options.binary_path = PSFLOW_BINARY_PATH;
    auto cluster = LocalCluster::start(options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = cluster->release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(cluster_, nullptr); }

  // The cluster as seen with only its first `num_ps` ps tasks.
  static ClusterSpec spec_with(int num_ps) {
    const ClusterSpec& full = cluster_->cluster_spec();
    std::vector<std::string> ps;
    for (int i = 0; i < num_ps; ++i) ps.push_back(ok_value(full.task_address("ps", i)));
    return ClusterSpec({{"chief", {ok_value(full.task_address("chief", 0))}},
                        {"worker", {ok_value(full.task_address("worker", 0))}},
                        {"ps", ps}});
  }

  static LocalCluster* cluster_;
};

LocalCluster* CheckpointIntegrationTest::cluster_ = nullptr;

// A model on the first `num_ps` ps tasks: emb [13, 4] (sharded by the
// partitioner) and bias [4]. Stored names start with `prefix`, so that
// models in one test never overwrite each other's variables.
struct Model {
  Model(const ClusterSpec& spec, Partitioner partitioner, OptimizerConfig config,
        const std::string& prefix)
      : config(config) {
    strategy = ok_value(ParameterServerStrategy::create(SimpleClusterResolver(spec, "chief", 0),
                                                        std::move(partitioner)));
    StrategyScope scope = strategy->scope();
    emb = ok_value(create_variable(emb_init(), {.name = prefix + "emb"}));
    bias = ok_value(
        create_variable(Tensor::from_vector<float>({1, 2, 3, 4}, {4}), {.name = prefix + "bias"}));
    optimizer = ok_value(Optimizer::create(config, 0.05, {.name = prefix + "opt"}));
  }

  Checkpoint checkpoint() const {
    return ok_value(Checkpoint::create({{"model/emb", emb}, {"model/bias", bias}}, optimizer));
  }

  // Sparse rows `ids` of emb (dense when empty) and a dense bias gradient.
  void train(float k, std::vector<int64_t> ids = {}) const {
    std::vector<GradientAndVariable> grads;
    if (ids.empty()) {
      std::vector<float> g(13 * 4);
      for (size_t i = 0; i < g.size(); ++i) g[i] = k * (static_cast<float>(i % 7) - 3);
      grads.push_back({Tensor::from_vector(g, {13, 4}), emb});
    } else {
      std::vector<float> rows(ids.size() * 4);
      for (size_t i = 0; i < rows.size(); ++i) rows[i] = k * (0.5f + static_cast<float>(i));
      grads.push_back(
          {IndexedSlices{Tensor::from_vector(rows, {static_cast<int64_t>(ids.size()), 4}),
                         Tensor::from_vector(ids)},
           emb});
    }
    grads.push_back({Tensor::from_vector<float>({k, -k, 2 * k, 0.25f}, {4}), bias});
    ASSERT_TRUE(optimizer->apply_gradients(grads).ok());
  }

  int64_t iterations() const {
    return ok_value(optimizer->iterations().read_value()).scalar_value<int64_t>();
  }

  struct State {
    FullState emb, bias;
    int64_t iterations = 0;
  };
  State state() const { return {full_state(emb, config), full_state(bias, config), iterations()}; }

  OptimizerConfig config;
  std::unique_ptr<ParameterServerStrategy> strategy;
  ShardedVariable emb, bias;
  std::optional<Optimizer> optimizer;
};

void expect_same(const Model::State& a, const Model::State& b, bool same_steps = true) {
  {
    SCOPED_TRACE("emb");
    expect_same(a.emb, b.emb, same_steps);
  }
  {
    SCOPED_TRACE("bias");
    expect_same(a.bias, b.bias, same_steps);
  }
  EXPECT_EQ(a.iterations, b.iterations);
}

TEST_F(CheckpointIntegrationTest, SaveModifyRestoreGivesBackValuesAndSlots) {
  for (OptimizerConfig::Kind kind :
       {OptimizerConfig::Kind::kAdam, OptimizerConfig::Kind::kAdagrad}) {
    SCOPED_TRACE(std::string(optimizer_name(kind)));
    const std::string prefix = "rt_" + std::string(optimizer_name(kind)) + "_";
    Model m(spec_with(3), ok_value(fixed_shards_partitioner(3)), config_of(kind), prefix);
    ASSERT_EQ(m.emb.num_parts(), 3u);
    EXPECT_THAT((std::vector<int>{m.emb.variables()[0].task(), m.emb.variables()[1].task(),
                                  m.emb.variables()[2].task()}),
                ElementsAre(0, 1, 2));
    m.train(1, {0, 5, 12});
    m.train(-0.5f);
    m.train(2, {5, 5, 1});
    TempDir dir;
    const Checkpoint ckpt = m.checkpoint();
    ASSERT_TRUE(ckpt.save(dir / "ckpt").ok());
    const Model::State saved = m.state();
    EXPECT_EQ(saved.iterations, 3);
    EXPECT_NE(saved.emb.slots.begin()->second, Tensor(DType::kFloat32, {13, 4}));

    m.train(1.5f, {2, 9});  // the reference next step
    const Model::State reference = m.state();
    ASSERT_TRUE(m.emb.assign(Tensor(DType::kFloat32, {13, 4})).ok());
    m.train(4);
    ASSERT_TRUE(ckpt.restore(dir / "ckpt").ok());
    expect_same(m.state(), saved);
    m.train(1.5f, {2, 9});
    expect_same(m.state(), reference);
  }
}

TEST_F(CheckpointIntegrationTest, RestoresIntoFewerShardsAndFewerPs) {
  struct Case {
    OptimizerConfig::Kind kind;
    bool dense;
  };
  for (const Case& c :
       {Case{OptimizerConfig::Kind::kAdagrad, false}, Case{OptimizerConfig::Kind::kAdam, true}}) {
    const OptimizerConfig config = config_of(c.kind);
    const std::string name(optimizer_name(c.kind));
    SCOPED_TRACE(name);
    auto step = [&](const Model& m, float k) {
      if (c.dense) {
        m.train(k);
      } else {
        m.train(k, {0, 1, 6});  // the third shard (rows 10-12) stays untouched
      }
    };
    Model three(spec_with(3), ok_value(fixed_shards_partitioner(3)), config, "rs3_" + name);
    step(three, 1);
    step(three, 0.5f);
    TempDir dir;
    ASSERT_TRUE(three.checkpoint().save(dir / "ckpt").ok());
    const Model::State saved = three.state();

    Model two(spec_with(2), ok_value(fixed_shards_partitioner(2)), config, "rs2_" + name);
    Model one(spec_with(1), nullptr, config, "rs1_" + name);
    ASSERT_EQ(two.emb.num_parts(), 2u);
    ASSERT_EQ(two.emb.variables()[1].task(), 1);
    ASSERT_EQ(one.emb.num_parts(), 1u);
    step(two, 7);  // state of their own, which the restore replaces
    for (const Model* m : {&two, &one}) {
      SCOPED_TRACE(m->emb.num_parts());
      ASSERT_TRUE(m->checkpoint().restore(dir / "ckpt").ok());
      expect_same(m->state(), saved, /*same_steps=*/false);
    }
    step(three, -2);
    for (const Model* m : {&two, &one}) {
      SCOPED_TRACE(m->emb.num_parts());
      step(*m, -2);
      EXPECT_EQ(ok_value(m->emb.read_value()), ok_value(three.emb.read_value()));
      EXPECT_EQ(ok_value(m->bias.read_value()), ok_value(three.bias.read_value()));
      EXPECT_EQ(m->iterations(), three.iterations());
    }
  }
}

TEST_F(CheckpointIntegrationTest, APsRejectsBadRestoresAndStaysUp) {
  Model m(spec_with(1), nullptr, config_of(OptimizerConfig::Kind::kAdam), "ps_bad_");
  m.train(1);
  const std::string part = m.emb.variables()[0].name();
  std::unique_ptr<VariableClient> client = make_grpc_variable_client(
      ok_value(cluster_->cluster_spec().task_address("ps", 0)), task_name("ps", 0));
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  ExecuteBatch snapshot;
  snapshot.ops.emplace_back();
  snapshot.ops.back().kind = v1::VariableOp::SNAPSHOT;
  snapshot.ops.back().variable = part;
  std::vector<Tensor> results = ok_value(client->execute_batch(snapshot, deadline));
  size_t pos = 0;
  const ShardSnapshot before = ok_value(take_snapshot_results(results, &pos, part));
  ASSERT_EQ(before.slots.optimizer, "adam");
  ASSERT_EQ(before.slots.steps, 1);

  const std::vector<std::pair<std::string, std::function<void(VariableOpArgs&)>>> bad = {
      {"slot 'q' of variable '" + part + "' is not a slot of the adam optimizer",
       [](VariableOpArgs& o) {
         o.slot_names = {"m", "q"};
       }},
      {"slot 'v' of variable '" + part + "' is float32 [3]",
       [](VariableOpArgs& o) { o.slots[1] = Tensor(DType::kFloat32, {3}); }},
      {"restored value is float64 [13, 4] but variable '" + part + "'",
       [](VariableOpArgs& o) {
         o.value = Tensor(DType::kFloat64, {13, 4});
       }},
  };
  for (const auto& [needle, corrupt] : bad) {
    SCOPED_TRACE(needle);
    VariableOpArgs op;
    op.kind = v1::VariableOp::RESTORE;
    op.variable = part;
    set_restore_state(before, &op);
    op.value = Tensor(DType::kFloat32, {13, 4});  // would zero the value
    corrupt(op);
    ExecuteBatch batch;
    batch.ops.push_back(std::move(op));
    absl::StatusOr<std::vector<Tensor>> r = client->execute_batch(batch, deadline);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(needle));
    // Unchanged, and the ps still serves.
    EXPECT_EQ(full_state(m.emb, m.config).value, before.value);
  }
}

void edit_index(const std::string& dir, const std::function<void(Json&)>& edit) {
  Json j = Json::parse(read_all(dir + "/index.json"));
  edit(j);
  write_all(dir + "/index.json", j.dump(1));
}

TEST_F(CheckpointIntegrationTest, ACorruptCheckpointNamesTheFileAndChangesNothing) {
  Model m(spec_with(3), ok_value(fixed_shards_partitioner(3)),
          config_of(OptimizerConfig::Kind::kAdam), "bad_");
  m.train(1, {0, 12});
  TempDir dir;
  const std::string good = dir / "good";
  ASSERT_TRUE(m.checkpoint().save(good).ok());
  m.train(3);
  const Model::State before = m.state();

  struct Case {
    std::string label;
    std::function<void(const std::string&)> corrupt;
    std::vector<std::string> needles;
  };
  const std::vector<Case> cases = {
      {"flipped bytes",
       [](const std::string& d) {
         std::string bytes = read_all(d + "/ps-2.safetensors");
         for (size_t i = bytes.size() - 8; i < bytes.size(); ++i) bytes[i] ^= 0x5a;
         write_all(d + "/ps-2.safetensors", bytes);
       },
       {"ps-2.safetensors: CRC32 is"}},
      {"flipped header bytes with the checksum fixed",
       [](const std::string& d) {
         std::string bytes = read_all(d + "/ps-1.safetensors");
         bytes[0] = '\x07';  // the header length
         write_all(d + "/ps-1.safetensors", bytes);
         edit_index(d, [&](Json& j) {
           for (Json& f : j["files"]) {
             if (f["name"] == "ps-1.safetensors") f["crc32"] = checkpoint::crc32_of(bytes);
           }
         });
       },
       {"ps-1.safetensors: the header is not"}},
      {"truncated",
       [](const std::string& d) {
         const std::string bytes = read_all(d + "/ps-0.safetensors");
         write_all(d + "/ps-0.safetensors", bytes.substr(0, bytes.size() / 2));
       },
       {"ps-0.safetensors: the file is"}},
      {"wrong shape in the index",
       [](const std::string& d) {
         edit_index(d, [](Json& j) {
           for (Json& v : j["variables"]) {
             if (v["name"] != "model/bias") continue;
             // One more row, in the last part (bias [4] has 3 parts).
             v["shape"] = {5};
             Json& last = v["parts"][v["parts"].size() - 1];
             last["shape"] = {last["shape"][0].get<int64_t>() + 1};
           }
         });
       },
       {"index.json: variable 'model/bias' is float32 [5] in the checkpoint but float32 [4] here"}},
  };
  int n = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    const std::string copy = dir / absl::StrCat("case", n++);
    fs::copy(good, copy, fs::copy_options::recursive);
    c.corrupt(copy);
    absl::Status s = m.checkpoint().restore(copy);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(copy));
    for (const std::string& needle : c.needles) {
      EXPECT_THAT(std::string(s.message()), HasSubstr(needle));
    }
    expect_same(m.state(), before);
  }
}

TEST_F(CheckpointIntegrationTest, ManagerKeepsMaxToKeepAndARestartedCoordinatorResumes) {
  const OptimizerConfig adam = config_of(OptimizerConfig::Kind::kAdam);
  TempDir dir;
  const std::string root = dir / "run";
  constexpr int64_t kStepsPerEpoch = 2;
  Model::State last;
  {
    Model m(spec_with(3), ok_value(fixed_shards_partitioner(3)), adam, "mgr_a_");
    CheckpointManager manager = ok_value(CheckpointManager::create(m.checkpoint(), root, 2));
    EXPECT_EQ(ok_value(manager.restore_or_initialize()), std::nullopt);
    for (int epoch = 0; epoch < 3; ++epoch) {
      for (int s = 0; s < kStepsPerEpoch; ++s) m.train(1 + static_cast<float>(s), {3, 7});
      EXPECT_EQ(ok_value(manager.save()), root + absl::StrCat("/ckpt-", (epoch + 1) * 2));
    }
    EXPECT_THAT(manager.checkpoints(), ElementsAre(root + "/ckpt-4", root + "/ckpt-6"));
    EXPECT_FALSE(fs::exists(root + "/ckpt-2"));
    last = m.state();
  }
  // The restarted coordinator: a new strategy, variables with other stored
  // names, a fresh optimizer; it finds the epoch to resume from, then the
  // state.
  Model r(spec_with(3), ok_value(fixed_shards_partitioner(3)), adam, "mgr_b_");
  CheckpointManager manager = ok_value(CheckpointManager::create(r.checkpoint(), root, 2));
  const std::optional<std::string> latest = manager.latest_checkpoint();
  ASSERT_EQ(latest, root + "/ckpt-6");
  EXPECT_EQ(ok_value(load_checkpoint_iterations(*latest)) / kStepsPerEpoch, 3);
  EXPECT_EQ(ok_value(manager.restore_or_initialize()), latest);
  expect_same(r.state(), last);
  r.train(1, {3});
  EXPECT_EQ(ok_value(manager.save()), root + "/ckpt-7");
  EXPECT_THAT(manager.checkpoints(), ElementsAre(root + "/ckpt-6", root + "/ckpt-7"));
}

// Reads a checkpoint with Python's standard library only (struct, json,
// zlib): the layout promised to Python tools. Exits non-zero on any
// mismatch.
constexpr char kPythonCheck[] = R"PY(
import json, os, struct, sys, zlib
d, expected_path = sys.argv[1], sys.argv[2]
expected = json.load(open(expected_path))
index = json.load(open(os.path.join(d, "index.json")))
assert index["format"] == "psflow-checkpoint", index["format"]
assert index["format_version"] == 1
assert index["iterations"] == expected["iterations"], index["iterations"]
item = {"F32": 4, "F64": 8, "I32": 4, "I64": 8, "U8": 1, "BOOL": 1}
tensors = {}
for f in index["files"]:
    data = open(os.path.join(d, f["name"]), "rb").read()
    assert len(data) == f["size"], (f["name"], len(data), f["size"])
    assert zlib.crc32(data) & 0xffffffff == f["crc32"], f["name"]
    (n,) = struct.unpack("<Q", data[:8])
    assert (8 + n) % 8 == 0
    header = json.loads(data[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__")
    assert meta["format"] == "psflow-checkpoint", meta
    body = data[8 + n:]
    end = 0
    for name, info in sorted(header.items(), key=lambda kv: tuple(kv[1]["data_offsets"])):
        b, e = info["data_offsets"]
        assert b == end, (f["name"], name, b, end)
        count = 1
        for s in info["shape"]:
            count *= s
        assert e - b == count * item[info["dtype"]], (name, info)
        end = e
        tensors[(f["name"], name)] = (info, body[b:e])
    assert end == len(body), (f["name"], end, len(body))
for name, want in expected["variables"].items():
    v = [v for v in index["variables"] if v["name"] == name][0]
    values, slots = [], {}
    for p in v["parts"]:
        info, raw = tensors[(p["file"], p["key"])]
        assert info["dtype"] == "F32" and info["shape"] == p["shape"], info
        values += struct.unpack("<%df" % (len(raw) // 4), raw)
        for slot, key in p["slots"].items():
            slots.setdefault(slot, []).extend(
                struct.unpack("<%df" % (len(raw) // 4), tensors[(p["file"], key)][1]))
    if values != want["value"]:
        sys.exit("%s: values differ: %r vs %r" % (name, values, want["value"]))
    for slot, want_slot in want["slots"].items():
        if slots.get(slot) != want_slot:
            sys.exit("%s: slot %s differs" % (name, slot))
print("python check ok")
)PY";

TEST_F(CheckpointIntegrationTest, PythonToolsReadTheFiles) {
  // Every part trained, so every part has both Adam slots.
  Model m(spec_with(3), ok_value(fixed_shards_partitioner(3)),
          config_of(OptimizerConfig::Kind::kAdam), "py_");
  m.train(1);
  m.train(-0.25f);
  TempDir dir;
  ASSERT_TRUE(m.checkpoint().save(dir / "ckpt").ok());
  const Model::State s = m.state();
  auto floats = [](const Tensor& t) {
    const auto f = t.flat<float>();
    return std::vector<double>(f.begin(), f.end());
  };
  Json expected;
  expected["iterations"] = s.iterations;
  for (const auto& [name, state] :
       {std::pair{"model/emb", &s.emb}, std::pair{"model/bias", &s.bias}}) {
    Json v;
    v["value"] = floats(state->value);
    for (const auto& [slot, t] : state->slots) v["slots"][slot] = floats(t);
    expected["variables"][name] = v;
  }
  write_all(dir / "expected.json", expected.dump());
  write_all(dir / "check.py", kPythonCheck);

  if (std::system("command -v python3 > /dev/null 2>&1") == 0) {
    const std::string cmd = absl::StrCat("python3 '", dir / "check.py", "' '", dir / "ckpt", "' '",
                                         dir / "expected.json", "'");
    const int rc = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(rc)) << rc;
    EXPECT_EQ(WEXITSTATUS(rc), 0) << "the Python check failed: " << cmd;
  } else {
    std::cout << "python3 not found: checking with the C++ reader instead\n";
  }
  // The same with the C++ reader, whether or not Python ran.
  const Json index = Json::parse(read_all(dir / "ckpt/index.json"));
  for (const Json& f : index["files"]) {
    const std::string path = dir / ("ckpt/" + f["name"].get<std::string>());
    const std::string bytes = read_all(path);
    EXPECT_EQ(bytes.size(), f["size"].get<uint64_t>());
    EXPECT_EQ(checkpoint::crc32_of(bytes), f["crc32"].get<uint32_t>());
    ASSERT_TRUE(checkpoint::decode_safetensors(bytes, path).ok());
  }
  for (const Json& v : index["variables"]) {
    std::vector<Tensor> parts;
    for (const Json& p : v["parts"]) {
      const std::string path = dir / ("ckpt/" + p["file"].get<std::string>());
      auto contents = ok_value(checkpoint::read_safetensors_file(path, 1 << 30));
      parts.push_back(contents.tensors.at(p["key"].get<std::string>()));
    }
    const FullState& want = v["name"] == "model/emb" ? s.emb : s.bias;
    EXPECT_EQ(concat_rows(parts), want.value) << v["name"];
  }
}

}  // namespace
}  // namespace psflow::internal

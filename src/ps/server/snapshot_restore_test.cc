// SNAPSHOT and RESTORE: the ps side of checkpoints.
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/variable_client.h"
#include "ps/request/grpc_execute_codec.h"
#include "ps/request/snapshot_results.h"
#include "ps/server/execute.h"
#include "ps/server/execute_test_util.h"
#include "ps/server/local_variable_client.h"
#include "ps/server/variable_store.h"

namespace psflow::internal {
namespace {

using Op = v1::VariableOp;
using ::testing::HasSubstr;

OptimizerConfig adam() {
  OptimizerConfig c;
  c.kind = OptimizerConfig::Kind::kAdam;
  return c;
}

VariableOpArgs make(Op::Kind kind, std::string name, Tensor value = Tensor()) {
  VariableOpArgs a;
  a.kind = kind;
  a.variable = std::move(name);
  a.value = std::move(value);
  return a;
}

Tensor w_init() { return Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2}); }
Tensor grad() { return Tensor::from_vector<float>({0.5f, -1, 2, 0.25f, -0.5f, 1}, {3, 2}); }

// Applies one dense gradient with `config` to `name`.
absl::Status apply(VariableStore& store, const std::string& name, const OptimizerConfig& config,
                   const Tensor& g) {
  ExecuteBatch b;
  b.optimizers.push_back(config);
  VariableOpArgs op = make(Op::APPLY_DENSE, name, g);
  op.learning_rate = 0.1;
  b.ops.push_back(op);
  std::vector<Tensor> results;
  return execute_variable_ops(store, b, &results);
}

absl::StatusOr<VariableShard::Snapshot> snapshot(VariableStore& store, const std::string& name) {
  ExecuteBatch b;
  b.ops.push_back(make(Op::SNAPSHOT, name));
  std::vector<Tensor> results;
  absl::Status s = execute_variable_ops(store, b, &results);
  if (!s.ok()) return s;
  size_t pos = 0;
  absl::StatusOr<VariableShard::Snapshot> snap = take_snapshot_results(results, &pos, name);
  EXPECT_EQ(pos, results.size());
  return snap;
}

void expect_same_state(const VariableShard::Snapshot& a, const VariableShard::Snapshot& b) {
  EXPECT_EQ(a.value, b.value);
  EXPECT_EQ(a.slots.optimizer, b.slots.optimizer);
  EXPECT_EQ(a.slots.steps, b.slots.steps);
  ASSERT_EQ(a.slots.slots.size(), b.slots.slots.size());
  for (const auto& [name, slot] : a.slots.slots) {
    auto it = b.slots.slots.find(name);
    ASSERT_NE(it, b.slots.slots.end()) << name;
    EXPECT_EQ(slot, it->second) << name;
  }
}

absl::Status restore(VariableStore& store, const std::string& name,
                     const VariableShard::Snapshot& state) {
  ExecuteBatch b;
  VariableOpArgs op = make(Op::RESTORE, name);
  set_restore_state(state, &op);
  b.ops.push_back(op);
  std::vector<Tensor> results;
  absl::Status s = execute_variable_ops(store, b, &results);
  EXPECT_TRUE(results.empty());
  return s;
}

TEST(SnapshotTest, ReturnsValueSlotsOptimizerAndSteps) {
  VariableStore store;
  ASSERT_TRUE(store.create("w", w_init()).ok());
  absl::StatusOr<VariableShard::Snapshot> fresh = snapshot(store, "w");
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(fresh->value, w_init());
  EXPECT_EQ(fresh->slots.optimizer, "");
  EXPECT_EQ(fresh->slots.steps, 0);
  EXPECT_TRUE(fresh->slots.slots.empty());

  ASSERT_TRUE(apply(store, "w", adam(), grad()).ok());
  ASSERT_TRUE(apply(store, "w", adam(), grad()).ok());
  absl::StatusOr<VariableShard::Snapshot> s = snapshot(store, "w");
  ASSERT_TRUE(s.ok()) << s.status();
  const VariableShard::Snapshot direct = (*store.find("w"))->snapshot();
  expect_same_state(*s, direct);
  EXPECT_EQ(s->slots.optimizer, "adam");
  EXPECT_EQ(s->slots.steps, 2);
  ASSERT_EQ(s->slots.slots.size(), 2u);
  EXPECT_NE(s->slots.slots.at("m"), Tensor(DType::kFloat32, {3, 2}));
  // The snapshot is a copy: later updates do not change it.
  ASSERT_TRUE(apply(store, "w", adam(), grad()).ok());
  expect_same_state(*s, direct);

  absl::StatusOr<VariableShard::Snapshot> missing = snapshot(store, "nope");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

TEST(SnapshotTest, ResultsInterleaveWithReadsInOpOrder) {
  auto store = std::make_shared<VariableStore>();
  ASSERT_TRUE(store->create("w", w_init()).ok());
  ASSERT_TRUE(store->create("b", Tensor::from_vector<float>({7, 8}, {2})).ok());
  ASSERT_TRUE(apply(*store, "w", adam(), grad()).ok());
  // The local client copies READ results; it must find them after a SNAPSHOT's.
  std::unique_ptr<VariableClient> client = make_local_variable_client(store, "/job:ps/task:0");
  ExecuteBatch b;
  b.ops.push_back(make(Op::SNAPSHOT, "w"));
  b.ops.push_back(make(Op::READ, "b"));
  b.ops.push_back(make(Op::SNAPSHOT, "b"));
  absl::StatusOr<std::vector<Tensor>> results = client->execute_batch(b, absl::InfiniteFuture());
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 5u + 1u + 3u);
  size_t pos = 0;
  ASSERT_EQ(op_result_count(b.ops[0], *results, 0), 5u);
  absl::StatusOr<VariableShard::Snapshot> w = take_snapshot_results(*results, &pos, "w");
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(pos, 5u);
  Tensor& read_b = (*results)[pos++];
  EXPECT_EQ(read_b, Tensor::from_vector<float>({7, 8}, {2}));
  read_b.mutable_flat<float>()[0] = 42;  // a copy: the store is unchanged
  EXPECT_EQ((*store->find("b"))->read(), Tensor::from_vector<float>({7, 8}, {2}));
  absl::StatusOr<VariableShard::Snapshot> sb = take_snapshot_results(*results, &pos, "b");
  ASSERT_TRUE(sb.ok()) << sb.status();
  EXPECT_EQ(sb->value, Tensor::from_vector<float>({7, 8}, {2}));
  EXPECT_EQ(pos, results->size());
}

TEST(SnapshotTest, SurvivesTheWireFormat) {
  VariableStore store;
  ASSERT_TRUE(store.create("w", w_init()).ok());
  ASSERT_TRUE(apply(store, "w", adam(), grad()).ok());
  ExecuteBatch b;
  b.ops.push_back(make(Op::SNAPSHOT, "w"));
  absl::StatusOr<ExecuteBatch> decoded = decode_execute_request(encode_execute_request(b));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  std::vector<Tensor> results;
  ASSERT_TRUE(execute_variable_ops(store, *decoded, &results).ok());
  absl::StatusOr<std::vector<Tensor>> back =
      decode_execute_response(encode_execute_response(results));
  ASSERT_TRUE(back.ok()) << back.status();
  size_t pos = 0;
  absl::StatusOr<VariableShard::Snapshot> s = take_snapshot_results(*back, &pos, "w");
  ASSERT_TRUE(s.ok()) << s.status();
  expect_same_state(*s, (*store.find("w"))->snapshot());
}

TEST(SnapshotTest, MalformedAnswersAreInternalErrors) {
  auto expect_bad = [](std::vector<Tensor> results, const std::string& needle) {
    size_t pos = 0;
    absl::StatusOr<VariableShard::Snapshot> s = take_snapshot_results(results, &pos, "w");
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInternal);
    EXPECT_THAT(std::string(s.status().message()), HasSubstr("'w'"));
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(needle));
    EXPECT_EQ(pos, 0u);
  };
  const Tensor v = Tensor::from_vector<float>({1, 2}, {2});
  expect_bad({v, Tensor::scalar<int64_t>(1)}, "fewer than 3");
  expect_bad({v, Tensor::scalar<int32_t>(1), Tensor::from_strings({""})}, "steps");
  expect_bad({v, Tensor::scalar<int64_t>(1), Tensor::from_strings({})}, "names");
  expect_bad({v, Tensor::scalar<int64_t>(1), Tensor::from_strings({"adam", "m", "v"}), v},
             "slots are missing");
  expect_bad({v, Tensor::scalar<int64_t>(1), Tensor::from_strings({"adam", "m"}),
              Tensor::from_vector<float>({1, 2, 3}, {3})},
             "slot 'm'");
  expect_bad({v, Tensor::scalar<int64_t>(1), Tensor::from_strings({"adam", "m", "m"}), v, v},
             "twice");
}

TEST(RestoreTest, RoundTripCreatesTheVariableAndTheNextUpdateMatches) {
  VariableStore original;
  ASSERT_TRUE(original.create("w", w_init()).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(apply(original, "w", adam(), grad()).ok());
  absl::StatusOr<VariableShard::Snapshot> saved = snapshot(original, "w");
  ASSERT_TRUE(saved.ok()) << saved.status();

  // Restore into a store that does not hold the variable (a restarted ps)
  // and into one where it exists with other values.
  VariableStore empty;
  VariableStore other;
  ASSERT_TRUE(other.create("w", Tensor(DType::kFloat32, {3, 2})).ok());
  ASSERT_TRUE(apply(other, "w", adam(), grad()).ok());
  ASSERT_TRUE(restore(empty, "w", *saved).ok());
  ASSERT_TRUE(restore(other, "w", *saved).ok());
  expect_same_state(*snapshot(empty, "w"), *saved);
  expect_same_state(*snapshot(other, "w"), *saved);

  // Adam's bias correction depends on the restored step count: the next
  // update is bit-identical to the original's.
  const Tensor g2 = Tensor::from_vector<float>({1, 1, -2, 0.5f, 3, -1}, {3, 2});
  for (VariableStore* s : {&original, &empty, &other}) ASSERT_TRUE(apply(*s, "w", adam(), g2).ok());
  expect_same_state(*snapshot(empty, "w"), *snapshot(original, "w"));
  expect_same_state(*snapshot(other, "w"), *snapshot(original, "w"));
  EXPECT_EQ(snapshot(original, "w")->slots.steps, 4);

  // Restoring "no optimizer state" clears the slots.
  VariableShard::Snapshot plain;
  plain.value = w_init();
  ASSERT_TRUE(restore(other, "w", plain).ok());
  expect_same_state(*snapshot(other, "w"), plain);
  // And the restored buffer is the ps's own: changing ours does not leak in.
  plain.value.mutable_flat<float>()[0] = 99;
  EXPECT_EQ((*other.find("w"))->read(), w_init());
}

TEST(RestoreTest, BadInputIsRejectedNamingTheVariableAndChangesNothing) {
  VariableStore store;
  ASSERT_TRUE(store.create("w", w_init()).ok());
  ASSERT_TRUE(store.create("n", Tensor::from_vector<int32_t>({1, 2}, {2})).ok());
  ASSERT_TRUE(apply(store, "w", adam(), grad()).ok());
  const VariableShard::Snapshot before_w = (*store.find("w"))->snapshot();
  const VariableShard::Snapshot before_n = (*store.find("n"))->snapshot();
  const VariableShard::Snapshot good = before_w;

  struct Case {
    std::string label;
    std::string variable;
    std::function<void(VariableOpArgs&)> corrupt;
    std::string needle;
  };
  const Tensor f32 = Tensor(DType::kFloat32, {3, 2});
  const std::vector<Case> cases = {
      {"unknown slot", "w",
       [](VariableOpArgs& o) {
         o.slot_names = {"m", "q"};
       },
       "slot 'q' of variable 'w' is not a slot of the adam optimizer"},
      {"missing slot", "w",
       [](VariableOpArgs& o) {
         o.slot_names.pop_back();
         o.slots.pop_back();
       },
       "slot 'v' of variable 'w' is missing"},
      {"slot dtype", "w",
       [](VariableOpArgs& o) {
         o.slots[0] = Tensor(DType::kFloat64, {3, 2});
       },
       "slot 'm' of variable 'w' is float64 [3, 2]"},
      {"slot shape", "w",
       [](VariableOpArgs& o) {
         o.slots[1] = Tensor(DType::kFloat32, {2, 3});
       },
       "slot 'v' of variable 'w' is float32 [2, 3]"},
      {"value shape", "w", [](VariableOpArgs& o) { o.value = Tensor(DType::kFloat32, {6}); },
       "restored value is float32 [6] but variable 'w' is float32 [3, 2]"},
      {"value dtype", "w",
       [](VariableOpArgs& o) {
         o.value = Tensor(DType::kInt32, {3, 2});
       },
       "restored value is int32 [3, 2] but variable 'w'"},
      {"no value", "w", [](VariableOpArgs& o) { o.value = Tensor(); }, "RESTORE needs a value"},
      {"unknown optimizer", "w", [](VariableOpArgs& o) { o.optimizer_name = "adamw"; },
       "variable 'w': unknown optimizer 'adamw'"},
      {"slots without optimizer", "w", [](VariableOpArgs& o) { o.optimizer_name = ""; },
       "variable 'w' has 2 slot(s) and 1 step(s) but no optimizer name"},
      {"negative steps", "w", [](VariableOpArgs& o) { o.optimizer_steps = -1; },
       "step count -1 for variable 'w' is out of range"},
      {"steps that cannot count on", "w",
       [](VariableOpArgs& o) { o.optimizer_steps = std::numeric_limits<int64_t>::max(); },
       "step count 9223372036854775807 for variable 'w' is out of range"},
      {"names and slots differ", "w", [](VariableOpArgs& o) { o.slot_names.push_back("x"); },
       "RESTORE of variable 'w' names 3 slot(s) but carries 2"},
      {"slot named twice", "w",
       [](VariableOpArgs& o) {
         o.slot_names = {"m", "m"};
       },
       "names slot 'm' twice"},
      {"optimizer on an int variable", "n",
       [](VariableOpArgs& o) {
         o.value = Tensor::from_vector<int32_t>({5, 6}, {2});
         o.slots = {Tensor(DType::kInt32, {2}), Tensor(DType::kInt32, {2})};
       },
       "variable 'n' carries adam optimizer state: optimizers update float32 or float64"},
      {"new variable with bad slots", "fresh",
       [&](VariableOpArgs& o) { o.slots[0] = Tensor(DType::kFloat32, {1}); },
       "slot 'm' of variable 'fresh' is float32 [1]"},
      {"empty name", "", [](VariableOpArgs&) {}, "non-empty variable name"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    ExecuteBatch b;
    // A valid op first: the bad one must stop the whole batch.
    b.ops.push_back(make(Op::ASSIGN, "w", f32));
    VariableOpArgs op = make(Op::RESTORE, c.variable);
    set_restore_state(good, &op);
    c.corrupt(op);
    b.ops.push_back(op);
    // Through the wire format, as a remote client would send it.
    absl::StatusOr<ExecuteBatch> decoded = decode_execute_request(encode_execute_request(b));
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    std::vector<Tensor> results;
    absl::Status s = execute_variable_ops(store, *decoded, &results);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.needle));
    EXPECT_THAT(std::string(s.message()), HasSubstr("op 1 (RESTORE"));
    expect_same_state((*store.find("w"))->snapshot(), before_w);
    expect_same_state((*store.find("n"))->snapshot(), before_n);
    EXPECT_EQ(store.size(), 2u);
  }
  // Direct calls validate as well.
  VariableShard::Snapshot bad = good;
  bad.slots.slots.erase("v");
  EXPECT_EQ(store.restore("w", bad).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.restore("fresh", bad).status().code(), absl::StatusCode::kInvalidArgument);
  expect_same_state((*store.find("w"))->snapshot(), before_w);
  EXPECT_EQ(store.size(), 2u);
}

TEST(RestoreTest, ProtoPathCarriesTheOptimizerState) {
  VariableStore store;
  ASSERT_TRUE(store.create("w", w_init()).ok());
  ASSERT_TRUE(apply(store, "w", adam(), grad()).ok());
  const VariableShard::Snapshot saved = (*store.find("w"))->snapshot();
  ExecuteBatch b;
  VariableOpArgs op = make(Op::RESTORE, "copy");
  set_restore_state(saved, &op);
  b.ops.push_back(op);
  v1::ExecuteRequest request;
  batch_to_proto(b, &request);
  v1::ExecuteResponse response;
  ASSERT_TRUE(testing::execute_proto(store, request, &response).ok());
  expect_same_state((*store.find("copy"))->snapshot(), saved);
}

}  // namespace
}  // namespace psflow::internal

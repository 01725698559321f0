#include "ps/server/execute.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "optimizer/optimizer_kernels.h"
#include "ps/server/execute_test_util.h"
#include "tensor/codec.h"

namespace psflow::internal {
namespace {

using Op = v1::VariableOp;

void add_op(v1::ExecuteRequest& req, Op::Kind kind, const std::string& name,
            const Tensor* value = nullptr, const Tensor* ids = nullptr) {
  Op* op = req.add_ops();
  op->set_kind(kind);
  op->set_variable(name);
  if (value != nullptr) tensor_to_proto(*value, op->mutable_value());
  if (ids != nullptr) tensor_to_proto(*ids, op->mutable_ids());
}

Tensor result(v1::ExecuteResponse& resp, int i) {
  auto t = tensor_from_proto(resp.mutable_results(i));
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : Tensor();
}

class ExecuteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(store_.create("w", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2})).ok());
    ASSERT_TRUE(store_.create("b", Tensor::from_vector<float>({0.5f, -0.5f}, {2})).ok());
  }
  VariableStore store_;
};

TEST_F(ExecuteTest, BatchOfReadsUpdatesAndGathersRunsInOrder) {
  v1::ExecuteRequest req;
  const Tensor delta = Tensor::from_vector<float>({1, 1}, {2});
  const Tensor ids = Tensor::from_vector<int64_t>({2, 0}, {2});
  add_op(req, Op::READ, "b");
  add_op(req, Op::ASSIGN_ADD, "b", &delta);
  add_op(req, Op::READ, "b");
  add_op(req, Op::GATHER, "w", nullptr, &ids);
  v1::ExecuteResponse resp;
  ASSERT_TRUE(testing::execute_proto(store_, req, &resp).ok());
  ASSERT_EQ(resp.results_size(), 3);
  EXPECT_EQ(result(resp, 0), Tensor::from_vector<float>({0.5f, -0.5f}, {2}));
  EXPECT_EQ(result(resp, 1), Tensor::from_vector<float>({1.5f, 0.5f}, {2}));
  EXPECT_EQ(result(resp, 2), Tensor::from_vector<float>({5, 6, 1, 2}, {2, 2}));
}

TEST_F(ExecuteTest, ApplyGradientsWithRequestOptimizer) {
  v1::ExecuteRequest req;
  OptimizerConfig sgd;
  optimizer_to_proto(sgd, req.add_optimizers());
  const Tensor grad = Tensor::from_vector<float>({1, 1}, {2});
  add_op(req, Op::APPLY_DENSE, "b", &grad);
  req.mutable_ops(0)->set_learning_rate(0.5);
  const Tensor ids = Tensor::from_vector<int32_t>({1, 1}, {2});
  const Tensor rows = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  add_op(req, Op::APPLY_SPARSE, "w", &rows, &ids);
  req.mutable_ops(1)->set_learning_rate(1.0);
  v1::ExecuteResponse resp;
  ASSERT_TRUE(testing::execute_proto(store_, req, &resp).ok());
  EXPECT_EQ((*store_.find("b"))->read(), Tensor::from_vector<float>({0, -1}, {2}));
  EXPECT_EQ((*store_.find("w"))->read(), Tensor::from_vector<float>({1, 2, -1, -2, 5, 6}, {3, 2}));
}

TEST_F(ExecuteTest, ABadOpRejectsTheWholeBatchBeforeAnyChange) {
  const Tensor delta = Tensor::from_vector<float>({1, 1}, {2});
  const Tensor bad_ids = Tensor::from_vector<int64_t>({7}, {1});
  const Tensor row = Tensor::from_vector<float>({9, 9}, {1, 2});
  struct Case {
    std::string label;
    std::function<void(v1::ExecuteRequest&)> add_bad;
    absl::StatusCode code;
  };
  const std::vector<Case> cases = {
      {"unknown variable", [&](auto& r) { add_op(r, Op::ASSIGN_ADD, "nope", &delta); },
       absl::StatusCode::kNotFound},
      {"out of range id", [&](auto& r) { add_op(r, Op::SCATTER_ADD, "w", &row, &bad_ids); },
       absl::StatusCode::kInvalidArgument},
      {"wrong shape", [&](auto& r) { add_op(r, Op::ASSIGN, "w", &delta); },
       absl::StatusCode::kInvalidArgument},
      {"missing optimizer",
       [&](auto& r) {
         add_op(r, Op::APPLY_DENSE, "b", &delta);
         r.mutable_ops(r.ops_size() - 1)->set_optimizer(3);
       },
       absl::StatusCode::kInvalidArgument},
      {"garbage tensor",
       [&](auto& r) {
         add_op(r, Op::ASSIGN, "b", &delta);
         r.mutable_ops(r.ops_size() - 1)->mutable_value()->set_content("xyz");
       },
       absl::StatusCode::kInvalidArgument},
      {"unknown kind",
       [&](auto& r) {
         add_op(r, Op::READ, "b");
         r.mutable_ops(r.ops_size() - 1)->set_kind(static_cast<Op::Kind>(99));
       },
       absl::StatusCode::kInvalidArgument},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    v1::ExecuteRequest req;
    add_op(req, Op::ASSIGN_ADD, "b", &delta);  // a good op first
    c.add_bad(req);
    v1::ExecuteResponse resp;
    absl::Status s = testing::execute_proto(store_, req, &resp);
    EXPECT_EQ(s.code(), c.code) << s;
    EXPECT_NE(s.message().find("op 1"), absl::string_view::npos) << s;
    EXPECT_EQ((*store_.find("b"))->read(), Tensor::from_vector<float>({0.5f, -0.5f}, {2}));
    EXPECT_EQ((*store_.find("w"))->read(), Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2}));
  }
}

TEST_F(ExecuteTest, CreateIfAbsentKeepsValueAndCreateReplaces) {
  v1::ExecuteRequest req;
  const Tensor fresh = Tensor::from_vector<float>({7, 7}, {2});
  add_op(req, Op::CREATE_IF_ABSENT, "b", &fresh);
  v1::ExecuteResponse resp;
  ASSERT_TRUE(testing::execute_proto(store_, req, &resp).ok());
  EXPECT_EQ((*store_.find("b"))->read(), Tensor::from_vector<float>({0.5f, -0.5f}, {2}));

  v1::ExecuteRequest replace;
  add_op(replace, Op::CREATE, "b", &fresh);
  ASSERT_TRUE(testing::execute_proto(store_, replace, &resp).ok());
  EXPECT_EQ((*store_.find("b"))->read(), fresh);

  v1::ExecuteRequest mismatch;
  const Tensor other = Tensor::from_vector<float>({1, 2, 3}, {3});
  add_op(mismatch, Op::CREATE_IF_ABSENT, "b", &other);
  EXPECT_EQ(testing::execute_proto(store_, mismatch, &resp).code(),
            absl::StatusCode::kAlreadyExists);
}

}  // namespace
}  // namespace psflow::internal

namespace psflow::internal {
namespace {

// Exactly-once: a request whose update key was applied before skips its
// updates but still answers its reads; a rejected request does not use up
// its key.
// NonFinitePolicy::kReject (the default): an update holding NaN or an
// infinity fails the whole batch naming the op, the variable and the
// element; nothing is applied. Values set outright are stored as given.
TEST_F(ExecuteTest, NonFiniteUpdatesAreRejectedByDefaultAndChangeNothing) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  struct Case {
    Op::Kind kind;
    std::string variable;
    Tensor value;
    Tensor ids;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {Op::ASSIGN_ADD, "b", Tensor::from_vector<float>({1, nan}, {2}), Tensor(),
       "op 1 (ASSIGN_ADD 'b'): the delta holds nan at element 1 of 2"},
      {Op::ASSIGN_SUB, "b", Tensor::from_vector<float>({-inf, 1}, {2}), Tensor(),
       "the delta holds -inf at element 0 of 2"},
      {Op::APPLY_DENSE, "b", Tensor::from_vector<float>({inf, 0}, {2}), Tensor(),
       "op 1 (APPLY_DENSE 'b'): the gradient holds inf at element 0"},
      {Op::APPLY_SPARSE, "w", Tensor::from_vector<float>({1, 2, 3, nan}, {2, 2}),
       Tensor::from_vector<int64_t>({0, 2}, {2}), "the gradient holds nan at element 3 of 4"},
      {Op::SCATTER_ADD, "w", Tensor::from_vector<float>({nan, 0}, {1, 2}),
       Tensor::from_vector<int64_t>({1}, {1}), "the updates hold"},
      {Op::SCATTER_MAX, "w", Tensor::from_vector<float>({0, inf}, {1, 2}),
       Tensor::from_vector<int64_t>({1}, {1}), "the updates hold"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(Op::Kind_Name(c.kind));
    ExecuteBatch batch;
    batch.optimizers.push_back(OptimizerConfig());
    VariableOpArgs good;  // applied only if the whole batch is
    good.kind = Op::ASSIGN_ADD;
    good.variable = "b";
    good.value = Tensor::from_vector<float>({10, 10}, {2});
    batch.ops.push_back(good);
    VariableOpArgs bad;
    bad.kind = c.kind;
    bad.variable = c.variable;
    bad.value = c.value;
    bad.ids = c.ids;
    bad.learning_rate = 0.1;
    batch.ops.push_back(bad);
    std::vector<Tensor> results;
    const absl::Status status = execute_variable_ops(store_, batch, &results);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), ::testing::HasSubstr(c.needle));
    EXPECT_THAT(status.message(), ::testing::HasSubstr("--non-finite-updates=allow"));
    EXPECT_EQ(store_.find("b").value()->read(), Tensor::from_vector<float>({0.5f, -0.5f}, {2}));
    EXPECT_EQ(store_.find("w").value()->read(),
              Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2}));
  }

  // Set outright: stored as given.
  ExecuteBatch assign;
  VariableOpArgs op;
  op.kind = Op::ASSIGN;
  op.variable = "b";
  op.value = Tensor::from_vector<float>({nan, 1}, {2});
  assign.ops.push_back(op);
  std::vector<Tensor> results;
  ASSERT_TRUE(execute_variable_ops(store_, assign, &results).ok());
  EXPECT_TRUE(std::isnan(store_.find("b").value()->read().flat<float>()[0]));
}

// Conflicts that only the batch itself reveals are refused before any op
// runs: a CREATE_IF_ABSENT of a stored variable with another shape, two
// creations or restores of one variable, two optimizers on one variable.
TEST_F(ExecuteTest, ConflictsWithinABatchAreRefusedBeforeAnythingRuns) {
  OptimizerConfig sgd;
  OptimizerConfig momentum;
  momentum.kind = OptimizerConfig::Kind::kMomentum;
  auto make = [](Op::Kind kind, const std::string& variable, Tensor value, int optimizer = 0) {
    VariableOpArgs op;
    op.kind = kind;
    op.variable = variable;
    op.value = std::move(value);
    op.optimizer = optimizer;
    op.learning_rate = 0.1;
    return op;
  };
  const Tensor two = Tensor::from_vector<float>({1, 1}, {2});
  struct Case {
    std::string label;
    VariableOpArgs second;
    VariableOpArgs third;
    absl::StatusCode code;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {"create_if_absent with another shape", make(Op::CREATE_IF_ABSENT, "b", Tensor::scalar(1.0f)),
       VariableOpArgs(), absl::StatusCode::kAlreadyExists,
       "op 1 (CREATE_IF_ABSENT 'b'): variable 'b' already exists on this ps as float32 [2]"},
      {"two restores", make(Op::RESTORE, "r", two), make(Op::RESTORE, "r", Tensor::scalar(1.0f)),
       absl::StatusCode::kInvalidArgument, "op 2 (RESTORE 'r'): the batch creates or restores"},
      {"two optimizers", make(Op::APPLY_DENSE, "b", two, 0), make(Op::APPLY_DENSE, "b", two, 1),
       absl::StatusCode::kFailedPrecondition, "two optimizers (sgd and momentum)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    ExecuteBatch batch;
    batch.optimizers = {sgd, momentum};
    batch.ops.push_back(make(Op::ASSIGN_ADD, "b", Tensor::from_vector<float>({100, 100}, {2})));
    batch.ops.push_back(c.second);
    if (c.third.variable.size() > 0) batch.ops.push_back(c.third);
    std::vector<Tensor> results;
    const absl::Status status = execute_variable_ops(store_, batch, &results);
    EXPECT_EQ(status.code(), c.code) << status;
    EXPECT_THAT(status.message(), ::testing::HasSubstr(c.needle));
    EXPECT_EQ(store_.find("b").value()->read(), Tensor::from_vector<float>({0.5f, -0.5f}, {2}));
    EXPECT_EQ(store_.find("b").value()->optimizer_info().steps, 0);
    EXPECT_FALSE(store_.find("r").ok());
  }
}

TEST(ExecuteNonFiniteTest, AllowAppliesNonFiniteUpdatesAsTensorFlowDoes) {
  VariableStore store(NonFinitePolicy::kAllow);
  ASSERT_TRUE(store.create("b", Tensor::from_vector<float>({1, 2}, {2})).ok());
  ExecuteBatch batch;
  VariableOpArgs op;
  op.kind = Op::ASSIGN_ADD;
  op.variable = "b";
  op.value = Tensor::from_vector<float>({std::numeric_limits<float>::infinity(), 1}, {2});
  batch.ops.push_back(op);
  std::vector<Tensor> results;
  ASSERT_TRUE(execute_variable_ops(store, batch, &results).ok());
  const Tensor value = store.find("b").value()->read();
  EXPECT_TRUE(std::isinf(value.flat<float>()[0]));
  EXPECT_EQ(value.flat<float>()[1], 3);
}

// The block scan finds the first bad element wherever it is, in both float
// types, and says -1 when there is none.
TEST(ExecuteNonFiniteTest, FirstNonFiniteFindsTheFirstBadElement) {
  std::vector<float> f(5000, 1.5f);
  EXPECT_EQ(internal::first_non_finite(f.data(), static_cast<int64_t>(f.size())), -1);
  f[4097] = std::numeric_limits<float>::quiet_NaN();
  f[4999] = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(internal::first_non_finite(f.data(), static_cast<int64_t>(f.size())), 4097);
  f[3] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(internal::first_non_finite(f.data(), static_cast<int64_t>(f.size())), 3);
  // The largest finite value and subnormals are finite.
  std::vector<double> d = {std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::denorm_min(), -0.0};
  EXPECT_EQ(internal::first_non_finite(d.data(), 3), -1);
  d.push_back(std::numeric_limits<double>::signaling_NaN());
  EXPECT_EQ(internal::first_non_finite(d.data(), 4), 3);
  EXPECT_EQ(internal::first_non_finite(d.data(), 0), -1);
}

TEST(ExecuteUpdateKeyTest, DuplicateKeysSkipUpdatesButAnswerReads) {
  VariableStore store;
  ASSERT_TRUE(store.create("c", Tensor::scalar<int64_t>(0)).ok());
  const Tensor one = Tensor::scalar<int64_t>(1);
  const auto request = [&](uint64_t sequence, const std::string& variable) {
    v1::ExecuteRequest req;
    v1::VariableOp* add = req.add_ops();
    add->set_kind(v1::VariableOp::ASSIGN_ADD);
    add->set_variable(variable);
    tensor_to_proto(one, add->mutable_value());
    v1::VariableOp* read = req.add_ops();
    read->set_kind(v1::VariableOp::READ);
    read->set_variable("c");
    req.mutable_update_key()->set_session(7);
    req.mutable_update_key()->set_closure_id(3);
    req.mutable_update_key()->set_sequence(sequence);
    return req;
  };
  const auto run = [&](v1::ExecuteRequest req) -> absl::StatusOr<int64_t> {
    v1::ExecuteResponse resp;
    absl::Status s = testing::execute_proto(store, req, &resp);
    if (!s.ok()) return s;
    absl::StatusOr<Tensor> t = tensor_from_proto(resp.mutable_results(0));
    if (!t.ok()) return t.status();
    return t->scalar_value<int64_t>();
  };
  // A bad request (unknown variable) is rejected and keeps its key unused.
  EXPECT_TRUE(absl::IsNotFound(run(request(0, "missing")).status()));
  EXPECT_EQ(*run(request(0, "c")), 1);
  EXPECT_EQ(*run(request(0, "c")), 1);  // The retry: update skipped, read answered.
  EXPECT_EQ(*run(request(1, "c")), 2);  // The closure's next update.
  EXPECT_EQ(store.duplicate_updates(), 1);
  // Without a key, as outside any closure, every request applies.
  v1::ExecuteRequest keyless = request(0, "c");
  keyless.clear_update_key();
  EXPECT_EQ(*run(keyless), 3);
  EXPECT_EQ(*run(keyless), 4);
}

}  // namespace
}  // namespace psflow::internal

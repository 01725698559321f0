// bfloat16 pulls and pushes through the ps's real request path: the gRPC
// wire codec on both sides around execute_variable_ops. The ps keeps
// float32 master values, refuses bad bfloat16 pushes with nothing changed,
// and pulls land in the client's own buffers.
#include <bit>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/request/grpc_execute_codec.h"
#include "ps/server/execute.h"
#include "ps/server/variable_store.h"
#include "tensor/bfloat16.h"
#include "tensor/buffer_pool.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;
using Op = v1::VariableOp;

// 1 + 2^-10 and friends: not bfloat16 values, so rounding shows.
constexpr float kOffGrid = 1.0f + 0x1p-10f;

VariableOpArgs op_of(Op::Kind kind, const std::string& name, WireDType wire) {
  VariableOpArgs op;
  op.kind = kind;
  op.variable = name;
  op.wire_dtype = wire;
  return op;
}

// Client encode -> ps decode, execute, encode -> client decode.
absl::StatusOr<std::vector<Tensor>> round_trip(
    VariableStore& store, const ExecuteBatch& batch,
    const std::vector<std::shared_ptr<TensorBuffer>>& destinations = {}) {
  absl::StatusOr<ExecuteBatch> decoded = decode_execute_request(encode_execute_request(batch));
  if (!decoded.ok()) return decoded.status();
  std::vector<Tensor> results;
  std::vector<WireDType> wire;
  absl::Status s = execute_variable_ops(store, *decoded, &results, &wire);
  if (!s.ok()) return s;
  return decode_execute_response(encode_execute_response(results, wire), {}, destinations);
}

class WireDTypeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(
        store_.create("w", Tensor::from_vector<float>({kOffGrid, 2, -kOffGrid, 4}, {2, 2})).ok());
    sgd_.kind = OptimizerConfig::Kind::kSgd;
  }
  Tensor stored(const std::string& name) { return (*store_.find(name))->read_shared(); }

  VariableStore store_;
  OptimizerConfig sgd_;
};

TEST_F(WireDTypeTest, PullsAreRoundedAndTheMasterValueStaysFloat32) {
  ExecuteBatch batch;
  batch.ops.push_back(op_of(Op::READ, "w", WireDType::kBFloat16));
  batch.ops.push_back(op_of(Op::READ, "w", WireDType::kFloat32));
  absl::StatusOr<std::vector<Tensor>> r = round_trip(store_, batch);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0], Tensor::from_vector<float>({1, 2, -1, 4}, {2, 2}));
  EXPECT_EQ((*r)[1], stored("w"));
  EXPECT_EQ(stored("w").flat<float>()[0], kOffGrid);
}

TEST_F(WireDTypeTest, PushedGradientsAreWidenedAndAppliedToFloat32) {
  ExecuteBatch batch;
  batch.optimizers.push_back(sgd_);
  VariableOpArgs apply = op_of(Op::APPLY_DENSE, "w", WireDType::kBFloat16);
  apply.value = Tensor::from_vector<float>({kOffGrid, 0, 0, 0.5f}, {2, 2});
  apply.learning_rate = 1.0;
  batch.ops.push_back(apply);
  // The request carries 2 bytes per gradient element.
  EXPECT_EQ(encode_execute_request(batch).Length() + 8, [&] {
    ExecuteBatch f32 = batch;
    f32.ops[0].wire_dtype = WireDType::kFloat32;
    return encode_execute_request(f32).Length();
  }());
  ASSERT_TRUE(round_trip(store_, batch).ok());
  // The gradient arrived as 1.0 (rounded); the master value kept its low bits.
  EXPECT_EQ(stored("w"), Tensor::from_vector<float>({kOffGrid - 1, 2, -kOffGrid, 3.5f}, {2, 2}));
}

TEST_F(WireDTypeTest, BadBFloat16PushesAreRefusedWithNothingChanged) {
  ASSERT_TRUE(store_.create("steps", Tensor::from_vector<int64_t>({7})).ok());
  const Tensor before = stored("w").clone();
  const Tensor steps_before = stored("steps").clone();
  {
    // Wrong shape, after a valid op in the same batch: nothing runs.
    ExecuteBatch batch;
    batch.optimizers.push_back(sgd_);
    VariableOpArgs good = op_of(Op::APPLY_DENSE, "w", WireDType::kBFloat16);
    good.value = Tensor::from_vector<float>({1, 1, 1, 1}, {2, 2});
    good.learning_rate = 0.5;
    VariableOpArgs bad = good;
    bad.value = Tensor::from_vector<float>({1, 1, 1}, {3});
    batch.ops = {good, bad};
    absl::Status s = round_trip(store_, batch).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("op 1"));
    EXPECT_THAT(std::string(s.message()), HasSubstr("[3]"));
  }
  {
    // A bfloat16 value decodes as float32, which an int64 variable refuses.
    ExecuteBatch batch;
    VariableOpArgs add = op_of(Op::ASSIGN_ADD, "steps", WireDType::kBFloat16);
    add.value = Tensor::from_vector<float>({1});
    batch.ops = {add};
    absl::Status s = round_trip(store_, batch).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("float32"));
  }
  EXPECT_EQ(stored("w"), before);
  EXPECT_EQ(stored("steps"), steps_before);
  EXPECT_EQ((*store_.find("w"))->snapshot().slots.steps, 0);
}

TEST_F(WireDTypeTest, UnknownResultDTypesAreRefusedByName) {
  // VariableOp{kind: READ, variable: "w", result_dtype: DT_INT32}.
  v1::ExecuteRequest request;
  Op* op = request.add_ops();
  op->set_kind(Op::READ);
  op->set_variable("w");
  op->set_result_dtype(v1::DT_INT32);
  const std::string bytes = request.SerializeAsString();
  grpc::Slice slice(bytes.data(), bytes.size());
  absl::Status s = decode_execute_request(grpc::ByteBuffer(&slice, 1)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("result_dtype 3"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("DT_BFLOAT16"));
  EXPECT_EQ(batch_from_proto(request).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(WireDTypeTest, PullsLandInTheGivenBuffers) {
  BufferPool pool;
  for (const WireDType wire : {WireDType::kFloat32, WireDType::kBFloat16}) {
    ExecuteBatch batch;
    batch.ops.push_back(op_of(Op::READ, "w", wire));
    std::shared_ptr<TensorBuffer> first = pool.take(16);
    const uint8_t* data = first->data();
    absl::StatusOr<std::vector<Tensor>> r = round_trip(store_, batch, {first});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)[0].buffer(), first);
    EXPECT_EQ((*r)[0].flat<float>()[1], 2.0f);
    first.reset();
    r->clear();
    // The next pull lands in the same memory.
    std::shared_ptr<TensorBuffer> second = pool.take(16);
    EXPECT_EQ(second->data(), data);
    // A buffer of the wrong size is not used.
    std::shared_ptr<TensorBuffer> wrong = pool.take(8);
    r = round_trip(store_, batch, {wrong});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_NE((*r)[0].buffer(), wrong);
    EXPECT_EQ((*r)[0].shape(), (Shape{2, 2}));
  }
}

}  // namespace
}  // namespace psflow::internal

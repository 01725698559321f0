#include "ps/request/grpc_execute_codec.h"

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/server/execute.h"
#include "psflow/v1/variable.pb.h"
#include "tensor/codec.h"
#include "tensor/wire.h"

namespace psflow::internal {
namespace {

using Op = v1::VariableOp;
using ::testing::HasSubstr;

std::string flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

// `bytes` as a ByteBuffer cut into slices of pseudo-random sizes (1 byte
// and up), the way a transport may deliver them.
grpc::ByteBuffer chopped(const std::string& bytes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<grpc::Slice> slices;
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t n = std::min(bytes.size() - pos, size_t{1} + rng() % 97);
    slices.emplace_back(bytes.data() + pos, n);
    pos += n;
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

grpc::ByteBuffer whole(const std::string& bytes) {
  grpc::Slice slice(bytes.data(), bytes.size());
  return grpc::ByteBuffer(&slice, 1);
}

VariableOpArgs op(Op::Kind kind, std::string name, Tensor value = Tensor(), Tensor ids = Tensor()) {
  VariableOpArgs a;
  a.kind = kind;
  a.variable = std::move(name);
  a.value = std::move(value);
  a.ids = std::move(ids);
  return a;
}

Tensor big_floats(int64_t n) {
  Tensor t(DType::kFloat32, {n / 4, 4});
  absl::Span<float> v = t.mutable_flat<float>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f - 3;
  return t;
}

// Every field, odd values included: negative indices, -0.0, strings with
// NULs, bools, an unknown kind, a payload large enough to be sent by
// reference.
ExecuteBatch sample_batch() {
  ExecuteBatch b;
  OptimizerConfig adam;
  adam.kind = OptimizerConfig::Kind::kAdam;
  b.optimizers.push_back(adam);
  b.optimizers.push_back(OptimizerConfig());
  // Every hyper-parameter away from its default, so that each one travels.
  OptimizerConfig nesterov;
  nesterov.kind = OptimizerConfig::Kind::kMomentum;
  nesterov.momentum = 0.75;
  nesterov.nesterov = true;
  b.optimizers.push_back(nesterov);
  OptimizerConfig ftrl;
  ftrl.kind = OptimizerConfig::Kind::kFtrl;
  ftrl.initial_accumulator_value = 0.25;
  ftrl.learning_rate_power = -0.75;
  ftrl.l1_regularization_strength = 0.01;
  ftrl.l2_regularization_strength = 0.02;
  ftrl.beta = 0.5;
  b.optimizers.push_back(ftrl);
  OptimizerConfig adagrad;
  adagrad.kind = OptimizerConfig::Kind::kAdagrad;
  adagrad.epsilon = 1e-3;
  adam.beta_1 = 0.8;
  adam.beta_2 = 0.99;
  b.optimizers.push_back(adagrad);
  b.optimizers.push_back(adam);
  b.ops.push_back(op(Op::READ, "w"));
  b.ops.push_back(op(Op::CREATE, "big", big_floats(40000)));
  b.ops.push_back(
      op(Op::GATHER, "emb", Tensor(), Tensor::from_vector<int64_t>({3, -1, 1LL << 40})));
  b.ops.push_back(op(Op::SCATTER_ADD, "emb", Tensor::from_vector<double>({1, 2, 3, 4}, {2, 2}),
                     Tensor::from_vector<int32_t>({0, 5})));
  VariableOpArgs apply = op(Op::APPLY_SPARSE, "ключ", Tensor::from_vector<float>({1, 2}, {1, 2}),
                            Tensor::from_vector<int64_t>({7}));
  apply.optimizer = 1;
  apply.learning_rate = 0.125;
  b.ops.push_back(apply);
  VariableOpArgs odd =
      op(static_cast<Op::Kind>(99), "", Tensor::scalar_string(std::string("a\0b", 3)));
  odd.optimizer = -3;
  odd.learning_rate = -0.0;
  b.ops.push_back(odd);
  b.ops.push_back(op(Op::ASSIGN, "flags", Tensor::from_vector<uint8_t>({0, 1, 1})));
  Tensor bools(DType::kBool, {2});
  bools.mutable_flat<bool>()[1] = true;
  b.ops.push_back(op(Op::ASSIGN, "b", bools));
  b.ops.push_back(op(Op::DELETE, "gone"));
  b.ops.push_back(op(Op::SNAPSHOT, "emb"));
  VariableOpArgs restore = op(Op::RESTORE, "emb", big_floats(40000));
  restore.optimizer_name = "adam";
  restore.optimizer_steps = 12;
  restore.slot_names = {"m", "v"};
  restore.slots = {big_floats(40000), Tensor::from_vector<float>({1, 2}, {2})};
  b.ops.push_back(restore);
  VariableOpArgs negative = op(Op::RESTORE, "x", Tensor::scalar(1.0));
  negative.optimizer_steps = -5;
  b.ops.push_back(negative);
  // The dynamic embedding ops: a table definition, steps (none is < 0).
  v1::DynamicTableConfig config;
  config.set_dim(16);
  config.set_seed(0xfedcba9876543210ULL);
  config.set_initializer(2);
  config.set_init_scale(0.05);
  config.mutable_optimizer()->set_kind("adagrad");
  config.set_capacity_per_shard(1000);
  config.set_ttl_steps(50);
  config.set_admit_after(3);
  config.set_admit_probability(0.5);
  VariableOpArgs create = op(Op::DE_CREATE, "user_ids");
  create.table = config.SerializeAsString();
  b.ops.push_back(create);
  VariableOpArgs lookup =
      op(Op::DE_LOOKUP, "user_ids", Tensor(), Tensor::from_vector<int64_t>({-7, 1LL << 62}));
  lookup.step = 17;
  b.ops.push_back(lookup);
  VariableOpArgs de_apply = op(Op::DE_APPLY, "user_ids", Tensor::from_vector<float>({1, 2}, {1, 2}),
                               Tensor::from_vector<int64_t>({5}));
  de_apply.step = -1;
  de_apply.optimizer = 4;
  b.ops.push_back(de_apply);
  return b;
}

void expect_same_batch(const ExecuteBatch& a, const ExecuteBatch& b) {
  ASSERT_EQ(a.ops.size(), b.ops.size());
  EXPECT_EQ(a.optimizers, b.optimizers);
  for (size_t i = 0; i < a.ops.size(); ++i) {
    SCOPED_TRACE(testing::Message() << "op " << i);
    EXPECT_EQ(a.ops[i].kind, b.ops[i].kind);
    EXPECT_EQ(a.ops[i].variable, b.ops[i].variable);
    EXPECT_EQ(a.ops[i].value.valid(), b.ops[i].value.valid());
    if (a.ops[i].value.valid()) {
      EXPECT_EQ(a.ops[i].value, b.ops[i].value);
    }
    EXPECT_EQ(a.ops[i].ids.valid(), b.ops[i].ids.valid());
    if (a.ops[i].ids.valid()) {
      EXPECT_EQ(a.ops[i].ids, b.ops[i].ids);
    }
    EXPECT_EQ(a.ops[i].optimizer, b.ops[i].optimizer);
    EXPECT_EQ(std::bit_cast<uint64_t>(a.ops[i].learning_rate),
              std::bit_cast<uint64_t>(b.ops[i].learning_rate));
    EXPECT_EQ(a.ops[i].optimizer_name, b.ops[i].optimizer_name);
    EXPECT_EQ(a.ops[i].optimizer_steps, b.ops[i].optimizer_steps);
    EXPECT_EQ(a.ops[i].slot_names, b.ops[i].slot_names);
    EXPECT_EQ(a.ops[i].slots, b.ops[i].slots);
    EXPECT_EQ(a.ops[i].step, b.ops[i].step);
    EXPECT_EQ(a.ops[i].table, b.ops[i].table);
  }
}

std::string generated_request(const ExecuteBatch& batch) {
  v1::ExecuteRequest proto;
  batch_to_proto(batch, &proto);
  return proto.SerializeAsString();
}

TEST(GrpcExecuteCodecTest, RequestMatchesGeneratedSerializerByteForByte) {
  const ExecuteBatch batch = sample_batch();
  EXPECT_EQ(flatten(encode_execute_request(batch)), generated_request(batch));
  EXPECT_EQ(flatten(encode_execute_request(ExecuteBatch())), "");
}

TEST(GrpcExecuteCodecTest, RequestRoundTripsAcrossSliceBoundaries) {
  const ExecuteBatch batch = sample_batch();
  absl::StatusOr<ExecuteBatch> back = decode_execute_request(encode_execute_request(batch));
  ASSERT_TRUE(back.ok()) << back.status();
  expect_same_batch(*back, batch);
  const std::string bytes = generated_request(batch);
  for (uint32_t seed = 0; seed < 5; ++seed) {
    absl::StatusOr<ExecuteBatch> chop = decode_execute_request(chopped(bytes, seed));
    ASSERT_TRUE(chop.ok()) << chop.status();
    expect_same_batch(*chop, batch);
  }
}

TEST(GrpcExecuteCodecTest, UpdateKeyMatchesTheGeneratedClassesAndRoundTrips) {
  ExecuteBatch batch = sample_batch();
  batch.update_key = UpdateKey{0xfedcba9876543210ull, 42, 7};
  EXPECT_EQ(flatten(encode_execute_request(batch)), generated_request(batch));
  absl::StatusOr<ExecuteBatch> back = decode_execute_request(encode_execute_request(batch));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->update_key.has_value());
  EXPECT_EQ(*back->update_key, *batch.update_key);
  // A key of the wrong wire type is refused, naming the field.
  std::string bad = generated_request(sample_batch());
  bad += std::string("\x18\x01", 2);  // field 3 as a varint
  absl::StatusOr<ExecuteBatch> refused = decode_execute_request(
      grpc::ByteBuffer(std::vector<grpc::Slice>{grpc::Slice(bad)}.data(), 1));
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("update_key"), std::string_view::npos)
      << refused.status();
}

TEST(GrpcExecuteCodecTest, LargePayloadsAreSentFromTheTensorsBuffer) {
  const Tensor big = big_floats(1 << 16);
  ExecuteBatch batch;
  batch.ops.push_back(op(Op::ASSIGN, "v", big));
  const grpc::ByteBuffer buffer = encode_execute_request(batch);
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(buffer.Dump(&slices).ok());
  bool shared = false;
  for (const grpc::Slice& s : slices) shared |= s.begin() == big.raw_data();
  EXPECT_TRUE(shared) << "no slice points into the tensor's buffer";

  const std::vector<Tensor> results = {big, Tensor::scalar<int64_t>(-5)};
  const grpc::ByteBuffer response = encode_execute_response(results);
  EXPECT_EQ(response.Length(), execute_response_size(results));
  absl::StatusOr<std::vector<Tensor>> back = decode_execute_response(response);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0], big);
  // Received payloads land in a buffer of their own, aligned for SIMD.
  EXPECT_NE((*back)[0].raw_data(), big.raw_data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*back)[0].raw_data()) % 64, 0u);
  EXPECT_EQ((*back)[1], Tensor::scalar<int64_t>(-5));
}

TEST(GrpcExecuteCodecTest, ResponseMatchesTheGeneratedClasses) {
  const std::vector<Tensor> results = {big_floats(40000),
                                       Tensor::from_strings({"x", "", std::string("\0", 1)}),
                                       Tensor::scalar<double>(-0.0), Tensor(DType::kInt32, {0, 3})};
  v1::ExecuteResponse proto;
  for (const Tensor& t : results) tensor_to_proto(t, proto.add_results());
  const std::string bytes = proto.SerializeAsString();
  EXPECT_EQ(flatten(encode_execute_response(results)), bytes);
  absl::StatusOr<std::vector<Tensor>> back = decode_execute_response(chopped(bytes, 7));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), results.size());
  for (size_t i = 0; i < results.size(); ++i) EXPECT_EQ((*back)[i], results[i]) << i;
  EXPECT_TRUE(decode_execute_response(grpc::ByteBuffer(nullptr, 0))->empty());
}

TEST(GrpcExecuteCodecTest, RepeatedSingularFieldsMergeLikeProtobuf) {
  // The op's value appears twice: protobuf merges the two TensorProtos
  // (shape entries concatenate, the last content wins).
  v1::ExecuteRequest first;
  Op* a = first.add_ops();
  a->set_kind(Op::ASSIGN);
  a->set_variable("v");
  tensor_to_proto(Tensor::from_vector<float>({1, 2}), a->mutable_value());
  v1::ExecuteRequest second;
  Op* b = second.add_ops();
  b->set_variable("v");
  *b->mutable_value()->mutable_shape() = a->value().shape();
  b->mutable_value()->set_content(std::string(16, '\x01'));
  // Concatenated messages merge: the single op of each becomes two ops, so
  // merge inside one op instead by appending a second `value` field.
  std::string op_bytes = a->SerializeAsString();
  internal::put_tag(&op_bytes, 3, internal::WireType::kLengthDelimited);
  internal::put_varint(&op_bytes, b->value().ByteSizeLong());
  op_bytes.append(b->value().SerializeAsString());
  std::string request;
  internal::put_tag(&request, 1, internal::WireType::kLengthDelimited);
  internal::put_varint(&request, op_bytes.size());
  request.append(op_bytes);
  v1::ExecuteRequest generated;
  ASSERT_TRUE(generated.ParseFromString(request));
  absl::StatusOr<ExecuteBatch> theirs = batch_from_proto(generated);
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  absl::StatusOr<ExecuteBatch> ours = decode_execute_request(chopped(request, 3));
  ASSERT_TRUE(ours.ok()) << ours.status();
  expect_same_batch(*ours, *theirs);
  EXPECT_EQ(ours->ops[0].value.shape(), (Shape{2, 2}));
}

TEST(GrpcExecuteCodecTest, UnknownFieldsAndGroupsAreSkipped) {
  const ExecuteBatch batch = sample_batch();
  // Field 15 varint, 16 length-delimited, 17 fixed32, and a group 19.
  const std::string unknown = std::string("\x78\x96\x01", 3) +
                              std::string(
                                  "\x82\x01\x03"
                                  "abc",
                                  6) +
                              std::string("\x8d\x01\x01\x02\x03\x04", 6) +
                              std::string("\x9b\x01\x08\x01\x9c\x01", 6);
  const std::string bytes = unknown + generated_request(batch) + unknown;
  absl::StatusOr<ExecuteBatch> back = decode_execute_request(chopped(bytes, 11));
  ASSERT_TRUE(back.ok()) << back.status();
  expect_same_batch(*back, batch);
}

void expect_rejected(const std::string& bytes, const std::string& needle,
                     const CodecLimits& limits = {}) {
  absl::StatusOr<ExecuteBatch> back = decode_execute_request(whole(bytes), limits);
  ASSERT_FALSE(back.ok()) << absl::BytesToHexString(bytes);
  EXPECT_EQ(back.status().code(), absl::StatusCode::kInvalidArgument) << back.status();
  EXPECT_THAT(std::string(back.status().message()), HasSubstr(needle));
}

TEST(GrpcExecuteCodecTest, MalformedRequestsAreRejectedClearly) {
  expect_rejected("\xff\xff\xff", "malformed ExecuteRequest");
  expect_rejected(std::string("\x0a\x05\x08\x02", 4), "runs past the end");
  expect_rejected(std::string("\x08\x01", 2), "field 1 (ExecuteRequest.ops) is varint");
  expect_rejected(std::string("\x02\x00", 2), "field number 0");
  expect_rejected(std::string("\x0a\x02\x12\x01", 4), "runs past the end");
  // Op 0 with a variable name that is not UTF-8.
  expect_rejected(std::string("\x0a\x03\x12\x01\xff", 5), "op 0: variable name is not valid UTF-8");
  // Op 0's value with content that does not fit its shape.
  v1::ExecuteRequest bad;
  Op* o = bad.add_ops();
  o->set_kind(Op::ASSIGN);
  o->mutable_value()->set_dtype(v1::DT_FLOAT);
  o->mutable_value()->add_shape(2);
  o->mutable_value()->set_content("xyz");
  expect_rejected(bad.SerializeAsString(), "op 0: value: tensor content is 3 bytes");
  o->mutable_value()->set_dtype(static_cast<v1::DataType>(42));
  expect_rejected(bad.SerializeAsString(), "unknown tensor dtype 42");
  // A bad optimizer.
  v1::ExecuteRequest opt;
  opt.add_optimizers()->set_kind("rmsprop");
  expect_rejected(opt.SerializeAsString(), "optimizer 0: unknown optimizer 'rmsprop'");
  // The size limit comes first.
  CodecLimits small;
  small.max_message_bytes = 10;
  expect_rejected(generated_request(sample_batch()), "more than max_message_bytes 10", small);
  // A group left open.
  expect_rejected(std::string("\x9b\x01\x08\x01", 4), "group");
  // A tag spread over 6 bytes (field 1, length-delimited): CodedInputStream
  // would accept it truncated, the generated parsers do not.
  expect_rejected(std::string("\x8a\x80\x80\x80\x80\x00\x00", 7), "invalid or truncated tag");
  // An optimizer kind that is not UTF-8 (rejected without logging).
  expect_rejected(std::string("\x12\x03\x0a\x01\xff", 5),
                  "optimizer 0: optimizer kind is not valid UTF-8");
  expect_rejected(std::string("\x12\x02\x10\x01", 4),
                  "field 2 (an OptimizerProto hyper-parameter) is varint");
  // RESTORE fields: a slot that does not decode, wrong wire types, names
  // that are not UTF-8, and more slots than any optimizer keeps.
  v1::ExecuteRequest restore;
  Op* r = restore.add_ops();
  r->set_kind(Op::RESTORE);
  r->set_variable("w");
  tensor_to_proto(Tensor::scalar(1.0f), r->mutable_value());
  r->add_slot_names("m");
  r->add_slots()->set_dtype(v1::DT_FLOAT);
  r->mutable_slots(0)->add_shape(3);
  expect_rejected(restore.SerializeAsString(), "op 0: slot 0: tensor content is 0 bytes");
  expect_rejected(std::string("\x0a\x03\x42\x01\x00", 5), "field 8 (VariableOp.optimizer_steps)");
  expect_rejected(std::string("\x0a\x03\x3a\x01\xff", 5),
                  "op 0: optimizer name is not valid UTF-8");
  expect_rejected(std::string("\x0a\x03\x4a\x01\xff", 5), "op 0: a slot name is not valid UTF-8");
  v1::ExecuteRequest many;
  Op* m = many.add_ops();
  for (int i = 0; i < 17; ++i) m->add_slot_names("m");
  expect_rejected(many.SerializeAsString(), "more than 16 slot names");
  v1::ExecuteRequest many_slots;
  Op* ms = many_slots.add_ops();
  for (int i = 0; i < 17; ++i) tensor_to_proto(Tensor::scalar(1.0f), ms->add_slots());
  expect_rejected(many_slots.SerializeAsString(), "more than 16 slot tensors");
}

// Every corruption of a valid request either decodes or fails with
// INVALID_ARGUMENT, and whatever we accept the generated parser accepts
// too, with the same content.
void check_agrees_with_generated(const std::string& bytes, uint32_t seed) {
  absl::StatusOr<ExecuteBatch> ours = decode_execute_request(chopped(bytes, seed));
  if (!ours.ok()) {
    ASSERT_EQ(ours.status().code(), absl::StatusCode::kInvalidArgument) << ours.status();
    return;
  }
  v1::ExecuteRequest proto;
  ASSERT_TRUE(proto.ParseFromString(bytes))
      << "we accepted what the generated parser rejects: " << absl::BytesToHexString(bytes);
  ASSERT_EQ(static_cast<size_t>(proto.ops_size()), ours->ops.size());
  for (size_t i = 0; i < ours->ops.size(); ++i) {
    Op& theirs = *proto.mutable_ops(static_cast<int>(i));
    const VariableOpArgs& mine = ours->ops[i];
    ASSERT_EQ(theirs.kind(), mine.kind);
    ASSERT_EQ(theirs.variable(), mine.variable);
    ASSERT_EQ(theirs.has_value(), mine.value.valid());
    if (mine.value.valid()) {
      absl::StatusOr<Tensor> t = tensor_from_proto(theirs.mutable_value());
      ASSERT_TRUE(t.ok()) << t.status();
      ASSERT_EQ(t->debug_string(), mine.value.debug_string());
    }
    ASSERT_EQ(theirs.optimizer_name(), mine.optimizer_name);
    ASSERT_EQ(theirs.optimizer_steps(), mine.optimizer_steps);
    ASSERT_EQ(theirs.step(), mine.step);
    v1::DynamicTableConfig table;
    ASSERT_TRUE(table.ParseFromString(mine.table));
    ASSERT_EQ(theirs.table().SerializeAsString(), table.SerializeAsString());
    ASSERT_EQ(static_cast<size_t>(theirs.slot_names_size()), mine.slot_names.size());
    ASSERT_EQ(static_cast<size_t>(theirs.slots_size()), mine.slots.size());
    for (size_t j = 0; j < mine.slots.size(); ++j) {
      absl::StatusOr<Tensor> t = tensor_from_proto(theirs.mutable_slots(static_cast<int>(j)));
      ASSERT_TRUE(t.ok()) << t.status();
      ASSERT_EQ(t->debug_string(), mine.slots[j].debug_string());
    }
  }
}

// Every op costs the ps bookkeeping however small it is on the wire: a
// request of more than kMaxOpsPerRequest ops is refused while decoding.
TEST(GrpcExecuteCodecTest, RequestsWithTooManyOpsAreRefused) {
  ExecuteBatch batch;
  for (size_t i = 0; i <= kMaxOpsPerRequest; ++i) batch.ops.push_back(op(Op::READ, "w"));
  const absl::Status status = decode_execute_request(encode_execute_request(batch)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("more than 65536 ops"), std::string::npos) << status;
  batch.ops.pop_back();
  EXPECT_TRUE(decode_execute_request(encode_execute_request(batch)).ok());
}

TEST(GrpcExecuteCodecFuzzTest, MutationsFailCleanlyOrAgreeWithTheGeneratedParser) {
  ExecuteBatch batch = sample_batch();
  batch.ops[1].value = big_floats(64);  // keep the sweep short
  for (VariableOpArgs& o : batch.ops) {
    if (o.kind != Op::RESTORE) continue;
    o.value = Tensor::from_vector<float>({1, 2}, {2});
    for (Tensor& slot : o.slots) slot = Tensor::from_vector<float>({3, 4}, {2});
  }
  const std::string valid = generated_request(batch);
  std::mt19937 rng(20240611);  // Fixed seed: deterministic.
  for (size_t n = 0; n < valid.size(); ++n) {
    check_agrees_with_generated(valid.substr(0, n), static_cast<uint32_t>(n));
    if (HasFatalFailure()) return;
  }
  for (int round = 0; round < 5000; ++round) {
    std::string bytes = valid;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      const size_t pos = rng() % bytes.size();
      switch (rng() % 3) {
        case 0: bytes[pos] = static_cast<char>(rng()); break;
        case 1: bytes.erase(pos, 1 + rng() % 4); break;
        default: bytes.insert(pos, 1, static_cast<char>(rng())); break;
      }
    }
    SCOPED_TRACE(testing::Message() << "round " << round);
    check_agrees_with_generated(bytes, static_cast<uint32_t>(round));
    if (HasFatalFailure()) return;
  }
}

TEST(GrpcExecuteCodecTest, MalformedResponsesAreRejected) {
  absl::StatusOr<std::vector<Tensor>> back = decode_execute_response(whole("\x0a\x02\x08"));
  EXPECT_EQ(back.status().code(), absl::StatusCode::kInvalidArgument) << back.status();
  back = decode_execute_response(whole(std::string("\x0a\x00", 2)));
  EXPECT_THAT(std::string(back.status().message()), HasSubstr("result 0: tensor has no dtype"));
}

}  // namespace
}  // namespace psflow::internal

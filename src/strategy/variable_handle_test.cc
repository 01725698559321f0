// VariableHandle: the Structure form round-trips through the wire codec,
// and malformed handles are rejected with the field named.
#include "psflow/variable_handle.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/strategy.h"
#include "strategy/client_lookup.h"
#include "strategy/strategy_test_util.h"
#include "tensor/codec.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::LocalPsCluster;
using ::psflow::internal::testing::value_or_fail;
using ::testing::HasSubstr;

VariableHandle sharded_handle() {
  return VariableHandle{"w",
                        DType::kFloat32,
                        {5, 2},
                        {{"ps", 0, "w/part_0", {3, 2}, 0}, {"ps", 1, "w/part_1", {2, 2}, 3}}};
}

TEST(VariableHandleTest, RoundTripsThroughTheStructureCodec) {
  const VariableHandle h = sharded_handle();
  ASSERT_TRUE(h.validate().ok());
  const Structure s = h.to_structure();
  EXPECT_TRUE(VariableHandle::is_handle(s));
  auto decoded = decode_structure(encode_structure(s));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(value_or_fail(VariableHandle::from_structure(*decoded)), h);
  const VariableHandle scalar{"s", DType::kInt64, {}, {{"chief", 0, "s", {}, 0}}};
  EXPECT_EQ(value_or_fail(VariableHandle::from_structure(scalar.to_structure())), scalar);
}

TEST(VariableHandleTest, RejectsMalformedHandles) {
  auto expect_bad = [](const VariableHandle& h, const std::string& what) {
    absl::Status s = h.validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << what;
    EXPECT_THAT(s.message(), HasSubstr(what));
    // from_structure validates too.
    EXPECT_EQ(VariableHandle::from_structure(h.to_structure()).status().code(),
              absl::StatusCode::kInvalidArgument);
  };
  VariableHandle h = sharded_handle();
  h.parts[1].offset = 4;
  expect_bad(h, "part 1 of variable 'w' starts at row 4");
  h = sharded_handle();
  h.shape = {6, 2};
  expect_bad(h, "hold 5 rows but its shape [6, 2] has 6");
  h = sharded_handle();
  h.parts[0].shape = {3, 3};
  expect_bad(h, "does not match the variable's [5, 2] beyond axis 0");
  h = sharded_handle();
  h.parts.clear();
  expect_bad(h, "has no parts");
  h = sharded_handle();
  h.parts[0].name.clear();
  expect_bad(h, "needs a job, a task >= 0 and a stored name");

  EXPECT_FALSE(VariableHandle::is_handle(Structure(1)));
  EXPECT_EQ(VariableHandle::from_structure(Structure(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  Structure::Fields fields = sharded_handle().to_structure().fields();
  fields["dtype"] = Structure("float16");
  EXPECT_EQ(VariableHandle::from_structure(Structure::dict(fields)).status().code(),
            absl::StatusCode::kInvalidArgument);
  fields = sharded_handle().to_structure().fields();
  fields.erase("parts");
  EXPECT_THAT(VariableHandle::from_structure(Structure::dict(fields)).status().message(),
              HasSubstr("needs 'parts' as a list"));
  fields = sharded_handle().to_structure().fields();
  fields["psflow_variable"] = Structure(2);
  EXPECT_THAT(VariableHandle::from_structure(Structure::dict(fields)).status().message(),
              HasSubstr("format version 2 is not supported"));
}

// Aggregation, synchronization and trainable travel in the handle (absent
// fields read as NONE, AUTO, true; unknown names are refused).
TEST(VariableHandleTest, CarriesTheVariablePolicy) {
  VariableHandle h = sharded_handle();
  h.aggregation = VariableAggregation::kOnlyFirstReplica;
  h.synchronization = VariableSynchronization::kOnRead;
  h.trainable = false;
  auto decoded = decode_structure(encode_structure(h.to_structure()));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(value_or_fail(VariableHandle::from_structure(*decoded)), h);

  Structure::Fields fields = h.to_structure().fields();
  fields.erase("aggregation");
  fields.erase("synchronization");
  fields.erase("trainable");
  EXPECT_EQ(value_or_fail(VariableHandle::from_structure(Structure::dict(fields))),
            sharded_handle());
  fields = h.to_structure().fields();
  fields["aggregation"] = Structure("MAX");
  EXPECT_THAT(VariableHandle::from_structure(Structure::dict(fields)).status().message(),
              HasSubstr("unknown variable aggregation 'MAX'"));
  fields = h.to_structure().fields();
  fields["synchronization"] = Structure(3);
  EXPECT_EQ(VariableHandle::from_structure(Structure::dict(fields)).status().code(),
            absl::StatusCode::kInvalidArgument);
  h.aggregation = static_cast<VariableAggregation>(7);
  EXPECT_THAT(h.validate().message(), HasSubstr("invalid aggregation (7)"));

  LocalPsCluster cluster(1);
  ShardedVariable v = value_or_fail(cluster.strategy->create_variable(
      Tensor::scalar(1.0f), {.name = "m",
                             .aggregation = VariableAggregation::kMean,
                             .synchronization = VariableSynchronization::kOnRead}));
  EXPECT_EQ(v.handle().aggregation, VariableAggregation::kMean);
  EXPECT_EQ(v.handle().synchronization, VariableSynchronization::kOnRead);
  EXPECT_FALSE(v.handle().trainable);
  EXPECT_EQ(v.variables()[0].handle().aggregation, VariableAggregation::kMean);
}

TEST(VariableHandleTest, HandlesOfCreatedVariables) {
  LocalPsCluster cluster(2, value_or_fail(fixed_shards_partitioner(2)));
  ShardedVariable w = value_or_fail(
      cluster.strategy->create_variable(Tensor(DType::kFloat32, {5, 2}), {.name = "w"}));
  EXPECT_EQ(w.handle(), sharded_handle());
  const VariableHandle part = w.variables()[1].handle();
  EXPECT_EQ(part.name, "w/part_1");
  ASSERT_EQ(part.parts.size(), 1u);
  EXPECT_EQ(part.parts[0].offset, 0);
  EXPECT_EQ(part.parts[0].task, 1);
  // Rebuilt through a worker-style lookup over the same clients.
  std::vector<std::shared_ptr<VariableClient>> clients(cluster.clients.begin(),
                                                       cluster.clients.end());
  ShardedVariable rebuilt =
      value_or_fail(ShardedVariable::from_handle(w.handle(), ps_client_lookup(clients)));
  ASSERT_TRUE(rebuilt
                  .scatter_update({Tensor::from_vector<float>({9, 9}, {1, 2}),
                                   Tensor::from_vector<int64_t>({4})})
                  .ok());
  EXPECT_EQ(value_or_fail(w.sparse_read(Tensor::from_vector<int64_t>({4}))),
            Tensor::from_vector<float>({9, 9}, {1, 2}));
  auto no_task = ShardedVariable::from_handle(w.handle(), ps_client_lookup({clients[0]}));
  ASSERT_EQ(no_task.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(no_task.status().message(), HasSubstr("variable 'w/part_1': no client for"));
}

}  // namespace
}  // namespace psflow::internal

#include <cstdint>
#include <string>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/variable_client.h"
#include "ps/server/execute.h"
#include "psflow/tensor.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;
using Op = v1::VariableOp;

VariableOpArgs create_op(const std::string& name, int64_t elements) {
  VariableOpArgs op;
  op.kind = Op::CREATE;
  op.variable = name;
  // Untouched pages of a fresh mapping: no memory is used for the test.
  op.value = Tensor(DType::kFloat32, {elements});
  return op;
}

// A request over the 1 GiB message limit fails on the client, before
// anything is sent (nothing listens at the target). One variable too large
// for any request is named, with the fix (shard it); a batch that is too
// large only as a whole is told to split.
TEST(GrpcVariableClientTest, OversizedRequestsNameTheVariableOrTheBatch) {
  std::unique_ptr<VariableClient> client =
      make_grpc_variable_client("127.0.0.1:1", "/job:ps/replica:0/task:0");
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  ExecuteBatch one;
  one.ops.push_back(create_op("embeddings", (int64_t{1} << 28) + 1));  // 1 GiB + 4 bytes
  absl::Status s = client->execute_batch(std::move(one), deadline).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("variable 'embeddings' carries 1073741828 bytes"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("variable_partitioner"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("/job:ps/replica:0/task:0"));

  ExecuteBatch two;
  two.ops.push_back(create_op("a", int64_t{1} << 27));  // 512 MiB each
  two.ops.push_back(create_op("b", int64_t{1} << 27));
  s = client->execute_batch(std::move(two), deadline).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("split the batch"));
}

}  // namespace
}  // namespace psflow::internal

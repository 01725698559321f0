// ExecuteRequest / ExecuteResponse with tensor contents in a shared-memory
// region (TensorProto.shared): round trips equal the in-message encoding,
// small tensors stay in the message, and every reference a hostile client
// could send (outside the region, the header, more bytes than the region,
// with no session, both inline and shared) is INVALID_ARGUMENT.
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/request/grpc_execute_codec.h"
#include "psflow/v1/variable.pb.h"
#include "rpc/shared_memory_region.h"
#include "tensor/codec.h"

namespace psflow::internal {
namespace {

using Op = v1::VariableOp;
using ::testing::HasSubstr;

constexpr size_t kRegionBytes = size_t{4} << 20;

std::string flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string out;
  for (const grpc::Slice& s : slices) {
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}

grpc::ByteBuffer whole(const std::string& bytes) {
  grpc::Slice slice(bytes.data(), bytes.size());
  return grpc::ByteBuffer(&slice, 1);
}

Tensor ramp(int64_t n, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = scale * static_cast<float>(i % 1013) - 3.5f;
  return Tensor::from_vector<float>(v, {n});
}

class SharedCodecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto region = SharedMemoryRegion::create(kRegionBytes, "t");
    ASSERT_TRUE(region.ok()) << region.status();
    region_ = *std::move(region);
  }

  SharedRequest shared(uint64_t begin, uint64_t end) {
    return SharedRequest{"session-token", SharedArena(region_->data(), begin, end)};
  }

  ExecuteBatch push_batch() {
    ExecuteBatch batch;
    VariableOpArgs apply;
    apply.kind = Op::APPLY_DENSE;
    apply.variable = "kernel";
    apply.value = ramp(200000, 0.5f);  // 800 KB: shared
    batch.ops.push_back(apply);
    VariableOpArgs small;
    small.kind = Op::APPLY_DENSE;
    small.variable = "bias";
    small.value = ramp(10, 1.0f);  // 40 bytes: in the message
    batch.ops.push_back(small);
    VariableOpArgs gather;
    gather.kind = Op::GATHER;
    gather.variable = "emb";
    gather.ids = Tensor::from_vector<int64_t>(std::vector<int64_t>(2048, 7));  // 16 KB: shared
    batch.ops.push_back(gather);
    return batch;
  }

  std::unique_ptr<SharedMemoryRegion> region_;
};

TEST_F(SharedCodecTest, RequestRoundTripsThroughTheRegion) {
  const ExecuteBatch batch = push_batch();
  SharedRequest request = shared(SharedMemoryRegion::kHeaderBytes, kRegionBytes);
  const grpc::ByteBuffer bytes = encode_execute_request(batch, &request);
  // The large contents are not in the message.
  EXPECT_LT(bytes.Length(), 1000u);
  absl::StatusOr<std::optional<SharedMemoryCallInfo>> info = read_shared_memory_call(bytes);
  ASSERT_TRUE(info.ok()) << info.status();
  ASSERT_TRUE(info->has_value());
  EXPECT_EQ((*info)->session, "session-token");
  EXPECT_GE((*info)->result_offset, SharedMemoryRegion::kHeaderBytes + 800000 + 16384);
  EXPECT_EQ((*info)->result_offset + (*info)->result_bytes, kRegionBytes);

  absl::StatusOr<ExecuteBatch> decoded = decode_execute_request(bytes, {}, region_.get());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->ops.size(), 3u);
  EXPECT_EQ(decoded->ops[0].value, batch.ops[0].value);
  EXPECT_EQ(decoded->ops[1].value, batch.ops[1].value);
  EXPECT_EQ(decoded->ops[2].ids, batch.ops[2].ids);
  // Decoded tensors are copies, not views of the region: a client writing
  // there afterwards changes nothing the ps holds.
  std::memset(region_->data() + SharedMemoryRegion::kHeaderBytes, 0xff, 800000);
  EXPECT_EQ(decoded->ops[0].value, batch.ops[0].value);

  // Without the region the same request is refused, naming why.
  absl::Status s = decode_execute_request(bytes).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("no shared-memory session"));
}

TEST_F(SharedCodecTest, BFloat16PushesAreNarrowedIntoTheRegion) {
  ExecuteBatch batch = push_batch();
  batch.ops[0].wire_dtype = WireDType::kBFloat16;
  SharedRequest request = shared(SharedMemoryRegion::kHeaderBytes, kRegionBytes);
  const grpc::ByteBuffer bytes = encode_execute_request(batch, &request);
  absl::StatusOr<ExecuteBatch> decoded = decode_execute_request(bytes, {}, region_.get());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  // The same values as the in-message bfloat16 encoding gives.
  absl::StatusOr<ExecuteBatch> inline_decoded =
      decode_execute_request(encode_execute_request(batch));
  ASSERT_TRUE(inline_decoded.ok()) << inline_decoded.status();
  EXPECT_EQ(decoded->ops[0].value, inline_decoded->ops[0].value);
  EXPECT_NE(decoded->ops[0].value, batch.ops[0].value);  // Rounded.
}

TEST_F(SharedCodecTest, AFullArenaLeavesTheRestInTheMessage) {
  const ExecuteBatch batch = push_batch();
  // Room for the ids only (the kernel does not fit and goes inline).
  SharedRequest request =
      shared(SharedMemoryRegion::kHeaderBytes, SharedMemoryRegion::kHeaderBytes + 20000);
  const grpc::ByteBuffer bytes = encode_execute_request(batch, &request);
  EXPECT_GT(bytes.Length(), 800000u);
  EXPECT_LT(bytes.Length(), 810000u);
  absl::StatusOr<ExecuteBatch> decoded = decode_execute_request(bytes, {}, region_.get());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->ops[0].value, batch.ops[0].value);
  EXPECT_EQ(decoded->ops[2].ids, batch.ops[2].ids);
}

TEST_F(SharedCodecTest, ResponsesRoundTripIntoDestinations) {
  const std::vector<Tensor> results = {ramp(300000, 0.25f), ramp(4, 2.0f),
                                       Tensor::from_vector<int64_t>(std::vector<int64_t>(4096, 3))};
  SharedArena arena(region_->data(), 65536, kRegionBytes);
  const grpc::ByteBuffer bytes = encode_execute_response(results, {}, &arena);
  EXPECT_LT(bytes.Length(), 1000u);
  const auto destination = TensorBuffer::allocate(300000 * sizeof(float));
  absl::StatusOr<std::vector<Tensor>> decoded =
      decode_execute_response(bytes, {}, {destination}, region_.get());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->size(), 3u);
  for (size_t i = 0; i < results.size(); ++i) EXPECT_EQ((*decoded)[i], results[i]) << i;
  // The first result landed in the caller's buffer.
  EXPECT_EQ((*decoded)[0].raw_data(), destination->data());

  // As bfloat16 the same values as in the message.
  SharedArena arena2(region_->data(), 65536, kRegionBytes);
  const std::vector<WireDType> wire = {WireDType::kBFloat16};
  const grpc::ByteBuffer narrow = encode_execute_response(results, wire, &arena2);
  absl::StatusOr<std::vector<Tensor>> a = decode_execute_response(narrow, {}, {}, region_.get());
  absl::StatusOr<std::vector<Tensor>> b =
      decode_execute_response(encode_execute_response(results, wire));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)[0], (*b)[0]);
}

// A hand-made request: one APPLY_DENSE whose value's content is named in
// the region at [offset, +length), plus what `extra` adds to the tensor.
std::string request_naming(uint64_t offset, uint64_t length, const std::string& extra = "") {
  v1::ExecuteRequest request;
  v1::VariableOp* op = request.add_ops();
  op->set_kind(Op::APPLY_DENSE);
  op->set_variable("kernel");
  v1::TensorProto* value = op->mutable_value();
  value->set_dtype(v1::DT_FLOAT);
  value->add_shape(static_cast<int64_t>(length / 4));
  value->mutable_shared()->set_offset(offset);
  value->mutable_shared()->set_length(length);
  request.mutable_shared_memory()->set_session("s");
  std::string bytes = request.SerializeAsString();
  return bytes + extra;
}

TEST_F(SharedCodecTest, HostileReferencesAreRefused) {
  const uint64_t header = SharedMemoryRegion::kHeaderBytes;
  // Fine: inside the payload part.
  ASSERT_TRUE(decode_execute_request(whole(request_naming(header, 4096)), {}, region_.get()).ok());
  struct Case {
    uint64_t offset;
    uint64_t length;
    const char* expect;
  };
  const Case cases[] = {
      {0, 4096, "outside the session's region"},               // the header
      {header, kRegionBytes, "outside the session's region"},  // past the end
      {kRegionBytes - 4, 8, "outside the session's region"},
      {~uint64_t{0} - 3, 8, "outside the session's region"},  // wraps around
      {header, ~uint64_t{0} - 3, ""},  // any refusal: the shape is impossible too
  };
  for (const Case& c : cases) {
    absl::Status s =
        decode_execute_request(whole(request_naming(c.offset, c.length)), {}, region_.get())
            .status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.offset << " " << c.length << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.expect)) << s;
  }
  // The shape and the named length disagree.
  {
    v1::ExecuteRequest request;
    ASSERT_TRUE(request.ParseFromString(request_naming(header, 4096)));
    request.mutable_ops(0)->mutable_value()->set_shape(0, 2000);
    absl::Status s =
        decode_execute_request(whole(request.SerializeAsString()), {}, region_.get()).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  }
  // Inline content and a shared reference in one tensor.
  {
    v1::ExecuteRequest request;
    ASSERT_TRUE(request.ParseFromString(request_naming(header, 4096)));
    request.mutable_ops(0)->mutable_value()->set_content(std::string(4096, 'x'));
    absl::Status s =
        decode_execute_request(whole(request.SerializeAsString()), {}, region_.get()).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("both shared and inline"));
  }
  // A string tensor naming shared content.
  {
    v1::ExecuteRequest request;
    ASSERT_TRUE(request.ParseFromString(request_naming(header, 4096)));
    request.mutable_ops(0)->mutable_value()->set_dtype(v1::DT_STRING);
    absl::Status s =
        decode_execute_request(whole(request.SerializeAsString()), {}, region_.get()).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  }
  // One slice named by many ops: decoding would copy the region many times
  // over. Refused once the references add up to more than the region.
  {
    v1::ExecuteRequest request;
    const uint64_t half = (kRegionBytes - header) / 2 / 4 * 4;
    for (int i = 0; i < 3; ++i) {
      v1::ExecuteRequest one;
      ASSERT_TRUE(one.ParseFromString(request_naming(header, half)));
      *request.add_ops() = one.ops(0);
    }
    absl::Status s =
        decode_execute_request(whole(request.SerializeAsString()), {}, region_.get()).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("more shared bytes in all"));
  }
  // A malformed or oversized SharedMemoryCall.
  {
    std::string bytes = request_naming(header, 4096);
    bytes += std::string("\x22\x05\x0a\x09xx", 6);  // field 4, truncated inside
    absl::Status s = read_shared_memory_call(whole(bytes)).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    v1::ExecuteRequest request;
    request.mutable_shared_memory()->set_session(std::string(1000, 's'));
    s = read_shared_memory_call(whole(request.SerializeAsString())).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  }
}

// What the generated classes write for shared contents, the codec reads,
// and the reverse: other languages' clients can use the same protocol.
TEST_F(SharedCodecTest, AgreesWithTheGeneratedClasses) {
  const ExecuteBatch batch = push_batch();
  SharedRequest request = shared(SharedMemoryRegion::kHeaderBytes, kRegionBytes);
  const std::string bytes = flatten(encode_execute_request(batch, &request));
  v1::ExecuteRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  ASSERT_EQ(parsed.ops_size(), 3);
  EXPECT_TRUE(parsed.ops(0).value().has_shared());
  EXPECT_EQ(parsed.ops(0).value().shared().length(), 800000u);
  EXPECT_FALSE(parsed.ops(1).value().has_shared());
  EXPECT_EQ(parsed.shared_memory().session(), "session-token");
  // Re-serialized by the generated classes (fields in number order), it
  // decodes to the same batch.
  absl::StatusOr<ExecuteBatch> decoded =
      decode_execute_request(whole(parsed.SerializeAsString()), {}, region_.get());
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->ops[0].value, batch.ops[0].value);
}

}  // namespace
}  // namespace psflow::internal

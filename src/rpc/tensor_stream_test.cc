#include "rpc/tensor_stream.h"

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/slice.h>

#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rpc/byte_buffer_writer.h"
#include "rpc/wire_stream.h"
#include "tensor/codec.h"

namespace psflow::internal {
namespace {

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

// `bytes` cut into slices of `n` bytes.
grpc::ByteBuffer chopped(const std::string& bytes, size_t n) {
  std::vector<grpc::Slice> slices;
  for (size_t pos = 0; pos < bytes.size(); pos += n) {
    slices.emplace_back(bytes.data() + pos, std::min(n, bytes.size() - pos));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

std::vector<Tensor> samples() {
  Tensor bools(DType::kBool, {3});
  bools.mutable_flat<bool>()[2] = true;
  return {
      Tensor::scalar<float>(-0.0f),
      Tensor::from_vector<double>({1, std::numeric_limits<double>::max()}),
      Tensor::from_vector<int32_t>({-1, 0, 7, 8}, {2, 2}),
      Tensor::from_vector<int64_t>({int64_t{1} << 50}, {1, 1, 1}),
      Tensor::from_vector<uint8_t>({255, 0}),
      bools,
      Tensor::from_strings({"a", "", std::string("\0z", 2)}),
      Tensor(DType::kFloat32, {0, 5}),
      Tensor(DType::kFloat32, {1 << 14}),  // 64 KiB: sent by reference
  };
}

// Wraps each body as an occurrence of a TensorProto field (number 1) of an
// outer message and reads them back with one TensorProtoReader.
absl::StatusOr<Tensor> read_back(const std::vector<std::string>& bodies, size_t slice_bytes,
                                 const CodecLimits& limits = {}) {
  std::string message;
  for (const std::string& body : bodies) {
    internal::put_tag(&message, 1, internal::WireType::kLengthDelimited);
    internal::put_varint(&message, body.size());
    message += body;
  }
  grpc::ByteBuffer buffer = chopped(message, slice_bytes);
  grpc::ProtoBufferReader reader(&buffer);
  google::protobuf::io::CodedInputStream in(&reader);
  WireStream stream(&in, message.size(), "Outer");
  DecodeBudget budget(message.size(), limits);
  TensorProtoReader tensor(limits, budget);
  WireStream::Field field;
  while (!stream.at_end()) {
    absl::Status s = stream.next(&field);
    if (!s.ok()) return s;
    s = tensor.merge(stream, field);
    if (!s.ok()) return s;
  }
  return tensor.finish();
}

TEST(TensorStreamTest, WritesWhatEncodeTensorWrites) {
  for (const Tensor& t : samples()) {
    SCOPED_TRACE(t.debug_string(4));
    ByteBufferWriter writer;
    write_tensor_proto(t, writer);
    EXPECT_EQ(writer.size(), encoded_size(t));
    EXPECT_EQ(flatten(writer.finish()), encode_tensor(t));
  }
}

TEST(TensorStreamTest, ReadsBackAcrossAnySliceSize) {
  for (const Tensor& t : samples()) {
    SCOPED_TRACE(t.debug_string(4));
    for (const size_t n : {size_t{1}, size_t{3}, size_t{4096}, size_t{1} << 20}) {
      absl::StatusOr<Tensor> back = read_back({encode_tensor(t)}, n);
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ(*back, t);
    }
  }
}

TEST(TensorStreamTest, RepeatedOccurrencesMergeLikeProtobuf) {
  // Shapes concatenate and the last content wins: [2] + [2] -> [2, 2].
  const std::string first = encode_tensor(Tensor::from_vector<uint8_t>({1, 2}));
  v1::TensorProto second_proto;
  second_proto.add_shape(2);
  second_proto.set_content("wxyz");
  const std::string second = second_proto.SerializeAsString();
  v1::TensorProto generated;
  ASSERT_TRUE(generated.ParseFromString(first + second));
  absl::StatusOr<Tensor> theirs = tensor_from_proto(&generated);
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  absl::StatusOr<Tensor> ours = read_back({first, second}, 3);
  ASSERT_TRUE(ours.ok()) << ours.status();
  EXPECT_EQ(*ours, *theirs);
  EXPECT_EQ(ours->shape(), (Shape{2, 2}));
  // Without the second content the merged shape does not fit the bytes.
  absl::StatusOr<Tensor> short_content = read_back({first, first}, 2);
  EXPECT_EQ(short_content.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(short_content.status().message()), HasSubstr("shape [2, 2]"));
}

TEST(TensorStreamTest, RejectsWhatDecodeTensorRejects) {
  v1::TensorProto p;
  p.set_dtype(v1::DT_BOOL);
  p.add_shape(2);
  p.set_content(std::string("\x01\x02", 2));
  EXPECT_THAT(std::string(read_back({p.SerializeAsString()}, 1).status().message()),
              HasSubstr(std::string(decode_tensor(p.SerializeAsString()).status().message())));
  p.set_dtype(v1::DT_FLOAT);
  p.add_shape(-1);
  EXPECT_EQ(read_back({p.SerializeAsString()}, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
  CodecLimits limits;
  limits.max_rank = 1;
  EXPECT_THAT(std::string(read_back({p.SerializeAsString()}, 2, limits).status().message()),
              HasSubstr("max_rank"));
  // A field of the wrong wire type: dtype as length-delimited.
  EXPECT_THAT(std::string(read_back({std::string("\x0a\x01\x01", 3)}, 1).status().message()),
              HasSubstr("TensorProto.dtype"));
  // Truncated content.
  const std::string truncated("\x08\x05\x1a\x04\x01", 5);
  EXPECT_THAT(std::string(read_back({truncated}, 1).status().message()),
              HasSubstr("runs past the end"));
}

TEST(ByteBufferWriterTest, CopiesSmallPayloadsAndSharesLargeOnes) {
  const Tensor small(DType::kFloat32, {16});
  const Tensor large(DType::kFloat32, {ByteBufferWriter::kMinSharedPayloadBytes / 4});
  ByteBufferWriter writer;
  writer.bytes()->append("head");
  writer.append_payload(small);
  writer.append_payload(large);
  writer.bytes()->append("tail");
  EXPECT_EQ(writer.size(), 8 + small.byte_size() + large.byte_size());
  grpc::ByteBuffer buffer = writer.finish();
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(buffer.Dump(&slices).ok());
  ASSERT_EQ(slices.size(), 3u);  // head+small, large, tail
  EXPECT_NE(slices[0].begin(), small.raw_data());
  EXPECT_EQ(slices[1].begin(), large.raw_data());
  EXPECT_EQ(buffer.Length(), 8 + small.byte_size() + large.byte_size());
  // The slice keeps the buffer alive after the tensor is gone.
  std::weak_ptr<TensorBuffer> watch;
  {
    ByteBufferWriter w;
    Tensor t(DType::kUInt8, {ByteBufferWriter::kMinSharedPayloadBytes});
    watch = t.buffer();
    w.append_payload(t);
    buffer = w.finish();
  }
  EXPECT_FALSE(watch.expired());
  buffer.Clear();
  EXPECT_TRUE(watch.expired());
  EXPECT_EQ(ByteBufferWriter().finish().Length(), 0u);
}

}  // namespace
}  // namespace psflow::internal

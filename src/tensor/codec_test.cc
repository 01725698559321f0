#include "tensor/codec.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/stubs/logging.h"
#include "gtest/gtest.h"
#include "psflow/v1/tensor.pb.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

constexpr DType kAllDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64,
                                DType::kUInt8,   DType::kBool,    DType::kString};

std::string message_of(const absl::Status& status) { return std::string(status.message()); }

Structure ok_decoded(const absl::StatusOr<Structure>& s) {
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *s : Structure();
}

// A [2, 3] tensor of `dtype` with distinct, awkward values (negatives,
// extremes, embedded NULs) so that any byte slip shows.
Tensor sample(DType dtype, Shape shape = {2, 3}) {
  Tensor t(dtype, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    switch (dtype) {
      case DType::kFloat32: t.mutable_flat<float>()[i] = i == 0 ? -0.0f : 1.5f * i - 2; break;
      case DType::kFloat64:
        t.mutable_flat<double>()[i] = i == 1 ? std::numeric_limits<double>::max() : 0.25 * i - 1;
        break;
      case DType::kInt32:
        t.mutable_flat<int32_t>()[i] = i == 2 ? std::numeric_limits<int32_t>::min() : 1000 * i - 7;
        break;
      case DType::kInt64:
        t.mutable_flat<int64_t>()[i] = (int64_t{1} << 50) * (i % 2 ? -1 : 1) + i;
        break;
      case DType::kUInt8: t.mutable_flat<uint8_t>()[i] = static_cast<uint8_t>(250 + i); break;
      case DType::kBool: t.mutable_flat<bool>()[i] = i % 3 == 1; break;
      case DType::kString:
        t.mutable_string_at(i) =
            i == 0 ? std::string() : std::string("s\0x", 3) + std::to_string(i);
        break;
      case DType::kInvalid: break;
    }
  }
  return t;
}

std::string generated_serialize(const Tensor& t) {
  v1::TensorProto proto;
  tensor_to_proto(t, &proto);
  return proto.SerializeAsString();
}

std::string generated_serialize(const Structure& s) {
  v1::StructureProto proto;
  structure_to_proto(s, &proto);
  return proto.SerializeAsString();
}

Structure nested_sample() {
  return Structure::tuple(
      {2, Structure::tuple({3, 4}), Structure::list({5}),
       Structure::dict(
           {{"v", 1},
            {"w", Structure::list({Structure(), true, false, -1, int64_t{1} << 62, 0.5, -0.0, ""})},
            {"", "empty key"},
            {"ключ", Structure::dict({})},
            {"t", sample(DType::kFloat32)},
            {"s", sample(DType::kString, {3})}}),
       Structure::tuple({}), Structure::list({}), "text", 0, 0.0});
}

// Builds a raw TensorProto the way a hostile or foreign writer could.
std::string raw_tensor(int dtype, const std::vector<int64_t>& shape, const std::string& content,
                       const std::vector<std::string>& strings = {}) {
  v1::TensorProto proto;
  proto.set_dtype(static_cast<v1::DataType>(dtype));
  for (const int64_t d : shape) proto.add_shape(d);
  proto.set_content(content);
  for (const std::string& s : strings) proto.add_string_val(s);
  return proto.SerializeAsString();
}

void expect_invalid(const absl::Status& status, const std::string& needle) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(message_of(status), HasSubstr(needle));
}

// ---------------------------------------------------------------------------
// Round trips and interoperability with the generated classes.

TEST(CodecTest, RoundTripEveryDType) {
  for (const DType dtype : kAllDTypes) {
    for (const Shape& shape : {Shape{2, 3}, Shape{}, Shape{0}, Shape{3, 0, 2}, Shape{1, 1, 1, 5}}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " " + shape_string(shape));
      const Tensor t = sample(dtype, shape);
      const std::string bytes = encode_tensor(t);
      EXPECT_EQ(bytes.size(), encoded_size(t));
      absl::StatusOr<Tensor> back = decode_tensor(bytes);
      ASSERT_TRUE(back.ok()) << back.status();
      EXPECT_EQ(*back, t);
      EXPECT_EQ(back->shape(), t.shape());
      if (dtype != DType::kString && t.byte_size() > 0) {
        EXPECT_NE(back->raw_data(), t.raw_data());
        EXPECT_EQ(reinterpret_cast<uintptr_t>(back->raw_data()) % 64, 0u);
      }
    }
  }
}

TEST(CodecTest, EncodingMatchesGeneratedSerializerByteForByte) {
  for (const DType dtype : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor t = sample(dtype);
    EXPECT_EQ(encode_tensor(t), generated_serialize(t));
    EXPECT_EQ(encode_tensor(Tensor(dtype, {})), generated_serialize(Tensor(dtype, {})));
  }
  EXPECT_EQ(encode_tensor(Tensor()), generated_serialize(Tensor()));
  EXPECT_EQ(encode_structure(nested_sample()), generated_serialize(nested_sample()));
}

TEST(CodecTest, GeneratedParserReadsOurEncoding) {
  for (const DType dtype : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor t = sample(dtype);
    v1::TensorProto proto;
    ASSERT_TRUE(proto.ParseFromString(encode_tensor(t)));
    EXPECT_EQ(static_cast<int>(proto.dtype()), static_cast<int>(dtype));
    EXPECT_THAT(proto.shape(), ::testing::ElementsAre(2, 3));
    if (dtype == DType::kString) {
      ASSERT_EQ(proto.string_val_size(), 6);
      EXPECT_EQ(proto.string_val(4), t.string_at(4));
    } else {
      ASSERT_EQ(proto.content().size(), t.byte_size());
      EXPECT_EQ(std::memcmp(proto.content().data(), t.raw_data(), t.byte_size()), 0);
    }
    absl::StatusOr<Tensor> back = tensor_from_proto(&proto);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, t);
  }
}

TEST(CodecTest, WeReadTheGeneratedSerialization) {
  for (const DType dtype : kAllDTypes) {
    SCOPED_TRACE(dtype_name(dtype));
    // Written field by field with the generated setters, not tensor_to_proto.
    v1::TensorProto proto;
    proto.set_dtype(static_cast<v1::DataType>(dtype));
    proto.add_shape(3);
    const Tensor expected = sample(dtype, {3});
    if (dtype == DType::kString) {
      for (int i = 0; i < 3; ++i) proto.add_string_val(expected.string_at(i));
    } else {
      proto.set_content(
          std::string(static_cast<const char*>(expected.raw_data()), expected.byte_size()));
    }
    absl::StatusOr<Tensor> t = decode_tensor(proto.SerializeAsString());
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(*t, expected);
  }
}

TEST(CodecTest, EncodeAppendsAndHandlesSlices) {
  const Tensor t = Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {3, 2});
  std::string out = "prefix";
  encode_tensor(t.slice(1, 3), &out);
  ASSERT_EQ(out.substr(0, 6), "prefix");
  absl::StatusOr<Tensor> back = decode_tensor(std::string_view(out).substr(6));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, Tensor::from_vector<int32_t>({3, 4, 5, 6}, {2, 2}));
  const Tensor strings = sample(DType::kString, {3, 2});
  EXPECT_EQ(*decode_tensor(encode_tensor(strings.slice(1, 2))), strings.slice(1, 2).clone());
  std::string s_out = "x";
  encode_structure(Structure::tuple({1}), &s_out);
  EXPECT_EQ(*decode_structure(std::string_view(s_out).substr(1)), Structure::tuple({1}));
}

TEST(CodecTest, LargeTensorRoundTrip) {
  // Past the size where buffers are mapped directly rather than malloc'd.
  Tensor t(DType::kUInt8, {(int64_t{33} << 20) + 5});
  absl::Span<uint8_t> values = t.mutable_flat<uint8_t>();
  for (size_t i = 0; i < values.size(); i += 4093) values[i] = static_cast<uint8_t>(i);
  absl::StatusOr<Tensor> back = decode_tensor(encode_tensor(t));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, t);
}

TEST(CodecTest, ProtoConversionStealsThePayload) {
  const Tensor t = sample(DType::kFloat64, {64, 8});
  v1::TensorProto proto;
  tensor_to_proto(t, &proto);
  const char* content = proto.content().data();
  absl::StatusOr<Tensor> back = tensor_from_proto(&proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->raw_data(), content);  // No copy.
  EXPECT_TRUE(proto.content().empty());
  EXPECT_EQ(*back, t);

  const Tensor strings = Tensor::from_strings({std::string(100, 'a'), std::string(200, 'b')});
  tensor_to_proto(strings, &proto);
  const char* first = proto.string_val(0).data();
  back = tensor_from_proto(&proto);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->string_at(0).data(), first);
  EXPECT_EQ(*back, strings);

  // Short content lives inside the string object; still decodes correctly.
  tensor_to_proto(Tensor::scalar(int64_t{-5}), &proto);
  EXPECT_EQ(tensor_from_proto(&proto)->scalar_value<int64_t>(), -5);
}

TEST(CodecTest, StructureRoundTrips) {
  const Structure s = nested_sample();
  const std::string bytes = encode_structure(s);
  EXPECT_EQ(bytes.size(), encoded_size(s));
  absl::StatusOr<Structure> back = decode_structure(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, s);
  EXPECT_EQ(back->debug_string(), s.debug_string());

  v1::StructureProto proto;
  ASSERT_TRUE(proto.ParseFromString(bytes));
  absl::StatusOr<Structure> via_proto = structure_from_proto(&proto);
  ASSERT_TRUE(via_proto.ok()) << via_proto.status();
  EXPECT_EQ(*via_proto, s);

  for (const Structure& leaf :
       {Structure(), Structure(0), Structure(-1), Structure(1e300), Structure(true), Structure(""),
        Structure(std::string("\0\xff", 2)), Structure(Tensor::scalar_string("x")),
        Structure::dict({{"", Structure()}})}) {
    SCOPED_TRACE(leaf.debug_string());
    EXPECT_EQ(*decode_structure(encode_structure(leaf)), leaf);
    EXPECT_EQ(encode_structure(leaf), generated_serialize(leaf));
  }
}

TEST(CodecTest, DepthLimit) {
  Structure deep = 1;
  for (int i = 0; i < 64; ++i) {
    deep = i % 2 ? Structure::list({deep}) : Structure::dict({{"k", deep}});
  }
  ASSERT_EQ(deep.depth(), 64);
  EXPECT_TRUE(decode_structure(encode_structure(deep)).ok());
  const Structure deeper = Structure::tuple({deep});
  absl::StatusOr<Structure> r = decode_structure(encode_structure(deeper));
  ASSERT_FALSE(r.ok());
  expect_invalid(r.status(), "nested deeper than max_depth 64");
  EXPECT_THAT(message_of(r.status()), HasSubstr("at [0][0]['k'][0]['k']"));

  CodecLimits shallow;
  shallow.max_depth = 2;
  EXPECT_TRUE(
      decode_structure(encode_structure(Structure::tuple({Structure::list({1})})), shallow).ok());
  expect_invalid(
      decode_structure(
          encode_structure(Structure::tuple({Structure::list({Structure::tuple({})})})), shallow)
          .status(),
      "max_depth 2");
  v1::StructureProto proto;
  structure_to_proto(deeper, &proto);
  expect_invalid(structure_from_proto(&proto).status(), "max_depth 64");
}

// Tag byte + varint length + payload.
std::string length_delimited(char tag, const std::string& payload) {
  std::string out(1, tag);
  uint64_t n = payload.size();
  while (n >= 0x80) {
    out.push_back(static_cast<char>((n & 0x7f) | 0x80));
    n >>= 7;
  }
  out.push_back(static_cast<char>(n));
  return out + payload;
}

TEST(CodecTest, HostileDeepNestingIsRejectedWithoutRecursingAway) {
  // 3000 nested one-item lists written by hand, far past max_depth: the
  // decoder must stop at the limit rather than recurse through them all.
  std::string bytes("\x18\x01", 2);  // int_value: 1
  for (int i = 0; i < 3000; ++i) {
    // StructureProto{list (8): StructureList{items (1): bytes}}
    bytes = length_delimited('\x42', length_delimited('\x0a', bytes));
  }
  expect_invalid(decode_structure(bytes).status(), "max_depth 64");
  // The same construction decodes within a limit: max_depth stays in the
  // hundreds (codec.h), since decoding recurses once per level (3000
  // levels overflow the stack under ASan).
  std::string valid("\x18\x01", 2);
  for (int i = 0; i < 300; ++i) valid = length_delimited('\x42', length_delimited('\x0a', valid));
  CodecLimits generous;
  generous.max_depth = 500;
  EXPECT_TRUE(decode_structure(valid, generous).ok());
  expect_invalid(decode_structure(bytes, generous).status(), "max_depth 500");
}

// ---------------------------------------------------------------------------
// Rejections.

TEST(CodecRejectTest, GarbageAndTruncation) {
  expect_invalid(decode_tensor("\xff\xff\xff").status(), "malformed TensorProto");
  expect_invalid(decode_structure("\xff\xff\xff").status(), "malformed StructureProto");
  const std::string bytes = encode_tensor(sample(DType::kFloat32));
  expect_invalid(decode_tensor(bytes.substr(0, bytes.size() - 1)).status(),
                 "claims 24 bytes but only 23 remain");
  expect_invalid(decode_tensor("").status(), "no dtype");
  expect_invalid(decode_structure("").status(), "no kind set");
  // A length prefix near 2^32 on a short message.
  expect_invalid(decode_tensor(std::string("\x08\x01\x1a\xff\xff\xff\xff\x0f", 8)).status(),
                 "remain");
}

TEST(CodecRejectTest, BadDTypes) {
  expect_invalid(decode_tensor(raw_tensor(42, {1}, "x")).status(), "unknown tensor dtype 42");
  expect_invalid(decode_tensor(raw_tensor(-3, {1}, "x")).status(), "unknown tensor dtype -3");
  expect_invalid(decode_tensor(raw_tensor(0, {}, "")).status(), "no dtype (DT_INVALID)");
  v1::TensorProto proto;
  proto.set_dtype(static_cast<v1::DataType>(9));
  expect_invalid(tensor_from_proto(&proto).status(), "unknown tensor dtype 9");
}

TEST(CodecRejectTest, BadShapes) {
  expect_invalid(decode_tensor(raw_tensor(1, {2, -3}, "")).status(),
                 "shape [2, -3] has negative dimension -3 at axis 1");
  expect_invalid(decode_tensor(raw_tensor(1, std::vector<int64_t>(33, 1), "xxxx")).status(),
                 "rank exceeds max_rank 32");
  CodecLimits limits;
  limits.max_rank = 2;
  expect_invalid(decode_tensor(raw_tensor(5, {1, 1, 1}, "x"), limits).status(), "max_rank 2");
  EXPECT_TRUE(decode_tensor(raw_tensor(5, {1, 1}, "x"), limits).ok());
  expect_invalid(decode_tensor(raw_tensor(5, {int64_t{1} << 40, int64_t{1} << 40}, "")).status(),
                 "more elements than int64 can count");
  expect_invalid(decode_tensor(raw_tensor(2, {int64_t{1} << 61}, "")).status(),
                 "needs more bytes than int64 can count");
  v1::TensorProto proto;
  proto.set_dtype(v1::DT_FLOAT);
  for (int i = 0; i < 40; ++i) proto.add_shape(1);
  expect_invalid(tensor_from_proto(&proto).status(), "max_rank 32");
}

TEST(CodecRejectTest, ContentMustMatchShape) {
  EXPECT_EQ(message_of(decode_tensor(raw_tensor(1, {2, 3}, std::string(12, 'x'))).status()),
            "tensor content is 12 bytes but shape [2, 3] of float32 needs 24 bytes");
  expect_invalid(decode_tensor(raw_tensor(4, {}, std::string(9, 'x'))).status(),
                 "content is 9 bytes but shape [] of int64 needs 8 bytes");
  // A huge claimed shape with no content fails before anything is allocated.
  expect_invalid(decode_tensor(raw_tensor(1, {int64_t{1} << 40}, "")).status(),
                 "needs 4398046511104 bytes");
  expect_invalid(decode_tensor(raw_tensor(3, {1}, "xxxx", {"a"})).status(),
                 "int32 tensor carries 1 string_val entries; only string tensors may");
  v1::TensorProto proto;
  proto.set_dtype(v1::DT_DOUBLE);
  proto.add_shape(2);
  proto.set_content("1234567");
  expect_invalid(tensor_from_proto(&proto).status(), "content is 7 bytes");
}

TEST(CodecRejectTest, StringCountMustMatchShape) {
  expect_invalid(decode_tensor(raw_tensor(7, {2, 2}, "", {"a", "b", "c"})).status(),
                 "string tensor has 3 string_val entries but shape [2, 2] needs 4");
  expect_invalid(decode_tensor(raw_tensor(7, {int64_t{1} << 40}, "", {})).status(),
                 "needs 1099511627776");
  expect_invalid(decode_tensor(raw_tensor(7, {1}, "xy", {"a"})).status(),
                 "string tensor carries 2 content bytes");
  v1::TensorProto proto;
  proto.set_dtype(v1::DT_STRING);
  proto.add_string_val("a");
  proto.add_string_val("b");
  expect_invalid(tensor_from_proto(&proto).status(), "2 string_val entries but shape []");
}

TEST(CodecRejectTest, BoolsMustBeZeroOrOne) {
  expect_invalid(decode_tensor(raw_tensor(6, {3}, std::string("\x00\x01\x02", 3))).status(),
                 "bool tensor element 2 is byte 2");
  v1::TensorProto proto;
  proto.set_dtype(v1::DT_BOOL);
  proto.set_content("\x07");
  expect_invalid(tensor_from_proto(&proto).status(), "element 0 is byte 7");
}

TEST(CodecRejectTest, MessageSizeCheckedFirst) {
  CodecLimits limits;
  limits.max_message_bytes = 10;
  const std::string bytes = encode_tensor(sample(DType::kFloat32));
  EXPECT_EQ(message_of(decode_tensor(bytes, limits).status()),
            "message is 32 bytes, more than max_message_bytes 10");
  expect_invalid(decode_structure(encode_structure(nested_sample()), limits).status(),
                 "more than max_message_bytes 10");
  // Checked before parsing: even garbage reports the size.
  expect_invalid(decode_tensor(std::string(11, '\xff'), limits).status(), "max_message_bytes");
}

TEST(CodecRejectTest, WrongWireTypes) {
  // dtype (field 1) as length-delimited.
  expect_invalid(decode_tensor(std::string("\x0a\x01\x01", 3)).status(),
                 "field 1 (dtype) has wire type length-delimited, expected varint");
  // content (field 3) as varint.
  expect_invalid(decode_tensor(std::string("\x08\x01\x18\x05", 4)).status(),
                 "field 3 (content) has wire type varint");
  // shape (field 2) as fixed64.
  expect_invalid(decode_tensor(std::string("\x08\x01\x11", 3) + std::string(8, '\0')).status(),
                 "field 2 (shape) has wire type fixed64");
  // string_val (field 4) as fixed32.
  expect_invalid(decode_tensor(std::string("\x08\x07\x25\0\0\0\0", 7)).status(),
                 "field 4 (string_val)");
  // StructureProto.float_value (field 4) as varint; int_value as fixed64.
  expect_invalid(decode_structure(std::string("\x20\x01", 2)).status(),
                 "field 4 (float_value) has wire type varint, expected fixed64");
  expect_invalid(decode_structure(std::string("\x19", 1) + std::string(8, '\0')).status(),
                 "field 3 (kind) has wire type fixed64, expected varint");
  expect_invalid(decode_structure(std::string("\x10\x01", 2)).status(), "field 2 (kind)");
  // Items of a list as varint.
  expect_invalid(decode_structure(std::string("\x42\x02\x08\x01", 4)).status(), "field 1 (items)");
  // Invalid wire types 6 and 7, field number 0, stray end-group.
  expect_invalid(decode_tensor(std::string("\x0e", 1)).status(), "invalid wire type 6");
  expect_invalid(decode_tensor(std::string("\x0f", 1)).status(), "invalid wire type 7");
  expect_invalid(decode_tensor(std::string("\x00\x01", 2)).status(), "field number 0");
  expect_invalid(decode_tensor(std::string("\x0c", 1)).status(), "end-group");
}

TEST(CodecRejectTest, StructureSpecificErrorsNameThePath) {
  const Structure s = Structure::tuple(
      {1, Structure::dict({{"v", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})}})});
  v1::StructureProto proto;
  structure_to_proto(s, &proto);
  proto.mutable_tuple()
      ->mutable_items(1)
      ->mutable_dict()
      ->mutable_fields(0)
      ->mutable_value()
      ->mutable_tensor()
      ->mutable_content()
      ->resize(12);
  const std::string bytes = proto.SerializeAsString();
  EXPECT_EQ(message_of(decode_structure(bytes).status()),
            "at [1]['v']: tensor content is 12 bytes but shape [2, 3] of float32 "
            "needs 24 bytes");
  EXPECT_EQ(message_of(structure_from_proto(&proto).status()),
            "at [1]['v']: tensor content is 12 bytes but shape [2, 3] of float32 "
            "needs 24 bytes");

  // Duplicate keys, a field without a value, a non-UTF-8 key.
  v1::StructureProto dup;
  for (int i = 0; i < 2; ++i) {
    v1::StructureField* f = dup.mutable_dict()->add_fields();
    f->set_key("k");
    f->mutable_value()->set_int_value(i);
  }
  expect_invalid(decode_structure(dup.SerializeAsString()).status(), "duplicate dict key 'k'");
  expect_invalid(structure_from_proto(&dup).status(), "duplicate dict key 'k'");
  v1::StructureProto no_value;
  no_value.mutable_dict()->add_fields()->set_key("k");
  expect_invalid(decode_structure(no_value.SerializeAsString()).status(),
                 "at ['k']: StructureProto has no kind set");
  expect_invalid(structure_from_proto(&no_value).status(), "at ['k']: StructureProto has no kind");
  // StructureDict{fields: [StructureField{key: "\xff", value: {none}}]}.
  const std::string bad_key("\x4a\x09\x0a\x07\x0a\x01\xff\x12\x02\x0a\x00", 11);
  expect_invalid(decode_structure(bad_key).status(), "is not valid UTF-8");
  v1::StructureProto generated;
  google::protobuf::LogSilencer quiet;               // It also logs the bad key.
  EXPECT_FALSE(generated.ParseFromString(bad_key));  // The generated parser agrees.
}

TEST(CodecRejectTest, ValidUtf8KeysAccepted) {
  for (const std::string key : {"plain", "ключ", "日本", "\xf0\x9f\x98\x80", ""}) {
    const Structure s = Structure::dict({{key, 1}});
    EXPECT_EQ(*decode_structure(encode_structure(s)), s) << key;
  }
  // Overlong, surrogate, truncated, beyond U+10FFFF.
  for (const std::string key : {"\xc0\x80", "\xed\xa0\x80", "\xe6\x97", "\xf4\x90\x80\x80"}) {
    expect_invalid(decode_structure(encode_structure(Structure::dict({{key, 1}}))).status(),
                   "UTF-8");
  }
}

// ---------------------------------------------------------------------------
// Forward compatibility and protobuf merge semantics.

TEST(CodecCompatTest, UnknownFieldsAreSkipped) {
  // Field 15 varint, 16 length-delimited, 17 fixed32, 18 fixed64, and a
  // group 19 holding a varint and a nested group.
  const std::string unknown = std::string("\x78\x96\x01", 3) +  // 15: 150
                              std::string(
                                  "\x82\x01\x03"
                                  "abc",
                                  6) +                                      // 16: "abc"
                              std::string("\x8d\x01\x01\x02\x03\x04", 6) +  // 17
                              std::string("\x91\x01", 2) +
                              std::string(8, '\x07') +  // 18
                              std::string("\x9b\x01\x08\x01\xa3\x01\xa4\x01\x9c\x01", 10);
  const Tensor t = sample(DType::kInt32);
  const std::string bytes = unknown + encode_tensor(t) + unknown;
  absl::StatusOr<Tensor> back = decode_tensor(bytes);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, t);
  v1::TensorProto proto;
  ASSERT_TRUE(proto.ParseFromString(bytes));  // Sanity: the input is valid.

  // Unknown fields inside nested messages and the NoneValue.
  v1::StructureProto s;
  structure_to_proto(Structure::tuple({Structure(), 1}), &s);
  s.mutable_tuple()
      ->mutable_items(0)
      ->mutable_none()
      ->GetReflection()
      ->MutableUnknownFields(s.mutable_tuple()->mutable_items(0)->mutable_none())
      ->AddVarint(5, 1);
  s.GetReflection()->MutableUnknownFields(&s)->AddLengthDelimited(12, "handle");
  const std::string sbytes = s.SerializeAsString();
  absl::StatusOr<Structure> sback = decode_structure(sbytes);
  ASSERT_TRUE(sback.ok()) << sback.status();
  EXPECT_EQ(*sback, Structure::tuple({Structure(), 1}));

  // A group left open is malformed.
  expect_invalid(decode_tensor(std::string("\x9b\x01\x08\x01", 4)).status(), "group");
  expect_invalid(decode_tensor(std::string("\x9b\x01\xa4\x01", 4)).status(), "group");
}

TEST(CodecCompatTest, ConcatenatedMessagesMergeLikeProtobuf) {
  // Protobuf defines parsing A+B as parsing A then merging B.
  const std::string a = encode_structure(Structure(Tensor::from_vector<float>({1, 2})));
  // A second tensor occurrence carrying more shape and new content merges
  // into the first: shape [2] + [2] -> [2, 2], content replaced.
  const std::string b = encode_structure(
      Structure(Tensor::from_vector<float>({3, 4, 5, 6}, {4}).reshape({2, 2}).value()));
  const std::string merged_wire = a + b;
  v1::StructureProto generated;
  ASSERT_TRUE(generated.ParseFromString(merged_wire));
  absl::StatusOr<Structure> ours = decode_structure(merged_wire);
  absl::StatusOr<Structure> theirs = structure_from_proto(&generated);
  ASSERT_EQ(ours.ok(), theirs.ok());
  if (ours.ok()) {
    EXPECT_EQ(*ours, *theirs);
  }

  // Lists concatenate; another oneof member replaces.
  const std::string l1 = encode_structure(Structure::list({1, 2}));
  const std::string l2 = encode_structure(Structure::list({3}));
  EXPECT_EQ(*decode_structure(l1 + l2), Structure::list({1, 2, 3}));
  EXPECT_EQ(*decode_structure(l1 + encode_structure(7)), Structure(7));
  EXPECT_EQ(*decode_structure(encode_structure(7) + l2), Structure::list({3}));
  EXPECT_EQ(*decode_structure(l1 + encode_structure(7) + l2), Structure::list({3}));

  // Unpacked and packed shape entries mix.
  const std::string unpacked(
      "\x08\x05\x10\x02\x12\x01\x03\x1a\x06"
      "abcdef",
      15);
  absl::StatusOr<Tensor> t = decode_tensor(unpacked);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->shape(), (Shape{2, 3}));
  // The last content wins.
  absl::StatusOr<Tensor> last =
      decode_tensor(raw_tensor(5, {2}, "xx") + std::string("\x1a\x02yz", 4));
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->flat<uint8_t>()[0], 'y');
}

// ---------------------------------------------------------------------------
// Mutation sweep: every corruption either decodes or fails cleanly, and a
// success always agrees with the generated parser.

void check_agrees_with_generated(std::string_view bytes) {
  absl::StatusOr<Structure> ours = decode_structure(bytes);
  if (!ours.ok()) {
    ASSERT_EQ(ours.status().code(), absl::StatusCode::kInvalidArgument) << ours.status();
    ASSERT_FALSE(ours.status().message().empty());
    return;
  }
  v1::StructureProto proto;
  ASSERT_TRUE(proto.ParseFromString(std::string(bytes)))
      << "we accepted what the generated parser rejects: " << ours->debug_string()
      << "\ninput: " << absl::BytesToHexString(absl::string_view(bytes.data(), bytes.size()));
  absl::StatusOr<Structure> theirs = structure_from_proto(&proto);
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  // debug_string compares NaN and -0.0 payloads sensibly too.
  ASSERT_EQ(ours->debug_string(), theirs->debug_string());
}

void check_tensor_decodes_cleanly(std::string_view bytes) {
  absl::StatusOr<Tensor> ours = decode_tensor(bytes);
  if (!ours.ok()) {
    ASSERT_EQ(ours.status().code(), absl::StatusCode::kInvalidArgument) << ours.status();
    return;
  }
  v1::TensorProto proto;
  ASSERT_TRUE(proto.ParseFromString(std::string(bytes)))
      << "we accepted what the generated parser rejects: " << ours->debug_string()
      << "\ninput: " << absl::BytesToHexString(absl::string_view(bytes.data(), bytes.size()));
  absl::StatusOr<Tensor> theirs = tensor_from_proto(&proto);
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  ASSERT_EQ(ours->debug_string(), theirs->debug_string());
}

std::vector<std::string> sweep_inputs() {
  return {
      encode_structure(nested_sample()),
      encode_structure(Structure::list({sample(DType::kBool), sample(DType::kInt64, {2})})),
      encode_structure(Structure::dict({{"a", Structure::tuple({sample(DType::kString, {2})})}})),
  };
}

TEST(CodecFuzzTest, SingleByteMutations) {
  for (const std::string& valid : sweep_inputs()) {
    for (size_t i = 0; i < valid.size(); ++i) {
      for (const int mask : {0x01, 0x02, 0x08, 0x40, 0x80, 0xff}) {
        std::string bytes = valid;
        bytes[i] = static_cast<char>(bytes[i] ^ mask);
        SCOPED_TRACE(testing::Message() << "byte " << i << " ^ " << mask);
        check_agrees_with_generated(bytes);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(CodecFuzzTest, Truncations) {
  for (const std::string& valid : sweep_inputs()) {
    for (size_t n = 0; n < valid.size(); ++n) {
      SCOPED_TRACE(testing::Message() << "length " << n);
      check_agrees_with_generated(std::string_view(valid).substr(0, n));
      if (HasFatalFailure()) return;
    }
  }
  for (const DType dtype : kAllDTypes) {
    const std::string valid = encode_tensor(sample(dtype));
    for (size_t n = 0; n < valid.size(); ++n) {
      check_tensor_decodes_cleanly(std::string_view(valid).substr(0, n));
      if (HasFatalFailure()) return;
    }
  }
}

TEST(CodecFuzzTest, RandomMultiByteMutations) {
  std::mt19937 rng(20240611);  // Fixed seed: deterministic.
  const std::vector<std::string> inputs = sweep_inputs();
  for (int round = 0; round < 20000; ++round) {
    std::string bytes = inputs[static_cast<size_t>(round) % inputs.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      const size_t pos = rng() % bytes.size();
      switch (rng() % 4) {
        case 0: bytes[pos] = static_cast<char>(rng()); break;
        case 1: bytes.erase(pos, 1 + rng() % 4); break;
        case 2: bytes.insert(pos, 1, static_cast<char>(rng())); break;
        default: bytes.resize(pos); break;
      }
    }
    SCOPED_TRACE(testing::Message() << "round " << round);
    check_agrees_with_generated(bytes);
    if (HasFatalFailure()) return;
    check_tensor_decodes_cleanly(bytes);
    if (HasFatalFailure()) return;
  }
}

// Tiny elements cost far more held than sent: the decoded value is bounded
// by a multiple of the message's size (CodecLimits::max_expansion), on
// both decoding paths, while payload-heavy values decode.
TEST(CodecBoundsTest, DecodedMemoryIsBoundedByAMultipleOfTheWireSize) {
  CodecLimits limits;
  limits.expansion_floor_bytes = 0;
  Structure::Items empties(2000, Structure::tuple({}));
  const Structure many_empty = Structure::list(std::move(empties));
  Tensor empty_strings = Tensor::from_strings(std::vector<std::string>(2000, ""), {2000});
  const Structure strings{empty_strings};
  for (const Structure& value : {many_empty, strings}) {
    const std::string wire = encode_structure(value);
    absl::StatusOr<Structure> decoded = decode_structure(wire, limits);
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kInvalidArgument) << decoded.status();
    EXPECT_THAT(message_of(decoded.status()), HasSubstr("max_expansion 8"));
    EXPECT_THAT(message_of(decoded.status()), HasSubstr(absl::StrCat(wire.size(), "-byte")));
    v1::StructureProto proto;
    ASSERT_TRUE(proto.ParseFromString(wire));
    absl::StatusOr<Structure> converted = structure_from_proto(&proto, limits);
    EXPECT_EQ(converted.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(message_of(converted.status()), HasSubstr("max_expansion"));
    // Within the default floor, small values like these decode.
    EXPECT_EQ(ok_decoded(decode_structure(wire)), value);
  }
  // Payload-heavy values are within 1x.
  const Structure payload = Structure::tuple(
      {Structure(sample(DType::kFloat32, {64, 64})),
       Structure(Tensor::from_strings(std::vector<std::string>(100, std::string(40, 'w')), {100})),
       Structure(std::string(1000, 's'))});
  const std::string wire = encode_structure(payload);
  absl::StatusOr<Structure> decoded = decode_structure(wire, limits);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, payload);
  absl::StatusOr<Tensor> tensor = decode_tensor(encode_tensor(empty_strings), limits);
  EXPECT_EQ(tensor.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace psflow::internal

// bfloat16 on the wire: rounding, the codec's DT_BFLOAT16 paths, and the
// buffer pool that pulls land in.
#include "tensor/bfloat16.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/v1/tensor.pb.h"
#include "psflow/wire_dtype.h"
#include "tensor/buffer_pool.h"
#include "tensor/codec.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

float from_bits(uint32_t bits) { return std::bit_cast<float>(bits); }
uint16_t round_bits(uint32_t bits) { return float_to_bfloat16(from_bits(bits)); }

TEST(BFloat16Test, RoundsToNearestTiesToEven) {
  // Exactly representable values keep their bits.
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16(-2.0f), 0xc000);
  EXPECT_EQ(float_to_bfloat16(0.0f), 0x0000);
  EXPECT_EQ(float_to_bfloat16(-0.0f), 0x8000);
  // Below, at and above the halfway point between 0x3f80 and 0x3f81.
  EXPECT_EQ(round_bits(0x3f807fff), 0x3f80);
  EXPECT_EQ(round_bits(0x3f808000), 0x3f80);  // tie: to the even 0x3f80
  EXPECT_EQ(round_bits(0x3f808001), 0x3f81);
  // A tie between 0x3f81 (odd) and 0x3f82 goes up to the even one.
  EXPECT_EQ(round_bits(0x3f818000), 0x3f82);
  // Negative ties behave the same on the magnitude.
  EXPECT_EQ(round_bits(0xbf808000), 0xbf80);
  EXPECT_EQ(round_bits(0xbf818000), 0xbf82);
  // Rounding up carries into the exponent.
  EXPECT_EQ(round_bits(0x3fffffff), 0x4000);
}

TEST(BFloat16Test, InfinitiesNaNsAndOverflow) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(float_to_bfloat16(inf), 0x7f80);
  EXPECT_EQ(float_to_bfloat16(-inf), 0xff80);
  // The largest floats round past bfloat16's largest finite to infinity.
  EXPECT_EQ(float_to_bfloat16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(float_to_bfloat16(-std::numeric_limits<float>::max()), 0xff80);
  // bfloat16's largest finite stays finite.
  EXPECT_EQ(round_bits(0x7f7f0000), 0x7f7f);
  // NaNs stay NaN (quiet), whatever their payload, with their sign; a
  // payload only in the low bits would round to infinity without the check.
  for (const uint32_t nan : {0x7fc00000u, 0x7f800001u, 0x7fffffffu, 0xff800001u, 0x7f80ffffu}) {
    const uint16_t b = round_bits(nan);
    EXPECT_TRUE(std::isnan(bfloat16_to_float(b))) << std::hex << nan;
    EXPECT_EQ(b & 0x8000, (nan >> 16) & 0x8000) << std::hex << nan;
  }
}

TEST(BFloat16Test, Subnormals) {
  // bfloat16's smallest subnormal is exact.
  EXPECT_EQ(round_bits(0x00010000), 0x0001);
  EXPECT_EQ(bfloat16_to_float(0x0001), from_bits(0x00010000));
  // Float subnormals below half of it round to zero, keeping the sign.
  EXPECT_EQ(round_bits(0x00000001), 0x0000);
  EXPECT_EQ(round_bits(0x80007fff), 0x8000);
  // Half of it is a tie to even (zero); above half rounds up.
  EXPECT_EQ(round_bits(0x00008000), 0x0000);
  EXPECT_EQ(round_bits(0x00008001), 0x0001);
  EXPECT_EQ(round_bits(0x00018000), 0x0002);
  // The largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(round_bits(0x007fffff), 0x0080);
}

TEST(BFloat16Test, WidenIsExactAndWorksInPlace) {
  std::vector<float> values = {1.0f, -3.5f, 0.15625f, 1e30f, -1e-30f, 0.0f, 7.0f};
  const size_t n = values.size();
  std::vector<uint16_t> narrow(n);
  narrow_to_bfloat16(values.data(), n, narrow.data());
  std::vector<float> wide(n);
  widen_from_bfloat16(narrow.data(), n, wide.data());
  // In place: the 2n bytes in the upper half of a 4n-byte buffer.
  std::vector<float> in_place(n);
  std::memcpy(reinterpret_cast<char*>(in_place.data()) + 2 * n, narrow.data(), 2 * n);
  widen_from_bfloat16(reinterpret_cast<char*>(in_place.data()) + 2 * n, n, in_place.data());
  for (size_t i = 0; i < n; ++i) {
    EXPECT_EQ(wide[i], bfloat16_to_float(float_to_bfloat16(values[i]))) << i;
    EXPECT_EQ(std::bit_cast<uint32_t>(in_place[i]), std::bit_cast<uint32_t>(wide[i])) << i;
    // Relative error of at most 2^-9.
    EXPECT_LE(std::abs(wide[i] - values[i]), std::abs(values[i]) * 0x1p-9f) << i;
  }
}

TEST(BFloat16Test, WireDTypeNames) {
  EXPECT_EQ(wire_dtype_name(WireDType::kBFloat16), "bfloat16");
  EXPECT_EQ(*wire_dtype_from_name("bfloat16"), WireDType::kBFloat16);
  EXPECT_EQ(*wire_dtype_from_name("bf16"), WireDType::kBFloat16);
  EXPECT_EQ(*wire_dtype_from_name("float32"), WireDType::kFloat32);
  const absl::Status bad = wire_dtype_from_name("float16").status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.message()), HasSubstr("'float16'"));
  EXPECT_THAT(std::string(bad.message()), HasSubstr("bfloat16"));
}

Tensor awkward_floats() {
  const float inf = std::numeric_limits<float>::infinity();
  return Tensor::from_vector<float>(
      {1.0f, from_bits(0x3f808000), from_bits(0x3f818000), -inf, inf,
       std::numeric_limits<float>::quiet_NaN(), from_bits(0x00018000), -0.0f, 3.14159f},
      {3, 3});
}

void expect_rounded(const Tensor& decoded, const Tensor& original) {
  ASSERT_EQ(decoded.dtype(), DType::kFloat32);
  ASSERT_EQ(decoded.shape(), original.shape());
  for (int64_t i = 0; i < original.num_elements(); ++i) {
    const float want = bfloat16_to_float(float_to_bfloat16(original.flat<float>()[i]));
    const float got = decoded.flat<float>()[i];
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << i;
    } else {
      EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want)) << i;
    }
  }
}

TEST(BFloat16CodecTest, RoundTripHalvesThePayloadAndDecodesToFloat32) {
  const Tensor t = awkward_floats();
  std::string bytes;
  encode_tensor(t, WireDType::kBFloat16, &bytes);
  EXPECT_EQ(bytes.size(), encoded_size(t, WireDType::kBFloat16));
  EXPECT_EQ(encoded_size(t, WireDType::kBFloat16) + 18, encoded_size(t));
  absl::StatusOr<Tensor> decoded = decode_tensor(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  expect_rounded(*decoded, t);
  // The generated parser reads it as DT_BFLOAT16 with 2 bytes an element,
  // and the proto path widens it the same way.
  v1::TensorProto proto;
  ASSERT_TRUE(proto.ParseFromString(bytes));
  EXPECT_EQ(proto.dtype(), v1::DT_BFLOAT16);
  EXPECT_EQ(proto.content().size(), 18u);
  absl::StatusOr<Tensor> from_proto = tensor_from_proto(&proto);
  ASSERT_TRUE(from_proto.ok()) << from_proto.status();
  expect_rounded(*from_proto, t);
  // Float32 stays the default, byte for byte as before.
  EXPECT_EQ(encode_tensor(t), [&] {
    std::string same;
    encode_tensor(t, WireDType::kFloat32, &same);
    return same;
  }());
}

TEST(BFloat16CodecTest, OnlyFloat32TensorsAreNarrowed) {
  const Tensor ints = Tensor::from_vector<int64_t>({1, 2, 3});
  const Tensor doubles = Tensor::from_vector<double>({0.1, 0.2});
  EXPECT_FALSE(sends_bfloat16(ints, WireDType::kBFloat16));
  EXPECT_FALSE(sends_bfloat16(doubles, WireDType::kBFloat16));
  for (const Tensor& t : {ints, doubles}) {
    std::string bytes;
    encode_tensor(t, WireDType::kBFloat16, &bytes);
    EXPECT_EQ(bytes, encode_tensor(t));
    EXPECT_EQ(*decode_tensor(bytes), t);
  }
}

TEST(BFloat16CodecTest, MalformedBFloat16IsRefused) {
  v1::TensorProto proto;
  proto.set_dtype(v1::DT_BFLOAT16);
  proto.add_shape(3);
  proto.set_content(std::string(4, '\0'));  // 2 elements' worth for 3
  absl::Status s = decode_tensor(proto.SerializeAsString()).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("content is 4 bytes"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("bfloat16 needs 6 bytes"));
  EXPECT_EQ(tensor_from_proto(&proto).status().code(), absl::StatusCode::kInvalidArgument);
  proto.set_content(std::string(6, '\0'));
  proto.add_string_val("x");
  EXPECT_EQ(decode_tensor(proto.SerializeAsString()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BufferPoolTest, ReusesTheBufferOnceEveryHolderLetsGo) {
  BufferPool pool;
  const uint8_t* first = nullptr;
  {
    std::shared_ptr<TensorBuffer> a = pool.take(64);
    first = a->data();
    EXPECT_EQ(a->size(), 64u);
  }
  std::shared_ptr<TensorBuffer> b = pool.take(64);
  EXPECT_EQ(b->data(), first);
  EXPECT_EQ(pool.allocations(), 1);
  // While `b` (or a tensor on it) is held, a new buffer is made: nobody's
  // bytes change under them.
  Tensor held = *Tensor::from_buffer(DType::kFloat32, {16}, b);
  b.reset();
  std::shared_ptr<TensorBuffer> c = pool.take(64);
  EXPECT_NE(c->data(), first);
  EXPECT_EQ(pool.allocations(), 2);
  // A different size replaces the kept buffer.
  c.reset();
  held = Tensor();
  std::shared_ptr<TensorBuffer> d = pool.take(128);
  EXPECT_EQ(d->size(), 128u);
  EXPECT_EQ(pool.allocations(), 3);
}

TEST(BufferPoolTest, SubBuffersKeepTheirParentAlive) {
  BufferPool pool;
  std::shared_ptr<TensorBuffer> whole = pool.take(64);
  uint8_t* base = whole->data();
  std::shared_ptr<TensorBuffer> part = sub_buffer(whole, 16, 32);
  whole.reset();
  EXPECT_EQ(part->data(), base + 16);
  EXPECT_EQ(part->size(), 32u);
  // The parent is still out (held through the part), so take() allocates.
  std::shared_ptr<TensorBuffer> other = pool.take(64);
  EXPECT_NE(other->data(), base);
}

}  // namespace
}  // namespace psflow::internal

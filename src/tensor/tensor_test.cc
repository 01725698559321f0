#include "psflow/tensor.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/dtype.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

constexpr DType kAllDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64,
                                DType::kUInt8,   DType::kBool,    DType::kString};

std::string message_of(const absl::Status& status) { return std::string(status.message()); }

TEST(DTypeTest, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::kFloat32), 4u);
  EXPECT_EQ(dtype_size(DType::kFloat64), 8u);
  EXPECT_EQ(dtype_size(DType::kInt32), 4u);
  EXPECT_EQ(dtype_size(DType::kInt64), 8u);
  EXPECT_EQ(dtype_size(DType::kUInt8), 1u);
  EXPECT_EQ(dtype_size(DType::kBool), 1u);
  EXPECT_EQ(dtype_size(DType::kString), 0u);
  EXPECT_EQ(dtype_size(DType::kInvalid), 0u);
  for (const DType dtype : kAllDTypes) {
    absl::StatusOr<DType> back = dtype_from_name(dtype_name(dtype));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, dtype);
    EXPECT_TRUE(is_valid_dtype(static_cast<int>(dtype)));
  }
  EXPECT_EQ(dtype_name(DType::kFloat32), "float32");
  EXPECT_EQ(dtype_name(DType::kInvalid), "invalid");
  EXPECT_EQ(*dtype_from_name("float"), DType::kFloat32);
  EXPECT_EQ(*dtype_from_name("double"), DType::kFloat64);
  EXPECT_FALSE(is_valid_dtype(0));
  EXPECT_FALSE(is_valid_dtype(8));
  EXPECT_FALSE(is_valid_dtype(-1));
}

TEST(DTypeTest, UnknownNameListsValidOnes) {
  absl::StatusOr<DType> d = dtype_from_name("float16");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message_of(d.status()), HasSubstr("'float16'"));
  EXPECT_THAT(message_of(d.status()), HasSubstr("float32, float64, int32"));
}

TEST(DTypeTest, DTypeOf) {
  static_assert(dtype_of<float>() == DType::kFloat32);
  static_assert(dtype_of<double>() == DType::kFloat64);
  static_assert(dtype_of<int32_t>() == DType::kInt32);
  static_assert(dtype_of<int64_t>() == DType::kInt64);
  static_assert(dtype_of<uint8_t>() == DType::kUInt8);
  static_assert(dtype_of<bool>() == DType::kBool);
  static_assert(dtype_of<std::string>() == DType::kString);
}

TEST(ShapeTest, NumElementsAndString) {
  EXPECT_EQ(num_elements({}), 1);
  EXPECT_EQ(num_elements({2, 3, 4}), 24);
  EXPECT_EQ(num_elements({2, 0, 4}), 0);
  EXPECT_EQ(shape_string({}), "[]");
  EXPECT_EQ(shape_string({2, 3}), "[2, 3]");
}

TEST(ShapeTest, CheckedNumElementsRejectsBadShapes) {
  absl::StatusOr<int64_t> neg = checked_num_elements({2, -3});
  ASSERT_FALSE(neg.ok());
  EXPECT_EQ(message_of(neg.status()), "shape [2, -3] has negative dimension -3 at axis 1");
  absl::StatusOr<int64_t> big = checked_num_elements({int64_t{1} << 40, int64_t{1} << 40});
  ASSERT_FALSE(big.ok());
  EXPECT_THAT(message_of(big.status()), HasSubstr("more elements than int64"));
  // A zero dimension does not excuse an overflowing product elsewhere:
  // strides computed from the other dimensions would overflow.
  EXPECT_FALSE(checked_num_elements({0, int64_t{1} << 40, int64_t{1} << 40}).ok());
}

TEST(TensorBufferTest, AllocateIsAlignedAndZeroed) {
  for (const size_t bytes : {size_t{0}, size_t{1}, size_t{63}, size_t{4096}}) {
    std::shared_ptr<TensorBuffer> b = TensorBuffer::allocate(bytes);
    ASSERT_NE(b->data(), nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % 64, 0u);
    EXPECT_EQ(b->size(), bytes);
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(b->data()[i], 0) << i;
  }
}

TEST(TensorBufferTest, LargeBuffersAreAlignedAndZeroed) {
  // Large buffers take a different path (mapped pages); same contract.
  const size_t bytes = (size_t{48} << 20) + 3;
  std::shared_ptr<TensorBuffer> b = TensorBuffer::allocate(bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % 64, 0u);
  EXPECT_EQ(b->size(), bytes);
  for (size_t i = 0; i < bytes; i += 4099) ASSERT_EQ(b->data()[i], 0) << i;
  EXPECT_EQ(b->data()[bytes - 1], 0);
  b->data()[bytes - 1] = 7;  // Writable to the last byte.
  Tensor t(DType::kFloat64, {int64_t{5} << 20});
  EXPECT_EQ(t.flat<double>()[(size_t{5} << 20) - 1], 0.0);
  Tensor copy = t.clone();
  EXPECT_EQ(copy, t);
}

TEST(TensorBufferTest, MidSizedBuffersAreMappedOnHugePageBoundaries) {
  // From 4 MiB on, buffers get their own 2 MiB-aligned mapping (huge pages
  // for tables read at random rows); same contract as every buffer.
  const size_t bytes = (size_t{4} << 20) + 5;
  std::shared_ptr<TensorBuffer> b = TensorBuffer::allocate(bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % (size_t{2} << 20), 0u);
  EXPECT_EQ(b->size(), bytes);
  for (size_t i = 0; i < bytes; i += 4099) ASSERT_EQ(b->data()[i], 0) << i;
  EXPECT_EQ(b->data()[bytes - 1], 0);
  b->data()[bytes - 1] = 7;
  // Just below the threshold: the heap, 64-byte aligned as always.
  std::shared_ptr<TensorBuffer> small = TensorBuffer::allocate((size_t{4} << 20) - 64);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small->data()) % 64, 0u);
  EXPECT_EQ(small->data()[(size_t{4} << 20) - 65], 0);
}

TEST(TensorBufferTest, ReusedLargeBuffersAreZeroedAgain) {
  // Larger than any other test's buffer, so that the mapping freed here is
  // the only cached one that fits the next request (when the whole binary
  // runs in one process, other tests leave mappings of 33-48 MiB cached,
  // which fit a 32 MiB request just as well).
  const size_t bytes = (size_t{64} << 20) + 1;
  const uint8_t* first = nullptr;
  {
    std::shared_ptr<TensorBuffer> b = TensorBuffer::allocate(bytes);
    std::memset(b->data(), 0xab, bytes);
    first = b->data();
  }
  std::shared_ptr<TensorBuffer> again = TensorBuffer::allocate(bytes);
  EXPECT_EQ(again->data(), first);  // Freed large mappings are recycled...
  for (size_t i = 0; i < bytes; i += 4093) ASSERT_EQ(again->data()[i], 0) << i;
  EXPECT_EQ(again->data()[bytes - 1], 0);  // ...and zeroed again.
}

TEST(TensorBufferTest, LargeBuffersFromManyThreads) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &failures] {
      for (int i = 0; i < 6; ++i) {
        const size_t bytes = (size_t{33} << 20) + static_cast<size_t>(t) * 8192;
        std::shared_ptr<TensorBuffer> b = TensorBuffer::allocate(bytes);
        for (size_t k = 0; k < bytes; k += 1 << 20) {
          if (b->data()[k] != 0) ++failures;
          b->data()[k] = static_cast<uint8_t>(t + 1);
        }
        for (size_t k = 0; k < bytes; k += 1 << 20) {
          if (b->data()[k] != t + 1) ++failures;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(TensorBufferTest, AdoptDoesNotCopy) {
  std::string bytes(1000, 'x');
  const char* original = bytes.data();
  std::shared_ptr<TensorBuffer> b = TensorBuffer::adopt(std::move(bytes));
  EXPECT_EQ(reinterpret_cast<const char*>(b->data()), original);
  EXPECT_EQ(b->size(), 1000u);
}

TEST(TensorTest, DefaultIsInvalid) {
  Tensor t;
  EXPECT_FALSE(t.valid());
  EXPECT_EQ(t.dtype(), DType::kInvalid);
  EXPECT_EQ(t.debug_string(), "Tensor<invalid>");
}

TEST(TensorTest, ZeroFilledForEveryDType) {
  for (const DType dtype : kAllDTypes) {
    Tensor t(dtype, {2, 3});
    EXPECT_TRUE(t.valid());
    EXPECT_EQ(t.dtype(), dtype);
    EXPECT_EQ(t.rank(), 2);
    EXPECT_EQ(t.num_elements(), 6);
    EXPECT_EQ(t.byte_size(), 6 * dtype_size(dtype));
    if (dtype == DType::kString) {
      for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(t.string_at(i), "");
    } else {
      const auto* bytes = static_cast<const uint8_t*>(t.raw_data());
      for (size_t i = 0; i < t.byte_size(); ++i) ASSERT_EQ(bytes[i], 0);
    }
  }
}

TEST(TensorTest, ScalarsHaveEmptyShape) {
  Tensor f = Tensor::scalar(2.5f);
  EXPECT_EQ(f.dtype(), DType::kFloat32);
  EXPECT_EQ(f.rank(), 0);
  EXPECT_TRUE(f.shape().empty());
  EXPECT_EQ(f.num_elements(), 1);
  EXPECT_EQ(f.scalar_value<float>(), 2.5f);
  EXPECT_EQ(f.at<float>({}), 2.5f);
  EXPECT_EQ(Tensor::scalar(int64_t{-7}).scalar_value<int64_t>(), -7);
  EXPECT_EQ(Tensor::scalar(true).scalar_value<bool>(), true);
  Tensor s = Tensor::scalar_string("hi");
  EXPECT_EQ(s.dtype(), DType::kString);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.scalar_value<std::string>(), "hi");
}

TEST(TensorTest, ZeroSizedDimensions) {
  Tensor t(DType::kFloat32, {2, 0, 3});
  EXPECT_EQ(t.num_elements(), 0);
  EXPECT_EQ(t.byte_size(), 0u);
  EXPECT_TRUE(t.flat<float>().empty());
  EXPECT_EQ(t.debug_string(), "Tensor<float32, [2, 0, 3]> [[], []]");
  Tensor e(DType::kString, {0});
  EXPECT_EQ(e.num_elements(), 0);
  EXPECT_EQ(e.debug_string(), "Tensor<string, [0]> []");
  EXPECT_EQ(t.slice(1, 2).shape(), (Shape{1, 0, 3}));
  EXPECT_EQ(Tensor(DType::kInt32, {0, 4}).slice(0, 0).shape(), (Shape{0, 4}));
}

TEST(TensorTest, CreateValidatesUntrustedShapes) {
  EXPECT_TRUE(Tensor::create(DType::kInt32, {3, 4}).ok());
  absl::StatusOr<Tensor> neg = Tensor::create(DType::kInt32, {3, -1});
  ASSERT_FALSE(neg.ok());
  EXPECT_EQ(neg.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message_of(neg.status()), HasSubstr("negative dimension -1"));
  absl::StatusOr<Tensor> bad = Tensor::create(DType::kInvalid, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(message_of(bad.status()), HasSubstr("invalid dtype"));
  absl::StatusOr<Tensor> huge = Tensor::create(DType::kFloat64, {int64_t{1} << 61});
  ASSERT_FALSE(huge.ok());
  EXPECT_THAT(message_of(huge.status()), HasSubstr("more bytes than int64"));
}

TEST(TensorTest, FromVectorEveryFixedDType) {
  Tensor f = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(f.shape(), (Shape{2, 2}));
  EXPECT_EQ(f.at<float>({1, 0}), 3);
  Tensor d = Tensor::from_vector<double>({0.5, 1.5});
  EXPECT_EQ(d.shape(), (Shape{2}));
  EXPECT_EQ(d.flat<double>()[1], 1.5);
  EXPECT_EQ(Tensor::from_vector<int32_t>({-1, 7}).flat<int32_t>()[0], -1);
  EXPECT_EQ(Tensor::from_vector<int64_t>({int64_t{1} << 40}).flat<int64_t>()[0], int64_t{1} << 40);
  EXPECT_EQ(Tensor::from_vector<uint8_t>({255, 0}).flat<uint8_t>()[0], 255);
  Tensor b = Tensor::from_vector<bool>({true, false, true});
  EXPECT_EQ(b.dtype(), DType::kBool);
  EXPECT_TRUE(b.flat<bool>()[0]);
  EXPECT_FALSE(b.flat<bool>()[1]);
  EXPECT_TRUE(b.flat<bool>()[2]);
  Tensor s = Tensor::from_vector<std::string>({"a", "b"}, {2, 1});
  EXPECT_EQ(s.at<std::string>({1, 0}), "b");
}

TEST(TensorTest, FromStrings) {
  Tensor s = Tensor::from_strings({"a", "bc", "", "d"}, {2, 2});
  EXPECT_EQ(s.dtype(), DType::kString);
  EXPECT_EQ(s.string_at(1), "bc");
  EXPECT_EQ(s.at<std::string>({1, 1}), "d");
  s.mutable_string_at(2) = "new";
  EXPECT_EQ(s.flat<std::string>()[2], "new");
}

TEST(TensorTest, FromBuffer) {
  std::shared_ptr<TensorBuffer> buffer = TensorBuffer::allocate(64);
  absl::StatusOr<Tensor> t = Tensor::from_buffer(DType::kFloat32, {2, 2}, buffer, 16);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->raw_data(), buffer->data() + 16);
  t->mutable_flat<float>()[0] = 5;
  EXPECT_EQ(reinterpret_cast<float*>(buffer->data() + 16)[0], 5);

  absl::StatusOr<Tensor> too_big = Tensor::from_buffer(DType::kFloat32, {4, 4}, buffer, 16);
  ASSERT_FALSE(too_big.ok());
  EXPECT_THAT(message_of(too_big.status()),
              HasSubstr("needs 64 bytes at offset 16 but the buffer holds only 64"));
  EXPECT_FALSE(Tensor::from_buffer(DType::kFloat32, {1}, buffer, 65).ok());
  absl::StatusOr<Tensor> misaligned = Tensor::from_buffer(DType::kFloat64, {1}, buffer, 4);
  ASSERT_FALSE(misaligned.ok());
  EXPECT_THAT(message_of(misaligned.status()), HasSubstr("not aligned"));
  EXPECT_FALSE(Tensor::from_buffer(DType::kString, {1}, buffer).ok());
  EXPECT_FALSE(Tensor::from_buffer(DType::kUInt8, {1}, nullptr).ok());
}

TEST(TensorTest, CopiesShareAndCloneIsDeep) {
  Tensor a = Tensor::from_vector<int32_t>({1, 2, 3});
  Tensor b = a;
  b.mutable_flat<int32_t>()[0] = 10;
  EXPECT_EQ(a.flat<int32_t>()[0], 10);
  Tensor c = a.clone();
  EXPECT_NE(c.raw_data(), a.raw_data());
  c.mutable_flat<int32_t>()[1] = 20;
  EXPECT_EQ(a.flat<int32_t>()[1], 2);
  EXPECT_EQ(c, Tensor::from_vector<int32_t>({10, 20, 3}));

  Tensor s = Tensor::from_strings({"x", "y"});
  Tensor s2 = s;
  s2.mutable_string_at(0) = "z";
  EXPECT_EQ(s.string_at(0), "z");
  Tensor s3 = s.clone();
  s3.mutable_string_at(1) = "w";
  EXPECT_EQ(s.string_at(1), "y");
}

TEST(TensorTest, ElementAccess) {
  Tensor t(DType::kInt64, {2, 3, 4});
  t.mutable_at<int64_t>({1, 2, 3}) = 42;
  EXPECT_EQ(t.flat<int64_t>()[23], 42);
  EXPECT_EQ(t.at<int64_t>({1, 2, 3}), 42);
  t.mutable_at<int64_t>({0, 1, 0}) = 7;
  EXPECT_EQ(t.flat<int64_t>()[4], 7);
  EXPECT_EQ(t.dim(0), 2);
  EXPECT_EQ(t.dim(-1), 4);
  EXPECT_EQ(t.dim(-3), 2);
}

TEST(TensorDeathTest, ProgrammingErrorsAbort) {
  Tensor t(DType::kFloat32, {2, 2});
  EXPECT_DEATH((void)t.flat<int32_t>(), "accessed as int32");
  EXPECT_DEATH((void)t.at<float>({2, 0}), "out of range");
  EXPECT_DEATH((void)t.at<float>({0}), "index of rank 1");
  EXPECT_DEATH((void)t.dim(2), "out of range for rank 2");
  EXPECT_DEATH((void)t.slice(1, 3), "out of range");
  EXPECT_DEATH((void)t.scalar_value<float>(), "one element");
  EXPECT_DEATH(Tensor(DType::kFloat32, {-1}), "negative dimension");
  EXPECT_DEATH((void)Tensor::from_vector<float>({1, 2, 3}, {2, 2}), "needs 4 values, got 3");
  EXPECT_DEATH((void)Tensor::scalar_string("s").raw_data(), "no byte buffer");
}

TEST(TensorTest, SliceSharesBuffer) {
  Tensor t = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7}, {4, 2});
  Tensor s = t.slice(1, 3);
  EXPECT_EQ(s.shape(), (Shape{2, 2}));
  EXPECT_EQ(s.buffer(), t.buffer());
  EXPECT_EQ(s.raw_data(), static_cast<const float*>(t.raw_data()) + 2);
  EXPECT_EQ(s.at<float>({0, 0}), 2);
  EXPECT_EQ(s.at<float>({1, 1}), 5);
  s.mutable_at<float>({0, 1}) = 30;
  EXPECT_EQ(t.at<float>({1, 1}), 30);
  // A slice of a slice keeps counting from the right place.
  Tensor ss = s.slice(1, 2);
  EXPECT_EQ(ss.at<float>({0, 0}), 4);
  EXPECT_EQ(ss.clone(), Tensor::from_vector<float>({4, 5}, {1, 2}));
  EXPECT_EQ(t.slice(4, 4).num_elements(), 0);
}

TEST(TensorTest, StringSliceSharesElements) {
  Tensor t = Tensor::from_strings({"a", "b", "c", "d", "e", "f"}, {3, 2});
  Tensor s = t.slice(1, 3);
  EXPECT_EQ(s.shape(), (Shape{2, 2}));
  EXPECT_EQ(s.string_at(0), "c");
  EXPECT_EQ(s.at<std::string>({1, 1}), "f");
  s.mutable_string_at(1) = "D";
  EXPECT_EQ(t.string_at(3), "D");
  EXPECT_EQ(s.slice(1, 2).string_at(0), "e");
  EXPECT_EQ(s.clone(), Tensor::from_strings({"c", "D", "e", "f"}, {2, 2}));
}

TEST(TensorTest, CheckedSliceErrors) {
  Tensor t(DType::kFloat32, {3});
  EXPECT_THAT(message_of(t.checked_slice(2, 1).status()),
              HasSubstr("slice [2, 1) is out of range for shape [3]"));
  EXPECT_FALSE(t.checked_slice(-1, 1).ok());
  EXPECT_FALSE(t.checked_slice(0, 4).ok());
  EXPECT_THAT(message_of(Tensor::scalar(1.0f).checked_slice(0, 1).status()),
              HasSubstr("cannot slice a scalar"));
}

TEST(TensorTest, ReshapeSharesAndInfers) {
  Tensor t = Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6});
  absl::StatusOr<Tensor> r = t.reshape({2, 3});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->shape(), (Shape{2, 3}));
  EXPECT_EQ(r->raw_data(), t.raw_data());
  EXPECT_EQ(r->at<int32_t>({1, 0}), 4);
  EXPECT_EQ(t.reshape({3, -1})->shape(), (Shape{3, 2}));
  EXPECT_EQ(t.slice(2, 6).reshape({-1, 2})->at<int32_t>({1, 1}), 6);
  EXPECT_EQ(Tensor::scalar(3).reshape({1, 1, 1})->shape(), (Shape{1, 1, 1}));
  EXPECT_THAT(message_of(t.reshape({4, 2}).status()),
              HasSubstr("cannot reshape 6 elements (shape [6]) to shape [4, 2]"));
  EXPECT_FALSE(t.reshape({-1, -1}).ok());
  EXPECT_FALSE(t.reshape({4, -1}).ok());
  EXPECT_FALSE(t.reshape({-2, 3}).ok());
  EXPECT_FALSE(Tensor(DType::kFloat32, {0}).reshape({0, -1}).ok());
}

TEST(TensorTest, EigenViews) {
  Tensor t = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(t.vec<float>().size(), 6);
  EXPECT_FLOAT_EQ(t.vec<float>().sum(), 21);
  Tensor::ConstMat<float> m = t.matrix<float>();
  EXPECT_EQ(m.rows(), 2);
  EXPECT_EQ(m.cols(), 3);
  EXPECT_EQ(m(1, 0), 4);  // Row-major, like the tensor.
  EXPECT_EQ(m.data(), t.raw_data());
  t.mutable_matrix<float>() *= 2;
  EXPECT_EQ(t.at<float>({1, 2}), 12);
  t.mutable_vec<float>() += 1;
  EXPECT_EQ(t.at<float>({0, 0}), 3);
  Tensor col = Tensor::from_vector<double>({1, 2, 3});
  EXPECT_EQ(col.matrix<double>().rows(), 3);
  EXPECT_EQ(col.matrix<double>().cols(), 1);
  // Matrix products see the same numbers.
  Eigen::MatrixXf product = t.matrix<float>() * t.matrix<float>().transpose();
  EXPECT_FLOAT_EQ(product(0, 0), 3 * 3 + 5 * 5 + 7 * 7);
  // Views of a slice start at the slice.
  EXPECT_EQ(t.slice(1, 2).vec<float>()(0), 9);
}

TEST(TensorTest, DebugStringFormats) {
  EXPECT_EQ(Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}).debug_string(),
            "Tensor<float32, [2, 2]> [[1, 2], [3, 4]]");
  EXPECT_EQ(Tensor::scalar(0.5).debug_string(), "Tensor<float64, []> 0.5");
  EXPECT_EQ(Tensor::scalar(0.1f).debug_string(), "Tensor<float32, []> 0.1");
  EXPECT_EQ(Tensor::from_vector<int32_t>({-1, 2}).debug_string(), "Tensor<int32, [2]> [-1, 2]");
  EXPECT_EQ(Tensor::from_vector<uint8_t>({255}).debug_string(), "Tensor<uint8, [1]> [255]");
  EXPECT_EQ(Tensor::from_vector<bool>({true, false}).debug_string(),
            "Tensor<bool, [2]> [True, False]");
  EXPECT_EQ(Tensor::from_strings({"a", "it's"}).debug_string(),
            "Tensor<string, [2]> ['a', \"it's\"]");
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(Tensor::from_vector<float>({inf, -inf, std::nanf("")}).debug_string(),
            "Tensor<float32, [3]> [inf, -inf, nan]");
  EXPECT_EQ(Tensor::from_vector<double>({1e20, 1.5e-7}).debug_string(),
            "Tensor<float64, [2]> [1e+20, 1.5e-07]");
  std::ostringstream os;
  os << Tensor::scalar(int64_t{3});
  EXPECT_EQ(os.str(), "Tensor<int64, []> 3");
}

TEST(TensorTest, DebugStringElidesLikeNumpy) {
  std::vector<int32_t> values(100);
  for (int i = 0; i < 100; ++i) values[static_cast<size_t>(i)] = i;
  Tensor t = Tensor::from_vector(values);
  EXPECT_EQ(t.debug_string(), "Tensor<int32, [100]> [0, 1, 2, ..., 97, 98, 99]");
  EXPECT_THAT(t.debug_string(1000), ::testing::Not(HasSubstr("...")));
  EXPECT_THAT(t.debug_string(1000), HasSubstr(", 50, 51, "));
  EXPECT_EQ(t.reshape({10, 10})->debug_string(),
            "Tensor<int32, [10, 10]> [[0, 1, 2, ..., 7, 8, 9], "
            "[10, 11, 12, ..., 17, 18, 19], [20, 21, 22, ..., 27, 28, 29], ..., "
            "[70, 71, 72, ..., 77, 78, 79], [80, 81, 82, ..., 87, 88, 89], "
            "[90, 91, 92, ..., 97, 98, 99]]");
  // Short dimensions are kept whole even when summarising.
  EXPECT_EQ(t.reshape({50, 2})->debug_string(4).substr(0, 40),
            "Tensor<int32, [50, 2]> [[0, 1], [2, 3], ");
  EXPECT_EQ(Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6, 7}).debug_string(3),
            "Tensor<int32, [7]> [1, 2, 3, ..., 5, 6, 7]");
}

TEST(TensorTest, EqualityIsExact) {
  Tensor a = Tensor::from_vector<float>({1, 2});
  EXPECT_EQ(a, Tensor::from_vector<float>({1, 2}));
  EXPECT_FALSE(a == Tensor::from_vector<float>({1, 3}));
  EXPECT_FALSE(a == Tensor::from_vector<double>({1, 2}));
  EXPECT_FALSE(a == Tensor::from_vector<float>({1, 2}, {2, 1}));
  Tensor nan = Tensor::from_vector<float>({std::nanf("")});
  EXPECT_FALSE(nan == nan);
  EXPECT_EQ(Tensor(), Tensor());
  EXPECT_EQ(Tensor::from_vector<uint8_t>({1, 2}), Tensor::from_vector<uint8_t>({1, 2}));
  EXPECT_FALSE(Tensor::from_strings({"a"}) == Tensor::from_strings({"b"}));
}

TEST(TensorTest, AllCloseNamesFirstDifference) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  Tensor b = Tensor::from_vector<float>({1, 2, 3.00001f, 5}, {2, 2});
  absl::Status st = all_close(a, b);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message_of(st), HasSubstr("at index [1, 1]: 4 vs 5"));
  EXPECT_TRUE(all_close(a, b, 0, 1.5).ok());
  EXPECT_TRUE(all_close(a, a).ok());
  EXPECT_THAT(message_of(all_close(a, Tensor::from_vector<float>({1, 2, 3, 4}))),
              HasSubstr("shape [2, 2] vs [4]"));
  EXPECT_THAT(message_of(all_close(a, Tensor(DType::kInt32, {2, 2}))),
              HasSubstr("dtype float32 vs int32"));
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(
      all_close(Tensor::from_vector<double>({inf}), Tensor::from_vector<double>({inf})).ok());
  EXPECT_FALSE(all_close(Tensor::from_vector<double>({std::nan("")}),
                         Tensor::from_vector<double>({std::nan("")}))
                   .ok());
  EXPECT_THAT(message_of(all_close(Tensor::from_vector<int32_t>({1, 2}),
                                   Tensor::from_vector<int32_t>({1, 3}))),
              HasSubstr("at index [1]: 2 vs 3"));
  EXPECT_THAT(message_of(all_close(Tensor::from_strings({"a"}), Tensor::from_strings({"b"}))),
              HasSubstr("at index [0]: 'a' vs 'b'"));
}

}  // namespace
}  // namespace psflow::internal

// get_item on a dense tensor: NumPy's results, written out by hand.
#include "psflow/tensor_index.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow {
namespace {

using ::testing::HasSubstr;

Tensor iota(Shape shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i);
  return Tensor::from_vector(v, std::move(shape));
}

Tensor vec(std::vector<int64_t> v, Shape shape) { return Tensor::from_vector(v, std::move(shape)); }

Tensor at(const Tensor& x, const std::vector<TensorIndex>& index) {
  absl::StatusOr<Tensor> t = get_item(x, index);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : Tensor();
}

TEST(GetItemTest, RangesWithSteps) {
  const Tensor x = iota({10});
  EXPECT_EQ(at(x, {Slice{2, 8, 3}}), vec({2, 5}, {2}));
  EXPECT_EQ(at(x, {Slice{9, 3, -2}}), vec({9, 7, 5}, {3}));
  EXPECT_EQ(at(x, {Slice{{}, {}, -1}}), vec({9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, {10}));
  EXPECT_EQ(at(x, {Slice{-3, {}}}), vec({7, 8, 9}, {3}));
  EXPECT_EQ(at(x, {Slice{-100, 2}}), vec({0, 1}, {2}));
  EXPECT_EQ(at(x, {Slice{100, {}, -4}}), vec({9, 5, 1}, {3}));
  EXPECT_EQ(at(x, {Slice{5, 5}}).shape(), Shape{0});
  EXPECT_EQ(at(x, {Slice{3, 7, -1}}).shape(), Shape{0});
}

TEST(GetItemTest, IntegersColumnsNewAxisEllipsis) {
  const Tensor x = iota({3, 4});
  EXPECT_EQ(at(x, {-1}), vec({8, 9, 10, 11}, {4}));
  EXPECT_EQ(at(x, {1, -2}), Tensor::scalar<int64_t>(6));
  EXPECT_EQ(at(x, {Slice{}, 1}), vec({1, 5, 9}, {3}));        // x[:, 1]
  EXPECT_EQ(at(x, {ellipsis, 1}), vec({1, 5, 9}, {3}));       // x[..., 1]
  EXPECT_EQ(at(x, {newaxis, 0}), vec({0, 1, 2, 3}, {1, 4}));  // x[None, 0]
  EXPECT_EQ(at(x, {0, ellipsis, newaxis}), vec({0, 1, 2, 3}, {4, 1}));
  EXPECT_EQ(at(x, {Slice{1, {}}, Slice{{}, {}, 2}}), vec({4, 6, 8, 10}, {2, 2}));
  EXPECT_EQ(at(x, {Slice{2, 0}, ellipsis}).shape(), (Shape{0, 4}));
  EXPECT_EQ(at(x, {}), x);
}

TEST(GetItemTest, BooleanMask) {
  const Tensor x = iota({3, 2});
  Tensor mask = Tensor::from_vector<bool>({true, false, true}, {3});
  EXPECT_EQ(at(x, {mask}), vec({0, 1, 4, 5}, {2, 2}));
  Tensor full = Tensor::from_vector<bool>({false, true, true, false, false, true}, {3, 2});
  EXPECT_EQ(at(x, {full}), vec({1, 2, 5}, {3}));
  EXPECT_FALSE(get_item(x, {Tensor::from_vector<bool>({true}, {1})}).ok());
  EXPECT_FALSE(get_item(x, {Tensor::scalar(true)}).ok());
}

TEST(GetItemTest, ErrorsAsTf) {
  const Tensor x = iota({3, 4});
  absl::Status s = get_item(x, {0, 4}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("slice index 4 of dimension 1 out of bounds."));
  EXPECT_THAT(get_item(x, {-4}).status().message(),
              HasSubstr("slice index -4 of dimension 0 out of bounds."));
  EXPECT_THAT(get_item(x, {Slice{{}, {}, 0}}).status().message(),
              HasSubstr("slice step cannot be zero"));
  EXPECT_THAT(get_item(x, {ellipsis, 0, ellipsis}).status().message(),
              HasSubstr("Multiple ellipses in slice spec not allowed"));
  EXPECT_THAT(get_item(x, {0, 0, 0}).status().message(), HasSubstr("Index out of range"));
  EXPECT_THAT(get_item(x, {0, Tensor::scalar<int64_t>(1)}).status().message(),
              HasSubstr("using Tensor for indexing is not allowed"));
  EXPECT_THAT(get_item(x, {Tensor::scalar<int64_t>(1)}).status().message(),
              HasSubstr("using Tensor for indexing is not allowed"));
}

TEST(GetItemTest, StringsAndScalars) {
  const Tensor s = Tensor::from_strings({"a", "b", "c"}, {3});
  EXPECT_EQ(at(s, {Slice{{}, {}, -2}}), Tensor::from_strings({"c", "a"}, {2}));
  const Tensor scalar = Tensor::scalar(3.5f);
  EXPECT_EQ(at(scalar, {newaxis}), Tensor::from_vector<float>({3.5f}, {1}));
  EXPECT_EQ(at(scalar, {ellipsis}), scalar);
  EXPECT_FALSE(get_item(scalar, {0}).ok());
}

}  // namespace
}  // namespace psflow

// ShardedVariable::get_item (TF's ShardedVariable.__getitem__) against real
// ps processes (LocalCluster, 3 ps): every result equals the same index
// applied to the unsharded value by an independent reference
// implementation of Python's indexing, for hand-picked and random indexes.
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/partitioners.h"
#include "psflow/strategy.h"
#include "psflow/tensor_index.h"
#include "psflow/variable.h"
#include "suite_cluster.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

// ---- The reference: Python's rules, written independently. ----

// CPython's slice.indices(length), then range(start, stop, step).
std::optional<std::vector<int64_t>> python_range(const Slice& s, int64_t length) {
  const int64_t step = s.step.value_or(1);
  if (step == 0) return std::nullopt;
  const int64_t lower = step < 0 ? -1 : 0;
  const int64_t upper = step < 0 ? length - 1 : length;
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v.has_value()) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += length;
      if (x < lower) x = lower;
    } else if (x > upper) {
      x = upper;
    }
    return x;
  };
  const int64_t start = clamp(s.start, step < 0 ? upper : lower);
  const int64_t stop = clamp(s.stop, step < 0 ? lower : upper);
  std::vector<int64_t> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(i);
  return out;
}

std::string describe(const std::vector<TensorIndex>& index) {
  std::string out = "[";
  for (const TensorIndex& i : index) {
    const auto& v = i.value();
    if (std::holds_alternative<int64_t>(v)) {
      absl::StrAppend(&out, std::get<int64_t>(v));
    } else if (std::holds_alternative<Slice>(v)) {
      const Slice& s = std::get<Slice>(v);
      auto b = [](std::optional<int64_t> x) { return x ? absl::StrCat(*x) : std::string(); };
      absl::StrAppend(&out, b(s.start), ":", b(s.stop), ":", b(s.step));
    } else if (std::holds_alternative<NewAxis>(v)) {
      absl::StrAppend(&out, "newaxis");
    } else if (std::holds_alternative<Ellipsis>(v)) {
      absl::StrAppend(&out, "...");
    } else {
      absl::StrAppend(&out, "mask");
    }
    absl::StrAppend(&out, ", ");
  }
  return out + "]";
}

// x[index] for a float tensor, or nullopt where Python/TF raise.
std::optional<Tensor> reference(const Tensor& x, const std::vector<TensorIndex>& index) {
  // Expand the ellipsis (or append one) into full slices.
  int consuming = 0, ellipses = 0;
  for (const TensorIndex& i : index) {
    consuming +=
        std::holds_alternative<int64_t>(i.value()) || std::holds_alternative<Slice>(i.value());
    ellipses += std::holds_alternative<Ellipsis>(i.value());
  }
  if (ellipses > 1 || consuming > x.rank()) return std::nullopt;
  std::vector<TensorIndex> full;
  bool expanded = false;
  for (const TensorIndex& i : index) {
    if (std::holds_alternative<Ellipsis>(i.value())) {
      for (int k = 0; k < x.rank() - consuming; ++k) full.emplace_back(Slice{});
      expanded = true;
    } else {
      full.push_back(i);
    }
  }
  if (!expanded) {
    for (int k = 0; k < x.rank() - consuming; ++k) full.emplace_back(Slice{});
  }
  // Per element: the input axis and positions (integers drop their axis).
  struct Step {
    int axis;  // -1: new axis
    std::vector<int64_t> positions;
    bool keep;
  };
  std::vector<Step> steps;
  int axis = 0;
  for (const TensorIndex& i : full) {
    if (std::holds_alternative<NewAxis>(i.value())) {
      steps.push_back({-1, {0}, true});
      continue;
    }
    const int64_t n = x.dim(axis);
    if (std::holds_alternative<int64_t>(i.value())) {
      int64_t p = std::get<int64_t>(i.value());
      if (p < -n || p >= n) return std::nullopt;
      if (p < 0) p += n;
      steps.push_back({axis++, {p}, false});
    } else {
      auto r = python_range(std::get<Slice>(i.value()), n);
      if (!r) return std::nullopt;
      steps.push_back({axis++, *r, true});
    }
  }
  Shape shape;
  for (const Step& s : steps) {
    if (s.keep) shape.push_back(static_cast<int64_t>(s.positions.size()));
  }
  std::vector<float> values;
  const auto flat = x.flat<float>();
  std::vector<int64_t> coord(static_cast<size_t>(x.rank()), 0);
  std::function<void(size_t)> walk = [&](size_t k) {
    if (k == steps.size()) {
      int64_t offset = 0;
      for (int d = 0; d < x.rank(); ++d) offset = offset * x.dim(d) + coord[static_cast<size_t>(d)];
      values.push_back(flat[static_cast<size_t>(offset)]);
      return;
    }
    for (int64_t p : steps[k].positions) {
      if (steps[k].axis >= 0) coord[static_cast<size_t>(steps[k].axis)] = p;
      walk(k + 1);
    }
  };
  walk(0);
  // from_vector reads an empty shape as "1-D".
  if (shape.empty()) return Tensor::scalar(values[0]);
  return Tensor::from_vector(values, shape);
}

// ---- The cluster. ----

class ShardedSlicingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { start_suite_cluster(cluster_, 3, 1, PSFLOW_BINARY_PATH); }
  static void TearDownTestSuite() { stop_suite_cluster(cluster_); }
  void SetUp() override { ASSERT_NE(cluster_, nullptr); }

  // A variable of `value` split into `shards` parts (TF's div layout).
  static ShardedVariable sharded(const Tensor& value, int shards, const std::string& name) {
    auto strategy = ok_value(
        ParameterServerStrategy::create(SimpleClusterResolver(cluster_->cluster_spec(), "chief", 0),
                                        ok_value(fixed_shards_partitioner(shards))));
    StrategyScope scope = strategy->scope();
    return ok_value(create_variable(value, {.name = name}));
  }

  static LocalCluster* cluster_;
};

LocalCluster* ShardedSlicingTest::cluster_ = nullptr;

Tensor iota(Shape shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return Tensor::from_vector(v, std::move(shape));
}

void expect_matches(const ShardedVariable& v, const Tensor& full,
                    const std::vector<TensorIndex>& index) {
  const std::optional<Tensor> want = reference(full, index);
  const absl::StatusOr<Tensor> got = v.get_item(index);
  const absl::StatusOr<Tensor> dense = get_item(full, index);
  if (!want.has_value()) {
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << describe(index);
    EXPECT_EQ(dense.status().code(), absl::StatusCode::kInvalidArgument) << describe(index);
    return;
  }
  ASSERT_TRUE(got.ok()) << describe(index) << ": " << got.status();
  EXPECT_EQ(*got, *want) << describe(index);
  ASSERT_TRUE(dense.ok()) << describe(index) << ": " << dense.status();
  EXPECT_EQ(*dense, *want) << describe(index);
}

// TF's _decompose_slice_spec examples: parts [0,1,2], [3,4,5], [6,7,8,9]
// (a 10-row variable in 3 parts of TF's div layout is 4/3/3; the values
// are what matter).
TEST_F(ShardedSlicingTest, TfDocstringExamples) {
  const Tensor full = iota({10});
  ShardedVariable v = sharded(full, 3, "doc");
  ASSERT_EQ(v.num_parts(), 3u);
  EXPECT_EQ(ok_value(v.get_item({Slice{}})), full);
  EXPECT_EQ(ok_value(v.get_item({Slice{2, 8, 3}})), Tensor::from_vector<float>({2, 5}, {2}));
  EXPECT_EQ(ok_value(v.get_item({Slice{9, 3, -2}})), Tensor::from_vector<float>({9, 7, 5}, {3}));
  EXPECT_EQ(ok_value(v.get_item({-1})), Tensor::scalar(9.0f));
  EXPECT_EQ(ok_value(v.get_item({Slice{7, 2}})).shape(), Shape{0});
}

TEST_F(ShardedSlicingTest, ColumnsNewAxesEllipsisAndMasks) {
  const Tensor full = iota({7, 3});
  ShardedVariable v = sharded(full, 3, "cols");
  for (const std::vector<TensorIndex>& index : std::vector<std::vector<TensorIndex>>{
           {Slice{}, 1},                       // v[:, 1]
           {ellipsis, -1},                     // v[..., -1]
           {Slice{{}, {}, -2}, Slice{1, {}}},  // v[::-2, 1:]
           {newaxis, Slice{2, 6}},             // v[None, 2:6]
           {Slice{1, 5}, newaxis, 2},          // v[1:5, None, 2]
           {ellipsis, newaxis},                // v[..., None]
           {3, ellipsis},                      // v[3, ...]
           {-7},                               // v[-7]
           {Slice{5, 1, -1}, Slice{{}, {}, -1}},
       }) {
    expect_matches(v, full, index);
  }
  Tensor mask = Tensor::from_vector<bool>({true, false, false, true, true, false, true}, {7});
  EXPECT_EQ(ok_value(v.get_item({mask})), ok_value(get_item(full, {mask})));
  EXPECT_EQ(ok_value(v.get_item({mask})).shape(), (Shape{4, 3}));
}

TEST_F(ShardedSlicingTest, OutOfRangeIntegersAreRefusedAsTf) {
  ShardedVariable v = sharded(iota({7, 3}), 3, "oob");
  absl::Status s = v.get_item({7}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(),
              HasSubstr("ShardedVariable: slice index 7 of dimension 0 out of bounds."));
  EXPECT_THAT(v.get_item({-8}).status().message(),
              HasSubstr("slice index -8 of dimension 0 out of bounds."));
  EXPECT_THAT(v.get_item({0, 3}).status().message(),
              HasSubstr("slice index 3 of dimension 1 out of bounds."));
  EXPECT_THAT(v.get_item({Slice{{}, {}, 0}}).status().message(),
              HasSubstr("slice step cannot be zero"));
  EXPECT_THAT(v.get_item({Tensor::scalar<int64_t>(1)}).status().message(),
              HasSubstr("using Tensor for indexing is not allowed"));
  // The variable is untouched and still readable.
  EXPECT_EQ(ok_value(v.read_value()), iota({7, 3}));
}

// Random indexes over a rank-3 variable in 4 uneven parts and a rank-1
// variable in 3: each equal to the reference on the unsharded value (or
// refused where Python raises).
TEST_F(ShardedSlicingTest, RandomIndexesMatchTheUnshardedTensor) {
  std::mt19937 rng(20240518);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  for (const Shape& shape : {Shape{11, 3, 4}, Shape{7}}) {
    const Tensor full = iota(shape);
    ShardedVariable v =
        sharded(full, shape.size() == 3 ? 4 : 3, absl::StrCat("random", shape.size()));
    ASSERT_GT(v.num_parts(), 1u);
    const int64_t big = 13;
    for (int trial = 0; trial < 250; ++trial) {
      std::vector<TensorIndex> index;
      const int64_t elements = uniform(0, 4);
      for (int64_t e = 0; e < elements; ++e) {
        switch (uniform(0, 9)) {
          case 0:
          case 1:
          case 2: index.emplace_back(uniform(-big, big - 1)); break;
          case 3: index.emplace_back(newaxis); break;
          case 4: index.emplace_back(ellipsis); break;
          default: {
            Slice s;
            if (uniform(0, 3) > 0) s.start = uniform(-big, big);
            if (uniform(0, 3) > 0) s.stop = uniform(-big, big);
            if (uniform(0, 2) > 0)
              s.step = uniform(0, 30) == 0 ? 0 : (uniform(0, 1) ? 1 : -1) * uniform(1, 4);
            index.emplace_back(s);
          }
        }
      }
      expect_matches(v, full, index);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

}  // namespace
}  // namespace psflow::internal

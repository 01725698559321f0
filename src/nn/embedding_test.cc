#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nn/test_util.h"
#include "psflow/nn.h"

namespace psflow::nn {
namespace {

using ::psflow::nn::testing::dot;
using ::psflow::nn::testing::expect_gradient_matches;
using ::psflow::nn::testing::random_tensor;
using ::testing::HasSubstr;

// Scatter-adds a sparse gradient into a dense [vocab, dim] tensor.
Tensor densify(const SparseGradient& g, int64_t vocab) {
  Tensor dense(DType::kFloat64, {vocab, g.values.dim(1)});
  auto d = dense.mutable_matrix<double>();
  const auto v = g.values.matrix<double>();
  const auto idx = g.indices.flat<int64_t>();
  for (size_t i = 0; i < idx.size(); ++i) d.row(idx[i]) += v.row(i);
  return dense;
}

TEST(UniqueIdsTest, FirstOccurrenceOrderAndShape) {
  absl::StatusOr<UniqueIds> u =
      unique_ids(Tensor::from_vector<int32_t>({5, 3, 5, 7, 3, 5}, {2, 3}));
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->values, Tensor::from_vector<int64_t>({5, 3, 7}, {3}));
  EXPECT_EQ(u->index, Tensor::from_vector<int64_t>({0, 1, 0, 2, 1, 0}, {2, 3}));

  u = unique_ids(Tensor(DType::kInt64, {0}));
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->values.shape(), (Shape{0}));
  EXPECT_EQ(unique_ids(Tensor(DType::kFloat32, {2})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(EmbeddingLookupTest, GathersRows) {
  const Tensor params = Tensor::from_vector<float>({0, 1, 10, 11, 20, 21}, {3, 2});
  absl::StatusOr<Tensor> out =
      embedding_lookup(params, Tensor::from_vector<int64_t>({2, 0, 2, 1}, {2, 2}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out, Tensor::from_vector<float>({20, 21, 0, 1, 20, 21, 10, 11}, {2, 2, 2}));

  // The worker's path: pull the unique rows, look up by local position.
  const Tensor ids = Tensor::from_vector<int64_t>({2, 0, 2, 1}, {2, 2});
  absl::StatusOr<UniqueIds> u = unique_ids(ids);
  ASSERT_TRUE(u.ok());
  absl::StatusOr<Tensor> pulled = embedding_lookup(params, u->values);
  ASSERT_TRUE(pulled.ok());
  absl::StatusOr<Tensor> via_unique = embedding_lookup(*pulled, u->index);
  ASSERT_TRUE(via_unique.ok());
  EXPECT_EQ(*via_unique, *out);
}

TEST(EmbeddingLookupTest, RejectsOutOfRangeIds) {
  const Tensor params(DType::kFloat32, {3, 2});
  absl::StatusOr<Tensor> out = embedding_lookup(params, Tensor::from_vector<int32_t>({0, 3}, {2}));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()),
              HasSubstr("'ids' has value 3 at flat index 1, expected an id in [0, 3)"));
  out = embedding_lookup(params, Tensor::from_vector<int64_t>({-1}, {1}));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = embedding_lookup(Tensor(DType::kFloat32, {3}), Tensor::from_vector<int64_t>({0}, {1}));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(EmbeddingBackwardTest, SumsDuplicateIds) {
  const Tensor ids = Tensor::from_vector<int64_t>({7, 3, 7, 7}, {2, 2});
  const Tensor d_out = Tensor::from_vector<float>({1, 2, 10, 20, 100, 200, 1000, 2000}, {2, 2, 2});
  absl::StatusOr<SparseGradient> g = embedding_backward(ids, d_out);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->indices, Tensor::from_vector<int64_t>({7, 3}, {2}));
  EXPECT_EQ(g->values, Tensor::from_vector<float>({1101, 2202, 10, 20}, {2, 2}));
}

TEST(EmbeddingBackwardTest, GradientMatchesFiniteDifferences) {
  constexpr int64_t kVocab = 6;
  const Tensor params = random_tensor({kVocab, 3}, 31);
  const Tensor ids = Tensor::from_vector<int32_t>({4, 1, 4, 0, 4, 1}, {2, 3});
  const Tensor r = random_tensor({2, 3, 3}, 32);
  absl::StatusOr<SparseGradient> g = embedding_backward(ids, r);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->indices.num_elements(), 3);
  expect_gradient_matches([&](const Tensor& p) { return dot(*embedding_lookup(p, ids), r); },
                          params, densify(*g, kVocab), "embedding table gradient");
}

TEST(EmbeddingBackwardTest, RejectsMismatchedShapes) {
  const Tensor ids = Tensor::from_vector<int64_t>({1, 2, 3}, {3});
  absl::StatusOr<SparseGradient> g = embedding_backward(ids, Tensor(DType::kFloat32, {2, 4}));
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(g.status().message()),
              HasSubstr("'d_out' has shape [2, 4], expected [3, 4]"));
  g = embedding_backward(ids, Tensor(DType::kFloat32, {3}));
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("trailing embedding dimension"));
  g = embedding_backward(Tensor::from_vector<float>({1}, {1}), Tensor(DType::kFloat32, {1, 4}));
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(g.status().message()), HasSubstr("expected dtype int32 or int64"));
}

TEST(EmbeddingCombineTest, SumAndMeanKnownValues) {
  // Two bags of two 2-d embeddings.
  const Tensor e = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  absl::StatusOr<Tensor> sum = embedding_combine(e, Combiner::kSum);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(*sum, Tensor::from_vector<float>({4, 6, 12, 14}, {2, 2}));
  absl::StatusOr<Tensor> mean = embedding_combine(e, Combiner::kMean);
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_EQ(*mean, Tensor::from_vector<float>({2, 3, 6, 7}, {2, 2}));

  // Weight 0 pads: bag 0 has one real entry, bag 1 none (a zero row).
  const Tensor w = Tensor::from_vector<float>({1, 0, 0, 0}, {2, 2});
  mean = embedding_combine(e, Combiner::kMean, w);
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_EQ(*mean, Tensor::from_vector<float>({1, 2, 0, 0}, {2, 2}));
  absl::StatusOr<Tensor> back = embedding_combine_backward(
      Tensor::from_vector<float>({1, 1, 1, 1}, {2, 2}), 2, Combiner::kMean, w);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, Tensor::from_vector<float>({1, 1, 0, 0, 0, 0, 0, 0}, {2, 2, 2}));
}

TEST(EmbeddingCombineTest, GradientsMatchFiniteDifferences) {
  const Tensor e = random_tensor({3, 4, 2}, 41);
  const Tensor r = random_tensor({3, 2}, 42);
  const Tensor w = Tensor::from_vector<double>({1, 0.5, 0, 2, 0, 0, 0, 0, 3, 1, 1, 1}, {3, 4});
  for (const Combiner c : {Combiner::kSum, Combiner::kMean}) {
    for (const Tensor& weights : {Tensor(), w}) {
      const std::string what = absl::StrCat(c == Combiner::kSum ? "sum" : "mean",
                                            weights.valid() ? " weighted" : " unweighted");
      absl::StatusOr<Tensor> de = embedding_combine_backward(r, 4, c, weights);
      ASSERT_TRUE(de.ok()) << de.status();
      expect_gradient_matches(
          [&](const Tensor& p) { return dot(*embedding_combine(p, c, weights), r); }, e, *de, what);
    }
  }
}

TEST(EmbeddingCombineTest, RejectsBadInput) {
  const Tensor e(DType::kFloat32, {2, 3, 4});
  absl::StatusOr<Tensor> out =
      embedding_combine(e, Combiner::kSum, Tensor(DType::kFloat32, {2, 2}));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()),
              HasSubstr("'weights' has shape [2, 2], expected [2, 3]"));
  out = embedding_combine(e, Combiner::kMean,
                          Tensor::from_vector<float>({1, 1, -1, 1, 1, 1}, {2, 3}));
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()),
              HasSubstr("'weights' has value -1 at flat index 2"));
  out = embedding_combine(Tensor(DType::kFloat32, {2, 3}), Combiner::kSum);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  out = embedding_combine_backward(Tensor(DType::kFloat32, {2, 4}), -1, Combiner::kSum);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(out.status().message()), HasSubstr("'bag_size' is -1"));
}

}  // namespace
}  // namespace psflow::nn

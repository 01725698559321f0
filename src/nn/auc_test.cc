#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/nn.h"

namespace psflow::nn {
namespace {

using ::testing::HasSubstr;

std::string message(const absl::Status& s) { return std::string(s.message()); }

Tensor f32(std::vector<float> v) { return Tensor::from_vector(v); }

// Exact ROC AUC: the probability that a random positive scores above a
// random negative, ties counting one half (Mann-Whitney U).
double exact_auc(const std::vector<float>& labels, const std::vector<float>& scores) {
  double wins = 0, pairs = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    for (size_t j = 0; j < labels.size(); ++j) {
      if (labels[i] != 1 || labels[j] != 0) continue;
      pairs += 1;
      wins += scores[i] > scores[j] ? 1.0 : (scores[i] == scores[j] ? 0.5 : 0.0);
    }
  }
  return wins / pairs;
}

TEST(AucTest, KerasDocumentedExample) {
  // keras.metrics.AUC(num_thresholds=3) on these gives 0.75.
  absl::StatusOr<AUC> auc = AUC::create(3);
  ASSERT_TRUE(auc.ok()) << auc.status();
  ASSERT_TRUE(auc->update(f32({0, 0, 1, 1}), f32({0, 0.5f, 0.3f, 0.9f})).ok());
  EXPECT_DOUBLE_EQ(auc->result(), 0.75);
}

TEST(AucTest, PerfectReversedAndRandomRankings) {
  AUC perfect, reversed;
  ASSERT_TRUE(
      perfect.update(f32({0, 0, 1, 1, 0, 1}), f32({0.1f, 0.3f, 0.7f, 0.9f, 0.2f, 0.8f})).ok());
  EXPECT_DOUBLE_EQ(perfect.result(), 1.0);
  ASSERT_TRUE(
      reversed.update(f32({1, 1, 0, 0, 1, 0}), f32({0.1f, 0.3f, 0.7f, 0.9f, 0.2f, 0.8f})).ok());
  EXPECT_DOUBLE_EQ(reversed.result(), 0.0);
  // Extremes land in the outermost buckets, still perfectly separated.
  AUC extremes;
  ASSERT_TRUE(extremes.update(f32({0, 1}), f32({0, 1})).ok());
  EXPECT_DOUBLE_EQ(extremes.result(), 1.0);

  std::mt19937_64 gen(1234);
  std::uniform_real_distribution<float> score(0, 1);
  std::vector<float> labels, scores;
  for (int i = 0; i < 20000; ++i) {
    labels.push_back(static_cast<float>(gen() & 1));
    scores.push_back(score(gen));
  }
  AUC random;
  ASSERT_TRUE(random.update(f32(labels), f32(scores)).ok());
  EXPECT_NEAR(random.result(), 0.5, 0.02);
}

TEST(AucTest, ApproximatesExactAucWithManyThresholds) {
  std::mt19937_64 gen(99);
  std::normal_distribution<float> noise(0, 1);
  std::vector<float> labels, scores;
  for (int i = 0; i < 600; ++i) {
    const float label = static_cast<float>(i % 3 == 0);
    labels.push_back(label);
    // Informative but noisy scores squashed into (0, 1).
    const float z = label + noise(gen);
    scores.push_back(1 / (1 + std::exp(-z)));
  }
  absl::StatusOr<AUC> auc = AUC::create(1000);
  ASSERT_TRUE(auc.ok());
  ASSERT_TRUE(auc->update(f32(labels), f32(scores)).ok());
  const double exact = exact_auc(labels, scores);
  EXPECT_GT(exact, 0.6);
  EXPECT_NEAR(auc->result(), exact, 2e-3);
}

TEST(AucTest, NoPositivesOrNoNegativesGivesZero) {
  AUC auc;
  EXPECT_EQ(auc.result(), 0.0);
  ASSERT_TRUE(auc.update(f32({1, 1}), f32({0.2f, 0.9f})).ok());
  EXPECT_EQ(auc.result(), 0.0);
}

TEST(AucTest, MergeOfPartialsEqualsOneMetric) {
  const std::vector<float> labels = {0, 1, 1, 0, 1, 0, 0, 1, 1, 0};
  const std::vector<float> scores = {0.1f, 0.4f, 0.35f, 0.8f, 0.9f, 0.05f, 0.5f, 0.65f, 0.2f, 0.3f};
  AUC whole, a, b;
  ASSERT_TRUE(whole.update(f32(labels), f32(scores)).ok());
  ASSERT_TRUE(
      a.update(f32({labels.begin(), labels.begin() + 4}), f32({scores.begin(), scores.begin() + 4}))
          .ok());
  ASSERT_TRUE(
      b.update(f32({labels.begin() + 4, labels.end()}), f32({scores.begin() + 4, scores.end()}))
          .ok());
  absl::StatusOr<AUC> a2 = AUC::from_structure(a.to_structure());
  absl::StatusOr<AUC> b2 = AUC::from_structure(b.to_structure());
  ASSERT_TRUE(a2.ok()) << a2.status();
  ASSERT_TRUE(b2.ok()) << b2.status();
  AUC merged;
  ASSERT_TRUE(merged.merge(*a2).ok());
  ASSERT_TRUE(merged.merge(*b2).ok());
  EXPECT_EQ(merged.to_structure(), whole.to_structure());
  EXPECT_DOUBLE_EQ(merged.result(), whole.result());
  EXPECT_NEAR(whole.result(), exact_auc(labels, scores), 1e-12);

  merged.reset();
  EXPECT_EQ(merged.result(), 0.0);
  EXPECT_EQ(merged.num_thresholds(), AUC::kDefaultThresholds);

  absl::StatusOr<AUC> coarse = AUC::create(10);
  ASSERT_TRUE(coarse.ok());
  absl::Status s = merged.merge(*coarse);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message(s), HasSubstr("num_thresholds 10, expected 200"));
}

TEST(AucTest, RejectsBadInput) {
  AUC auc;
  absl::Status s = auc.update(f32({0, 1}), f32({0.5f, 1.5f}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message(s), HasSubstr("'predictions' has value 1.5 at flat index 1, "
                                    "expected a probability in [0, 1]"));
  s = auc.update(f32({0, 2}), f32({0.5f, 0.5f}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message(s), HasSubstr("'labels' has value 2"));
  s = auc.update(f32({0, 1}), Tensor::from_vector<int32_t>({0, 1}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(auc.to_structure(), AUC().to_structure());  // unchanged

  EXPECT_EQ(AUC::create(1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message(AUC::create(1).status()),
              HasSubstr("'num_thresholds' is 1, expected an int in [2, "));
  EXPECT_EQ(AUC::create(AUC::kMaxThresholds + 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AucTest, FromStructureValidatesUntrustedState) {
  const auto state = [](Structure n, Structure pos, Structure neg) {
    return Structure::dict({{"metric", "auc"},
                            {"num_thresholds", std::move(n)},
                            {"positives", std::move(pos)},
                            {"negatives", std::move(neg)}});
  };
  const Tensor ok = Tensor::from_vector<int64_t>({1, 0, 2});
  ASSERT_TRUE(AUC::from_structure(state(4, ok, ok)).ok());

  const struct {
    Structure input;
    std::string error;
  } cases[] = {
      {state(1, ok, ok), "'num_thresholds' is 1"},
      {state(int64_t{1} << 40, ok, ok), "'num_thresholds' is 1099511627776"},
      {state(4.0, ok, ok), "'num_thresholds' is 4.0, expected an int"},
      {state(5, ok, ok), "'positives' is a int64 tensor of shape [3], expected int64 [4]"},
      {state(4, Tensor::from_vector<int32_t>({1, 0, 2}), ok), "'positives' is a int32"},
      {state(4, ok, Tensor::from_vector<int64_t>({1, -5, 2})),
       "'negatives' has count -5 at bucket 1"},
      {state(4, ok, 3), "'negatives' is 3, expected an int64 tensor [3]"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<AUC> r = AUC::from_structure(c.input);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.input;
    EXPECT_THAT(message(r.status()), HasSubstr(c.error)) << c.input;
  }
}

}  // namespace
}  // namespace psflow::nn

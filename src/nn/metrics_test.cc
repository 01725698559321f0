#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/nn.h"

namespace psflow::nn {
namespace {

using ::testing::HasSubstr;

std::string message(const absl::Status& s) { return std::string(s.message()); }

TEST(MeanTest, UpdateResultReset) {
  Mean m;
  EXPECT_EQ(m.result(), 0.0);
  ASSERT_TRUE(m.update(1.0).ok());
  ASSERT_TRUE(m.update(2.0).ok());
  ASSERT_TRUE(m.update(6.0, 2.0).ok());
  EXPECT_DOUBLE_EQ(m.result(), 15.0 / 4.0);
  ASSERT_TRUE(m.update(Tensor::from_vector<float>({1, 2, 3, 3}, {2, 2})).ok());
  EXPECT_DOUBLE_EQ(m.result(), 24.0 / 8.0);
  m.reset();
  EXPECT_EQ(m.result(), 0.0);

  absl::Status s = m.update(1.0, -1.0);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message(s), HasSubstr("'weight' is -1"));
  EXPECT_EQ(m.update(Tensor::from_vector<int32_t>({1}, {1})).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.result(), 0.0);  // failed updates change nothing
}

TEST(MeanTest, MergeOfPartialsEqualsOneMetric) {
  Mean whole, a, b;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(whole.update(i).ok());
    ASSERT_TRUE((i % 3 == 0 ? a : b).update(i).ok());
  }
  // The coordinator's path: partial states travel as Structures.
  absl::StatusOr<Mean> a2 = Mean::from_structure(a.to_structure());
  absl::StatusOr<Mean> b2 = Mean::from_structure(b.to_structure());
  ASSERT_TRUE(a2.ok()) << a2.status();
  ASSERT_TRUE(b2.ok()) << b2.status();
  Mean merged;
  ASSERT_TRUE(merged.merge(*a2).ok());
  ASSERT_TRUE(merged.merge(*b2).ok());
  EXPECT_DOUBLE_EQ(merged.result(), whole.result());
  EXPECT_EQ(merged.to_structure(), whole.to_structure());
  // Merging into itself doubles the state without deadlocking.
  ASSERT_TRUE(merged.merge(merged).ok());
  EXPECT_DOUBLE_EQ(merged.result(), whole.result());
}

TEST(MeanTest, RoundTripsAndValidatesStructure) {
  Mean m;
  ASSERT_TRUE(m.update(3.0, 2.0).ok());
  const Structure s = m.to_structure();
  EXPECT_EQ(s, Structure::dict({{"metric", "mean"}, {"total", 6.0}, {"count", 2.0}}));
  absl::StatusOr<Mean> back = Mean::from_structure(s);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->result(), 3.0);

  const struct {
    Structure input;
    std::string error;
  } cases[] = {
      {Structure(3), "got kind 'int', expected a dict with keys {'metric', 'total', 'count'}"},
      {Structure::dict({{"metric", "mean"}, {"total", 1.0}}), "missing key 'count'"},
      {Structure::dict({{"metric", "mean"}, {"total", 1.0}, {"count", 1.0}, {"x", 1}}),
       "unexpected key 'x'"},
      {Structure::dict({{"metric", "auc"}, {"total", 1.0}, {"count", 1.0}}),
       "'metric' is 'auc', expected 'mean'"},
      {Structure::dict({{"metric", "mean"}, {"total", 1.0}, {"count", -1.0}}), "'count' is -1"},
      {Structure::dict({{"metric", "mean"}, {"total", 1}, {"count", 1.0}}),
       "'total' is 1, expected a float"},
      {Structure::dict({{"metric", "mean"},
                        {"total", 1.0},
                        {"count", std::numeric_limits<double>::infinity()}}),
       "expected a finite float"},
  };
  for (const auto& c : cases) {
    absl::StatusOr<Mean> r = Mean::from_structure(c.input);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.input;
    EXPECT_THAT(message(r.status()), HasSubstr(c.error)) << c.input;
  }
}

TEST(MeanTest, ConcurrentUpdatesAreAllCounted) {
  Mean m;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&m] {
      for (int i = 0; i < 1000; ++i) ASSERT_TRUE(m.update(2.0).ok());
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(m.to_structure()["count"].float_value(), 4000.0);
  EXPECT_EQ(m.result(), 2.0);
}

TEST(SparseCategoricalAccuracyTest, CountsArgmaxHits) {
  SparseCategoricalAccuracy acc;
  const Tensor predictions = Tensor::from_vector<float>({0.1f, 0.8f, 0.1f,   // argmax 1
                                                         0.5f, 0.2f, 0.3f,   // argmax 0
                                                         0.3f, 0.3f, 0.4f,   // argmax 2
                                                         0.4f, 0.4f, 0.2f},  // tie: argmax 0
                                                        {4, 3});
  ASSERT_TRUE(acc.update(Tensor::from_vector<int32_t>({1, 0, 1, 0}, {4}), predictions).ok());
  EXPECT_DOUBLE_EQ(acc.result(), 0.75);
  ASSERT_TRUE(acc.update(Tensor::from_vector<uint8_t>({2, 2, 2, 2}, {4, 1}), predictions).ok());
  EXPECT_DOUBLE_EQ(acc.result(), 4.0 / 8.0);

  absl::Status s = acc.update(Tensor::from_vector<int64_t>({1, 0, 3, 0}, {4}), predictions);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message(s),
              HasSubstr("'labels' has value 3 at index 2, expected a class id in [0, 3)"));
  s = acc.update(Tensor::from_vector<int64_t>({1, 0}, {2}), predictions);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message(s), HasSubstr("expected [4] or [4, 1]"));
  s = acc.update(Tensor::from_vector<float>({1, 0, 1, 0}, {4}), predictions);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_DOUBLE_EQ(acc.result(), 0.5);  // failed updates change nothing
}

TEST(SparseCategoricalAccuracyTest, MergeRoundTripAndValidation) {
  SparseCategoricalAccuracy a, b;
  const Tensor p = Tensor::from_vector<double>({1, 0, 0, 1}, {2, 2});
  ASSERT_TRUE(a.update(Tensor::from_vector<int32_t>({0, 1}, {2}), p).ok());
  ASSERT_TRUE(b.update(Tensor::from_vector<int32_t>({1, 1}, {2}), p).ok());
  absl::StatusOr<SparseCategoricalAccuracy> b2 =
      SparseCategoricalAccuracy::from_structure(b.to_structure());
  ASSERT_TRUE(b2.ok()) << b2.status();
  ASSERT_TRUE(a.merge(*b2).ok());
  EXPECT_DOUBLE_EQ(a.result(), 0.75);
  EXPECT_EQ(
      a.to_structure(),
      Structure::dict({{"metric", "sparse_categorical_accuracy"}, {"correct", 3}, {"count", 4}}));

  absl::StatusOr<SparseCategoricalAccuracy> bad = SparseCategoricalAccuracy::from_structure(
      Structure::dict({{"metric", "sparse_categorical_accuracy"}, {"correct", 5}, {"count", 4}}));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message(bad.status()), HasSubstr("'correct' is 5, expected at most 'count' (4)"));
  bad = SparseCategoricalAccuracy::from_structure(
      Structure::dict({{"metric", "sparse_categorical_accuracy"}, {"correct", -1}, {"count", 4}}));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message(bad.status()), HasSubstr("'correct' is -1, expected an int >= 0"));
}

TEST(SparseCategoricalAccuracyTest, MergeOverflowIsAnErrorAndChangesNothing) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  absl::StatusOr<SparseCategoricalAccuracy> big = SparseCategoricalAccuracy::from_structure(
      Structure::dict({{"metric", "sparse_categorical_accuracy"}, {"correct", 0}, {"count", max}}));
  ASSERT_TRUE(big.ok()) << big.status();
  SparseCategoricalAccuracy one;
  ASSERT_TRUE(
      one.update(Tensor::from_vector<int32_t>({0}, {1}), Tensor::from_vector<float>({1, 0}, {1, 2}))
          .ok());
  absl::Status s = big->merge(one);
  EXPECT_EQ(s.code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(big->to_structure()["correct"].int_value(), 0);
  EXPECT_EQ(big->to_structure()["count"].int_value(), max);
}

TEST(BinaryAccuracyTest, ThresholdsPredictions) {
  BinaryAccuracy acc;
  ASSERT_TRUE(acc.update(Tensor::from_vector<float>({1, 0, 1, 0}, {4}),
                         Tensor::from_vector<float>({0.9f, 0.6f, 0.5f, 0.1f}, {4}))
                  .ok());
  // 0.9 -> 1 right, 0.6 -> 1 wrong, 0.5 -> 0 (not > 0.5) wrong, 0.1 -> 0 right.
  EXPECT_DOUBLE_EQ(acc.result(), 0.5);

  BinaryAccuracy strict(0.7);
  ASSERT_TRUE(strict
                  .update(Tensor::from_vector<uint8_t>({1, 0, 0}, {3, 1}),
                          Tensor::from_vector<double>({0.9, 0.6, 0.8}, {3}))
                  .ok());
  EXPECT_DOUBLE_EQ(strict.result(), 2.0 / 3.0);
  ASSERT_TRUE(strict
                  .update(Tensor::from_vector<bool>({true, false}, {2}),
                          Tensor::from_vector<double>({0.71, 0.7}, {2}))
                  .ok());
  EXPECT_DOUBLE_EQ(strict.result(), 4.0 / 5.0);

  absl::Status s = acc.update(Tensor::from_vector<float>({1, 0.5f}, {2}),
                              Tensor::from_vector<float>({1, 1}, {2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message(s), HasSubstr("'labels' has value 0.5 at flat index 1, expected 0 or 1"));
  s = acc.update(Tensor::from_vector<int32_t>({1, 2}, {2}),
                 Tensor::from_vector<float>({1, 1}, {2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  s = acc.update(Tensor::from_vector<float>({1, 0, 1}, {3}),
                 Tensor::from_vector<float>({1, 1}, {2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message(s), HasSubstr("'labels' has shape [3], expected [2]"));
  EXPECT_DOUBLE_EQ(acc.result(), 0.5);
}

TEST(BinaryAccuracyTest, MergeRoundTripAndValidation) {
  BinaryAccuracy a(0.3), b(0.3), other(0.5);
  ASSERT_TRUE(
      a.update(Tensor::from_vector<float>({1}, {1}), Tensor::from_vector<float>({0.4f}, {1})).ok());
  ASSERT_TRUE(
      b.update(Tensor::from_vector<float>({1}, {1}), Tensor::from_vector<float>({0.2f}, {1})).ok());
  absl::StatusOr<BinaryAccuracy> b2 = BinaryAccuracy::from_structure(b.to_structure());
  ASSERT_TRUE(b2.ok()) << b2.status();
  EXPECT_EQ(b2->threshold(), 0.3);
  ASSERT_TRUE(a.merge(*b2).ok());
  EXPECT_DOUBLE_EQ(a.result(), 0.5);

  absl::Status s = a.merge(other);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message(s), HasSubstr("threshold 0.5, expected 0.3"));
  EXPECT_DOUBLE_EQ(a.result(), 0.5);

  absl::StatusOr<BinaryAccuracy> bad = BinaryAccuracy::from_structure(Structure::dict(
      {{"metric", "binary_accuracy"}, {"threshold", "high"}, {"correct", 0}, {"count", 0}}));
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message(bad.status()), HasSubstr("'threshold' is 'high'"));
}

TEST(MetricsTest, CopiesAreSnapshots) {
  Mean m;
  ASSERT_TRUE(m.update(4.0).ok());
  Mean copy = m;
  ASSERT_TRUE(m.update(0.0).ok());
  EXPECT_EQ(copy.result(), 4.0);
  EXPECT_EQ(m.result(), 2.0);
  copy = m;
  EXPECT_EQ(copy.result(), 2.0);
}

}  // namespace
}  // namespace psflow::nn

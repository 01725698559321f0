#include "data/criteo_generator.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

TEST(CriteoGeneratorTest, SameSeedSameBytesWhateverTheChunks) {
  CriteoGeneratorOptions o;
  o.seed = 5;
  const std::string whole = generate_criteo_rows(o, 0, 3000);
  EXPECT_EQ(whole, generate_criteo_rows(o, 0, 1234) + generate_criteo_rows(o, 1234, 3000));
  EXPECT_EQ(whole, generate_criteo_rows(o, 0, 3000));
  o.seed = 6;
  EXPECT_NE(whole, generate_criteo_rows(o, 0, 3000));
}

TEST(CriteoGeneratorTest, TheReaderReadsEveryGeneratedLine) {
  CriteoGeneratorOptions o;
  o.rows = 5000;
  CriteoData d;
  ASSERT_TRUE(generate_criteo_data(o, d).ok());
  EXPECT_EQ(d.rows(), 5000);
  EXPECT_EQ(d.skipped_lines, 0);
  // Some I2 values are negative, some I1 and C26 values missing.
  int negative = 0;
  int missing_i1 = 0;
  int missing_c26 = 0;
  for (int64_t r = 0; r < d.rows(); ++r) {
    negative += d.dense[r * 13 + 1] < 0 ? 1 : 0;
    missing_c26 += d.keys[r * 26 + 25] == criteo_missing_key(25) ? 1 : 0;
  }
  const std::string text = generate_criteo_rows(o, 0, 5000);
  for (absl::string_view l : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    const std::vector<absl::string_view> f = absl::StrSplit(l, '\t');
    ASSERT_EQ(f.size(), 40u);
    missing_i1 += f[1].empty() ? 1 : 0;
  }
  EXPECT_GT(negative, 100);
  EXPECT_NEAR(missing_i1 / 5000.0, 0.3, 0.03);
  EXPECT_NEAR(missing_c26 / 5000.0, 0.3, 0.03);
}

TEST(CriteoGeneratorTest, CategoricalFrequenciesFollowAPowerLaw) {
  CriteoGeneratorOptions o;
  o.rows = 40000;
  CriteoData d;
  ASSERT_TRUE(generate_criteo_data(o, d).ok());
  // C3 has 100,000 values: count each key's rows, most frequent first.
  std::map<int64_t, int64_t> counts;
  for (int64_t r = 0; r < d.rows(); ++r) ++counts[d.keys[r * 26 + 2]];
  std::vector<int64_t> sorted;
  for (const auto& [key, n] : counts) sorted.push_back(n);
  std::sort(sorted.rbegin(), sorted.rend());
  ASSERT_GT(sorted.size(), 1000u);
  // Zipf with exponent 1.1: the k-th most frequent value has about
  // k^-1.1 of the first's rows, so rank 10 about 1/12.6 and rank 100 about
  // 1/158 of rank 1 (loose bounds: sampled counts).
  const double r10 = static_cast<double>(sorted[0]) / static_cast<double>(sorted[9]);
  const double r100 = static_cast<double>(sorted[0]) / static_cast<double>(sorted[99]);
  EXPECT_GT(r10, 6.0);
  EXPECT_LT(r10, 25.0);
  EXPECT_GT(r100, 60.0);
  EXPECT_LT(r100, 400.0);
  // A long tail: many values seen once.
  EXPECT_GT(std::count(sorted.begin(), sorted.end(), 1), 1000);
  // C9 has 3 values.
  std::map<int64_t, int64_t> c9;
  for (int64_t r = 0; r < d.rows(); ++r) ++c9[d.keys[r * 26 + 8]];
  EXPECT_EQ(c9.size(), 3u);
}

TEST(CriteoGeneratorTest, LabelsCarryALearnableSignal) {
  CriteoGeneratorOptions o;
  o.rows = 20000;
  CriteoData d;
  ASSERT_TRUE(generate_criteo_data(o, d).ok());
  // AUC of the hidden logits by counting concordant pairs via ranks.
  std::vector<std::pair<double, float>> scored;
  for (int64_t r = 0; r < o.rows; ++r) scored.push_back({criteo_true_logit(o, r), d.labels[r]});
  std::sort(scored.begin(), scored.end());
  double positives = 0;
  double rank_sum = 0;
  for (size_t i = 0; i < scored.size(); ++i) {
    if (scored[i].second > 0.5F) {
      positives += 1;
      rank_sum += static_cast<double>(i + 1);
    }
  }
  const double negatives = static_cast<double>(scored.size()) - positives;
  const double auc = (rank_sum - positives * (positives + 1) / 2) / (positives * negatives);
  const double ctr = positives / static_cast<double>(scored.size());
  EXPECT_GT(auc, 0.75);
  EXPECT_GT(ctr, 0.15);
  EXPECT_LT(ctr, 0.45);
}

TEST(CriteoGeneratorTest, ParsesGeneratedSpecs) {
  EXPECT_FALSE(parse_generated_criteo("/data/day_0").value().has_value());
  const CriteoGeneratorOptions o = parse_generated_criteo("generated:1000").value().value();
  EXPECT_EQ(o.rows, 1000);
  EXPECT_EQ(o.seed, 1u);
  EXPECT_EQ(parse_generated_criteo("generated:10:7").value()->seed, 7u);
  for (const char* bad : {"generated:", "generated:x", "generated:0", "generated:-5",
                          "generated:10:", "generated:10:1:2", "generated:10x"}) {
    EXPECT_THAT(parse_generated_criteo(bad).status().message(), HasSubstr("generated:<rows>"))
        << bad;
  }
}

TEST(CriteoGeneratorTest, ValidatesOptions) {
  CriteoGeneratorOptions o;
  o.cardinalities[4] = 0;
  EXPECT_THAT(o.validate().message(), HasSubstr("C5"));
  o = {};
  o.zipf_exponent = 0;
  EXPECT_THAT(o.validate().message(), HasSubstr("zipf"));
  o = {};
  o.missing_fraction = 1.5;
  EXPECT_THAT(o.validate().message(), HasSubstr("missing"));
}

}  // namespace
}  // namespace psflow::internal

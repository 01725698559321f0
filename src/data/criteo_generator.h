// A deterministic generator of Criteo-shaped click data (criteo_reader.h's
// format), for tests, benchmarks and demos: no real Criteo file is
// available offline.
//
// Row r depends only on (seed, r): the same options give the same bytes,
// whatever the chunks they are generated in. Each categorical column c
// draws a rank k in [0, cardinality_c) from a Zipf-like power law (P(k) ~
// (k + 1)^-zipf_exponent, the continuous inverse-CDF approximation), and
// writes the rank's value: 8 hex digits hashed from (seed, c, k). Some
// columns have missing values (missing_fraction; the real data's C19..C26
// and many integer columns are often empty). Integer column j is a
// log-normal count floor(exp(mu_j + sigma_j z_j)) - 1 of a latent normal
// z_j (I2 is sometimes negative, as in the real data), missing with
// probability missing_fraction.
//
// The label is Bernoulli(sigmoid(bias + sum_c w_c(k_c) + sum_j v_j z_j)):
// every (column, rank) has a hidden normal weight, every integer column a
// hidden coefficient, so a model that learns per-id embeddings and the
// dense features reaches a test AUC of about 0.78 (the true logits' own
// AUC is about 0.8), and a constant predictor 0.5.
#ifndef PSFLOW_DATA_CRITEO_GENERATOR_H_
#define PSFLOW_DATA_CRITEO_GENERATOR_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "data/criteo_reader.h"

namespace psflow::internal {

// Thread-safety: a value type.
struct CriteoGeneratorOptions {
  uint64_t seed = 1;
  int64_t rows = 100'000;
  // Distinct values per categorical column (C1..C26), shaped like the real
  // data's (a few tiny columns, several with many values) but scaled down.
  std::array<int64_t, kCriteoCategoricalFeatures> cardinalities = {
      1000, 500,   100000, 50000, 300,  20,   10000, 600,    3,  50000, 5000,  100000, 3000,
      20,   10000, 80000,  10,    4000, 2000, 4,     100000, 15, 15,    50000, 80,     40000};
  double zipf_exponent = 1.1;
  // Fraction of missing values in the columns that have them (C19..C26
  // and I1, I3, I10, I12, I13).
  double missing_fraction = 0.3;
  // Signal strength: the standard deviation of each column's hidden
  // per-value weights.
  double signal = 0.35;

  // INVALID_ARGUMENT naming the bad option.
  [[nodiscard]] absl::Status validate() const;
};

// Rows [begin, end) as TSV text, one "\n"-terminated line each.
// Thread-safety: a free function with no shared state.
[[nodiscard]] std::string generate_criteo_rows(const CriteoGeneratorOptions& options, int64_t begin,
                                               int64_t end);

// The hidden logit of row r (what the label is drawn from), for tests of
// how learnable the data is.
[[nodiscard]] double criteo_true_logit(const CriteoGeneratorOptions& options, int64_t row);

// Writes options.rows rows to `path`.
[[nodiscard]] absl::Status write_criteo_file(const CriteoGeneratorOptions& options,
                                             const std::string& path);

// Generates options.rows rows and parses them into `out`, chunk by chunk
// (what reading write_criteo_file's file gives, without the file).
[[nodiscard]] absl::Status generate_criteo_data(const CriteoGeneratorOptions& options,
                                                CriteoData& out);

// "generated:<rows>" or "generated:<rows>:<seed>" (a --data-dir value) as
// generator options; nullopt when `spec` does not start with "generated:",
// INVALID_ARGUMENT when the rest is malformed.
[[nodiscard]] absl::StatusOr<std::optional<CriteoGeneratorOptions>> parse_generated_criteo(
    std::string_view spec);

}  // namespace psflow::internal

#endif  // PSFLOW_DATA_CRITEO_GENERATOR_H_

#include "data/criteo_generator.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/strings.h"
#include "psflow/status_macros.h"

namespace psflow::internal {
namespace {

constexpr int64_t kMaxRows = int64_t{1} << 40;
constexpr int64_t kMaxCardinality = int64_t{1} << 32;
constexpr int64_t kChunkRows = 65536;
constexpr double kBias = -1.3;

// Log-normal counts of the integer columns: mu, sigma of log(count + 1),
// and the hidden coefficient of each column's latent normal.
constexpr std::array<double, kCriteoDenseFeatures> kMu = {1.0, 2.0, 1.5, 1.2, 6.0, 3.0, 1.5,
                                                          2.0, 3.5, 0.5, 1.0, 0.3, 1.2};
constexpr std::array<double, kCriteoDenseFeatures> kSigma = {1.0, 1.5, 1.2, 1.0, 2.0, 1.5, 1.2,
                                                             1.0, 1.5, 0.6, 0.8, 0.5, 1.0};
constexpr std::array<double, kCriteoDenseFeatures> kCoefficient = {
    0.3, -0.2, 0.15, -0.25, 0.2, -0.1, 0.3, 0.1, -0.2, 0.25, -0.15, 0.1, 0.2};
constexpr std::array<bool, kCriteoDenseFeatures> kDenseMissing = {
    true, false, true, false, false, false, false, false, false, true, false, true, true};
constexpr int kFirstSparseWithMissing = 18;  // C19

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

double unit(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

// A standard normal from 64 random bits (Box-Muller on the two halves).
double normal_of(uint64_t bits) {
  const double u1 = (static_cast<double>(bits >> 32) + 0.5) * 0x1.0p-32;
  const double u2 = static_cast<double>(bits & 0xFFFFFFFFULL) * 0x1.0p-32;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

// The row's random stream: depends only on (seed, row).
// Thread-safety: use from one thread.
class RowRng {
 public:
  RowRng(uint64_t seed, int64_t row)
      : state_(mix(mix(seed ^ 0xC417E0ULL) ^ static_cast<uint64_t>(row))) {}
  uint64_t next() { return mix(state_ += 0x9E3779B97F4A7C15ULL); }
  double uniform() { return unit(next()); }
  double normal() { return normal_of(next()); }

 private:
  uint64_t state_;
};

uint64_t column_rank_hash(uint64_t seed, uint64_t salt, int column, int64_t rank) {
  return mix(mix(seed ^ salt) ^
             mix((static_cast<uint64_t>(column) << 40) + static_cast<uint64_t>(rank)));
}

// One row's draws. Thread-safety: a value type.
struct Row {
  bool label = false;
  std::array<std::optional<int64_t>, kCriteoDenseFeatures> dense;
  std::array<std::optional<uint32_t>, kCriteoCategoricalFeatures> values;
  double logit = 0.0;
};

Row draw_row(const CriteoGeneratorOptions& o, int64_t r) {
  RowRng rng(o.seed, r);
  Row row;
  double logit = kBias;
  for (int j = 0; j < kCriteoDenseFeatures; ++j) {
    const double z = rng.normal();
    const double missing = rng.uniform();
    const double negative = rng.uniform();
    if (kDenseMissing[j] && missing < o.missing_fraction) continue;
    logit += kCoefficient[j] * z;
    int64_t x = static_cast<int64_t>(std::floor(std::exp(kMu[j] + kSigma[j] * z))) - 1;
    if (j == 1 && negative < 0.05) x = -1 - static_cast<int64_t>(negative * 60.0);
    row.dense[j] = x;
  }
  const double s = o.zipf_exponent;
  for (int c = 0; c < kCriteoCategoricalFeatures; ++c) {
    const double u = rng.uniform();
    const double missing = rng.uniform();
    if (c >= kFirstSparseWithMissing && missing < o.missing_fraction) continue;
    const auto n = static_cast<double>(o.cardinalities[c]);
    // Continuous inverse CDF of density ~ x^-s on [1, n + 1).
    double x;
    if (std::abs(s - 1.0) < 1e-9) {
      x = std::exp(u * std::log(n + 1.0));
    } else {
      x = std::pow(1.0 + u * (std::pow(n + 1.0, 1.0 - s) - 1.0), 1.0 / (1.0 - s));
    }
    const int64_t rank =
        std::clamp<int64_t>(static_cast<int64_t>(x) - 1, 0, o.cardinalities[c] - 1);
    row.values[c] = static_cast<uint32_t>(column_rank_hash(o.seed, 0x4E3D5ULL, c, rank));
    logit += o.signal * normal_of(column_rank_hash(o.seed, 0x57E1ULL, c, rank));
  }
  row.logit = logit;
  row.label = rng.uniform() < 1.0 / (1.0 + std::exp(-logit));
  return row;
}

}  // namespace

absl::Status CriteoGeneratorOptions::validate() const {
  if (rows < 0 || rows > kMaxRows) {
    return absl::InvalidArgumentError(
        absl::StrCat("generated Criteo rows ", rows, " out of range; use 0 to ", kMaxRows));
  }
  for (int c = 0; c < kCriteoCategoricalFeatures; ++c) {
    if (cardinalities[c] < 1 || cardinalities[c] > kMaxCardinality) {
      return absl::InvalidArgumentError(absl::StrCat("generated Criteo cardinality of C", c + 1,
                                                     " is ", cardinalities[c], "; use 1 to ",
                                                     kMaxCardinality));
    }
  }
  if (!(zipf_exponent > 0.0 && zipf_exponent <= 4.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("generated Criteo zipf exponent ", zipf_exponent, "; use (0, 4]"));
  }
  if (!(missing_fraction >= 0.0 && missing_fraction <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("generated Criteo missing fraction ", missing_fraction, "; use [0, 1]"));
  }
  if (!(signal >= 0.0 && signal <= 10.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("generated Criteo signal ", signal, "; use [0, 10]"));
  }
  return absl::OkStatus();
}

std::string generate_criteo_rows(const CriteoGeneratorOptions& options, int64_t begin,
                                 int64_t end) {
  std::string out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(0, end - begin)) * 200);
  char buf[32];
  for (int64_t r = begin; r < end; ++r) {
    const Row row = draw_row(options, r);
    out += row.label ? '1' : '0';
    for (const std::optional<int64_t>& x : row.dense) {
      out += '\t';
      if (x.has_value()) {
        const auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), *x);
        out.append(buf, ptr);
      }
    }
    for (const std::optional<uint32_t>& v : row.values) {
      out += '\t';
      if (v.has_value()) {
        std::snprintf(buf, sizeof(buf), "%08x", *v);
        out.append(buf, 8);
      }
    }
    out += '\n';
  }
  return out;
}

double criteo_true_logit(const CriteoGeneratorOptions& options, int64_t row) {
  return draw_row(options, row).logit;
}

absl::Status write_criteo_file(const CriteoGeneratorOptions& options, const std::string& path) {
  PSFLOW_RETURN_IF_ERROR(options.validate());
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (f == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("cannot write ", path));
  }
  for (int64_t begin = 0; begin < options.rows; begin += kChunkRows) {
    const std::string text =
        generate_criteo_rows(options, begin, std::min(options.rows, begin + kChunkRows));
    if (std::fwrite(text.data(), 1, text.size(), f.get()) != text.size()) {
      return absl::InvalidArgumentError(absl::StrCat("write to ", path, " failed"));
    }
  }
  if (std::fclose(f.release()) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("write to ", path, " failed"));
  }
  return absl::OkStatus();
}

absl::Status generate_criteo_data(const CriteoGeneratorOptions& options, CriteoData& out) {
  PSFLOW_RETURN_IF_ERROR(options.validate());
  const std::string name = absl::StrCat("generated:", options.rows, ":", options.seed);
  for (int64_t begin = 0; begin < options.rows; begin += kChunkRows) {
    const std::string text =
        generate_criteo_rows(options, begin, std::min(options.rows, begin + kChunkRows));
    PSFLOW_RETURN_IF_ERROR(parse_criteo_text(text, name, begin + 1, {}, out));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<CriteoGeneratorOptions>> parse_generated_criteo(
    std::string_view spec) {
  constexpr std::string_view kPrefix = "generated:";
  if (spec.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  const std::string_view rest = spec.substr(kPrefix.size());
  const std::vector<absl::string_view> parts =
      absl::StrSplit(absl::string_view(rest.data(), rest.size()), ':');
  const auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("--data-dir '", av(spec),
                     "' is malformed; use generated:<rows> or generated:<rows>:<seed> (e.g. "
                     "generated:200000)"));
  };
  if (parts.size() > 2) return bad();
  CriteoGeneratorOptions o;
  const auto parse = [](absl::string_view s, auto* out) {
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return !s.empty() && ec == std::errc() && ptr == s.data() + s.size();
  };
  if (!parse(parts[0], &o.rows) || o.rows < 1) return bad();
  if (parts.size() == 2 && !parse(parts[1], &o.seed)) return bad();
  PSFLOW_RETURN_IF_ERROR(o.validate());
  return o;
}

}  // namespace psflow::internal

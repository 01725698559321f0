#include "embedding/key_hash.h"

#include <cmath>
#include <numbers>

namespace psflow::internal {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

// 53 random bits as a double in [0, 1).
double unit(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

}  // namespace

void initial_row(const DynamicEmbeddingOptions& options, int64_t key, float* out) {
  const int64_t dim = options.dim;
  if (options.initializer == DynamicEmbeddingInitializer::kZeros) {
    for (int64_t j = 0; j < dim; ++j) out[j] = 0.0f;
    return;
  }
  const uint64_t base =
      splitmix64(splitmix64(options.seed ^ 0x5EEDULL) ^ splitmix64(static_cast<uint64_t>(key)));
  const double scale = options.init_scale;
  for (int64_t j = 0; j < dim; ++j) {
    const uint64_t bits = splitmix64(base + static_cast<uint64_t>(j) * kGolden);
    if (options.initializer == DynamicEmbeddingInitializer::kUniform) {
      out[j] = static_cast<float>((2.0 * unit(bits) - 1.0) * scale);
    } else {
      // Box-Muller from two 32-bit halves; u1 in (0, 1] keeps the log finite.
      const double u1 = (static_cast<double>(bits >> 32) + 1.0) * 0x1.0p-32;
      const double u2 = static_cast<double>(bits & 0xFFFFFFFFULL) * 0x1.0p-32;
      out[j] = static_cast<float>(std::sqrt(-2.0 * std::log(u1)) *
                                  std::cos(2.0 * std::numbers::pi * u2) * scale);
    }
  }
}

double admission_draw(uint64_t seed, int64_t key) {
  return unit(splitmix64(splitmix64(seed ^ 0xAD317ULL) ^ static_cast<uint64_t>(key)));
}

}  // namespace psflow::internal

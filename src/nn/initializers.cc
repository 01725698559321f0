// Deterministic initializers: std::mt19937_64 bits through our own
// transforms, because std::uniform_real_distribution and
// std::normal_distribution may differ between standard libraries.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "nn/checks.h"
#include "psflow/nn.h"
#include "psflow/status_macros.h"

namespace psflow::nn {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

absl::StatusOr<Tensor> make(absl::string_view fn, const Shape& shape, DType dtype) {
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64) {
    return internal::arg_error({fn, "dtype"}, absl::StrCat("is ",
                                                           is_valid_dtype(static_cast<int>(dtype))
                                                               ? std::string(dtype_name(dtype))
                                                               : "invalid",
                                                           ", expected float32 or float64"));
  }
  absl::StatusOr<Tensor> t = Tensor::create(dtype, shape);
  if (!t.ok()) return internal::arg_error({fn, "shape"}, t.status().message());
  return t;
}

// Uniform in [0, 1) with 53 random bits.
double uniform01(std::mt19937_64& gen) { return static_cast<double>(gen() >> 11) * 0x1.0p-53; }

// Writes gen() converted to the tensor's dtype into every element.
template <typename Gen>
void fill(Tensor& t, Gen&& gen) {
  internal::visit_float(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    for (T& v : t.mutable_flat<T>()) v = static_cast<T>(gen());
  });
}

absl::Status check_finite(absl::string_view fn, absl::string_view name, double value) {
  if (std::isfinite(value)) return absl::OkStatus();
  return internal::arg_error({fn, name}, absl::StrCat("is ", value, ", expected a finite value"));
}

}  // namespace

absl::StatusOr<Tensor> zeros(const Shape& shape, DType dtype) {
  return make("zeros", shape, dtype);
}

absl::StatusOr<Tensor> random_uniform(const Shape& shape, double minval, double maxval,
                                      uint64_t seed, DType dtype) {
  constexpr absl::string_view kFn = "random_uniform";
  PSFLOW_RETURN_IF_ERROR(check_finite(kFn, "minval", minval));
  PSFLOW_RETURN_IF_ERROR(check_finite(kFn, "maxval", maxval));
  if (minval > maxval) {
    return internal::arg_error({kFn, "maxval"},
                               absl::StrCat("is ", maxval, ", expected >= minval (", minval, ")"));
  }
  PSFLOW_ASSIGN_OR_RETURN(Tensor t, make(kFn, shape, dtype));
  std::mt19937_64 gen(seed);
  const double range = maxval - minval;
  fill(t, [&] { return minval + range * uniform01(gen); });
  return t;
}

absl::StatusOr<Tensor> random_normal(const Shape& shape, double stddev, uint64_t seed,
                                     DType dtype) {
  constexpr absl::string_view kFn = "random_normal";
  PSFLOW_RETURN_IF_ERROR(check_finite(kFn, "stddev", stddev));
  if (stddev < 0) {
    return internal::arg_error({kFn, "stddev"}, absl::StrCat("is ", stddev, ", expected >= 0"));
  }
  PSFLOW_ASSIGN_OR_RETURN(Tensor t, make(kFn, shape, dtype));
  std::mt19937_64 gen(seed);
  // Box-Muller: two uniforms give two independent standard normals.
  bool have_spare = false;
  double spare = 0.0;
  fill(t, [&] {
    if (have_spare) {
      have_spare = false;
      return stddev * spare;
    }
    const double u1 = 1.0 - uniform01(gen);  // (0, 1]: log is finite
    const double u2 = uniform01(gen);
    const double r = std::sqrt(-2.0 * std::log(u1));
    spare = r * std::sin(kTwoPi * u2);
    have_spare = true;
    return stddev * r * std::cos(kTwoPi * u2);
  });
  return t;
}

absl::StatusOr<Tensor> glorot_uniform(const Shape& shape, uint64_t seed, DType dtype) {
  constexpr absl::string_view kFn = "glorot_uniform";
  PSFLOW_ASSIGN_OR_RETURN(Tensor t, make(kFn, shape, dtype));
  // Fans as Keras's _compute_fans.
  double fan_in = 1.0;
  double fan_out = 1.0;
  const size_t rank = shape.size();
  if (rank == 1) {
    fan_in = fan_out = static_cast<double>(shape[0]);
  } else if (rank == 2) {
    fan_in = static_cast<double>(shape[0]);
    fan_out = static_cast<double>(shape[1]);
  } else if (rank > 2) {
    double receptive = 1.0;
    for (size_t i = 0; i + 2 < rank; ++i) receptive *= static_cast<double>(shape[i]);
    fan_in = static_cast<double>(shape[rank - 2]) * receptive;
    fan_out = static_cast<double>(shape[rank - 1]) * receptive;
  }
  const double scale = 1.0 / std::max(1.0, (fan_in + fan_out) / 2.0);
  const double limit = std::sqrt(3.0 * scale);
  std::mt19937_64 gen(seed);
  fill(t, [&] { return -limit + 2.0 * limit * uniform01(gen); });
  return t;
}

}  // namespace psflow::nn

// Test helpers for the nn layer: random float64 tensors and finite-
// difference gradient checks.
#ifndef PSFLOW_NN_TEST_UTIL_H_
#define PSFLOW_NN_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>

#include "gtest/gtest.h"
#include "psflow/nn.h"
#include "psflow/tensor.h"

namespace psflow::nn::testing {

// Normal(0, stddev) float64 values.
inline Tensor random_tensor(const Shape& shape, uint64_t seed, double stddev = 1.0) {
  absl::StatusOr<Tensor> t = random_normal(shape, stddev, seed, DType::kFloat64);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

// Sum of the element-wise product of two float64 tensors of one shape.
inline double dot(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  return (a.vec<double>() * b.vec<double>()).sum();
}

// Checks `analytic` (same shape as `x`) against central differences of the
// scalar function `f` at `x`, element by element, with a relative tolerance.
inline void expect_gradient_matches(const std::function<double(const Tensor&)>& f, const Tensor& x,
                                    const Tensor& analytic, const std::string& what,
                                    double tolerance = 1e-6) {
  ASSERT_EQ(x.dtype(), DType::kFloat64) << what;
  ASSERT_EQ(analytic.dtype(), DType::kFloat64) << what;
  ASSERT_EQ(analytic.shape(), x.shape()) << what;
  Tensor probe = x.clone();
  auto values = probe.mutable_flat<double>();
  const auto expected = analytic.flat<double>();
  for (size_t i = 0; i < values.size(); ++i) {
    const double original = values[i];
    const double h = 1e-6 * std::max(1.0, std::abs(original));
    values[i] = original + h;
    const double plus = f(probe);
    values[i] = original - h;
    const double minus = f(probe);
    values[i] = original;
    const double numeric = (plus - minus) / (2 * h);
    EXPECT_NEAR(expected[i], numeric, tolerance * std::max(1.0, std::abs(numeric)))
        << what << " at flat index " << i;
  }
}

}  // namespace psflow::nn::testing

#endif  // PSFLOW_NN_TEST_UTIL_H_

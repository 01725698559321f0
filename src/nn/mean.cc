// nn::Mean, Keras's metrics.Mean.
#include <cmath>

#include "absl/synchronization/mutex.h"
#include "nn/metric_util.h"
#include "psflow/nn.h"

namespace psflow::nn {
namespace {
constexpr absl::string_view kName = "mean";
}  // namespace

absl::Status Mean::update(double value, double weight) {
  if (!(std::isfinite(weight) && weight >= 0)) {
    return internal::arg_error({"Mean::update", "weight"},
                               absl::StrCat("is ", weight, ", expected a finite value >= 0"));
  }
  absl::MutexLock lock(&mu_);
  state_.total += value * weight;
  state_.count += weight;
  return absl::OkStatus();
}

absl::Status Mean::update(const Tensor& values) {
  PSFLOW_RETURN_IF_ERROR(internal::check_float({"Mean::update", "values"}, values));
  const double sum = internal::visit_float(values.dtype(), [&](auto zero) {
    return values.vec<decltype(zero)>().template cast<double>().sum();
  });
  absl::MutexLock lock(&mu_);
  state_.total += sum;
  state_.count += static_cast<double>(values.num_elements());
  return absl::OkStatus();
}

double Mean::result() const {
  const State s = snapshot();
  return s.count == 0 ? 0.0 : s.total / s.count;
}

void Mean::reset() { reset_state(); }

absl::Status Mean::merge(const Mean& other) {
  const State o = other.snapshot();
  absl::MutexLock lock(&mu_);
  state_.total += o.total;
  state_.count += o.count;
  return absl::OkStatus();
}

Structure Mean::to_structure() const {
  const State s = snapshot();
  return Structure::dict({{std::string(internal::kMetricKey), std::string(kName)},
                          {"total", s.total},
                          {"count", s.count}});
}

absl::StatusOr<Mean> Mean::from_structure(const Structure& s) {
  PSFLOW_RETURN_IF_ERROR(internal::check_metric_dict(s, kName, {"total", "count"}));
  PSFLOW_ASSIGN_OR_RETURN(const double total, internal::read_float(s, kName, "total", true));
  PSFLOW_ASSIGN_OR_RETURN(const double count, internal::read_float(s, kName, "count", false));
  if (count < 0) {
    return absl::InvalidArgumentError(absl::StrCat("nn metric 'mean': from_structure: 'count' is ",
                                                   count,
                                                   ", expected a float >= 0 (a sum of weights)"));
  }
  Mean m;
  {
    absl::MutexLock lock(&m.mu_);
    m.state_ = State{total, count};
  }
  return m;
}

}  // namespace psflow::nn

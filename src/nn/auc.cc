// nn::AUC: Keras's bucketed ROC AUC approximation.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "base/strings.h"
#include "nn/metric_util.h"
#include "psflow/nn.h"

namespace psflow::nn {

using ::psflow::internal::av;
using ::psflow::internal::sv;

namespace {

constexpr absl::string_view kName = "auc";

absl::Status check_num_thresholds(absl::string_view where, int64_t n) {
  if (n >= 2 && n <= AUC::kMaxThresholds) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("nn::AUC ", where, ": 'num_thresholds' is ", n,
                                                 ", expected an int in [2, ", AUC::kMaxThresholds,
                                                 "]"));
}

// Reads an int64 [buckets] histogram of counts >= 0.
absl::StatusOr<std::vector<int64_t>> read_histogram(const Structure& s, absl::string_view key,
                                                    int64_t buckets) {
  const Structure& v = s[sv(key)];
  const auto bad = [&](absl::string_view detail) {
    return absl::InvalidArgumentError(
        absl::StrCat("nn metric 'auc': from_structure: '", key, "' ", detail));
  };
  if (!v.is_tensor()) {
    return bad(absl::StrCat("is ", v.debug_string(), ", expected an int64 tensor [", buckets, "]"));
  }
  const Tensor& t = v.tensor();
  if (t.dtype() != DType::kInt64 || t.shape() != Shape{buckets}) {
    return bad(absl::StrCat("is a ", t.valid() ? av(dtype_name(t.dtype())) : "invalid",
                            " tensor of shape ", shape_string(t.shape()), ", expected int64 [",
                            buckets, "] (num_thresholds - 1 buckets)"));
  }
  const auto flat = t.flat<int64_t>();
  for (size_t i = 0; i < flat.size(); ++i) {
    if (flat[i] < 0) {
      return bad(absl::StrCat("has count ", flat[i], " at bucket ", i, ", expected counts >= 0"));
    }
  }
  return std::vector<int64_t>(flat.begin(), flat.end());
}

// a[i] += b[i] for all i, or OUT_OF_RANGE with `a` unchanged.
absl::Status add_histogram(const std::vector<int64_t>& b, std::vector<int64_t>* a) {
  std::vector<int64_t> sum = *a;
  for (size_t i = 0; i < sum.size(); ++i) {
    PSFLOW_RETURN_IF_ERROR(internal::add_count(kName, b[i], &sum[i]));
  }
  *a = std::move(sum);
  return absl::OkStatus();
}

}  // namespace

AUC::AUC(int num_thresholds) {
  absl::MutexLock lock(&mu_);
  state_.num_thresholds = num_thresholds;
  state_.positives.assign(static_cast<size_t>(num_thresholds - 1), 0);
  state_.negatives.assign(static_cast<size_t>(num_thresholds - 1), 0);
}

absl::StatusOr<AUC> AUC::create(int num_thresholds) {
  PSFLOW_RETURN_IF_ERROR(check_num_thresholds("create", num_thresholds));
  return AUC(num_thresholds);
}

int AUC::num_thresholds() const {
  absl::MutexLock lock(&mu_);
  return state_.num_thresholds;
}

absl::Status AUC::update(const Tensor& labels, const Tensor& predictions) {
  constexpr absl::string_view kFn = "AUC::update";
  const int64_t buckets = num_thresholds() - 1;
  // Thresholds are t_0 = -eps, t_i = i / buckets, t_buckets = 1 + eps; a
  // prediction p exceeds t_0..t_b for b = clamp(ceil(p * buckets) - 1, 0,
  // buckets - 1), so a histogram over b holds every confusion matrix.
  std::vector<int64_t> positives(static_cast<size_t>(buckets), 0);
  std::vector<int64_t> negatives(static_cast<size_t>(buckets), 0);
  int64_t index = 0;
  double bad_prediction = 0.0;
  int64_t bad_index = -1;
  PSFLOW_RETURN_IF_ERROR(
      internal::for_each_binary(kFn, labels, predictions, [&](bool label, double p) {
        if (!(p >= 0.0 && p <= 1.0)) {
          if (bad_index < 0) {
            bad_index = index;
            bad_prediction = p;
          }
          ++index;
          return;
        }
        int64_t b = static_cast<int64_t>(std::ceil(p * static_cast<double>(buckets))) - 1;
        b = b < 0 ? 0 : (b >= buckets ? buckets - 1 : b);
        ++(label ? positives : negatives)[static_cast<size_t>(b)];
        ++index;
      }));
  if (bad_index >= 0) {
    return internal::arg_error({kFn, "predictions"},
                               absl::StrCat("has value ", bad_prediction, " at flat index ",
                                            bad_index, ", expected a probability in [0, 1]"));
  }
  absl::MutexLock lock(&mu_);
  if (state_.num_thresholds - 1 != buckets) {
    return absl::FailedPreconditionError(
        "nn::AUC::update: the metric was reassigned during the update; retry");
  }
  State next = state_;
  PSFLOW_RETURN_IF_ERROR(add_histogram(positives, &next.positives));
  PSFLOW_RETURN_IF_ERROR(add_histogram(negatives, &next.negatives));
  state_ = std::move(next);
  return absl::OkStatus();
}

double AUC::result() const {
  const State s = snapshot();
  const size_t buckets = s.positives.size();
  // tp[i] / fp[i]: examples above threshold i, the suffix sums of the
  // histograms (in double: merged untrusted counts may not fit int64).
  std::vector<double> tp(buckets + 1, 0.0);
  std::vector<double> fp(buckets + 1, 0.0);
  for (size_t i = buckets; i-- > 0;) {
    tp[i] = tp[i + 1] + static_cast<double>(s.positives[i]);
    fp[i] = fp[i + 1] + static_cast<double>(s.negatives[i]);
  }
  const double total_pos = tp[0];
  const double total_neg = fp[0];
  if (total_pos == 0.0 || total_neg == 0.0) return 0.0;
  // Trapezoids between consecutive (FPR, TPR) points, as Keras's
  // interpolation summation for the ROC curve.
  double auc = 0.0;
  for (size_t i = 0; i < buckets; ++i) {
    const double dx = (fp[i] - fp[i + 1]) / total_neg;
    const double height = (tp[i] + tp[i + 1]) / (2.0 * total_pos);
    auc += dx * height;
  }
  return auc;
}

void AUC::reset() {
  absl::MutexLock lock(&mu_);
  std::fill(state_.positives.begin(), state_.positives.end(), 0);
  std::fill(state_.negatives.begin(), state_.negatives.end(), 0);
}

absl::Status AUC::merge(const AUC& other) {
  const State o = other.snapshot();
  absl::MutexLock lock(&mu_);
  if (o.num_thresholds != state_.num_thresholds) {
    return absl::InvalidArgumentError(
        absl::StrCat("nn::AUC::merge: 'other' has num_thresholds ", o.num_thresholds, ", expected ",
                     state_.num_thresholds, " (only AUCs with the same thresholds can be merged)"));
  }
  State next = state_;
  PSFLOW_RETURN_IF_ERROR(add_histogram(o.positives, &next.positives));
  PSFLOW_RETURN_IF_ERROR(add_histogram(o.negatives, &next.negatives));
  state_ = std::move(next);
  return absl::OkStatus();
}

Structure AUC::to_structure() const {
  const State s = snapshot();
  return Structure::dict({{std::string(internal::kMetricKey), std::string(kName)},
                          {"num_thresholds", static_cast<int64_t>(s.num_thresholds)},
                          {"positives", Tensor::from_vector(s.positives)},
                          {"negatives", Tensor::from_vector(s.negatives)}});
}

absl::StatusOr<AUC> AUC::from_structure(const Structure& s) {
  PSFLOW_RETURN_IF_ERROR(
      internal::check_metric_dict(s, kName, {"num_thresholds", "positives", "negatives"}));
  const Structure& n = s["num_thresholds"];
  if (n.kind() != Structure::Kind::kInt) {
    return absl::InvalidArgumentError(
        absl::StrCat("nn metric 'auc': from_structure: 'num_thresholds' is ", n.debug_string(),
                     ", expected an int in [2, ", kMaxThresholds, "]"));
  }
  PSFLOW_RETURN_IF_ERROR(check_num_thresholds("from_structure", n.int_value()));
  const int num_thresholds = static_cast<int>(n.int_value());
  PSFLOW_ASSIGN_OR_RETURN(std::vector<int64_t> positives,
                          read_histogram(s, "positives", num_thresholds - 1));
  PSFLOW_ASSIGN_OR_RETURN(std::vector<int64_t> negatives,
                          read_histogram(s, "negatives", num_thresholds - 1));
  AUC m(num_thresholds);
  {
    absl::MutexLock lock(&m.mu_);
    m.state_.positives = std::move(positives);
    m.state_.negatives = std::move(negatives);
  }
  return m;
}

}  // namespace psflow::nn

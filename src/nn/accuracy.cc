// nn::SparseCategoricalAccuracy and nn::BinaryAccuracy, as Keras's.
#include <cmath>
#include <cstdint>

#include "absl/synchronization/mutex.h"
#include "nn/metric_util.h"
#include "psflow/nn.h"

namespace psflow::nn {
namespace {

constexpr absl::string_view kSparseName = "sparse_categorical_accuracy";
constexpr absl::string_view kBinaryName = "binary_accuracy";

// Rows of predictions [N, C] whose first maximal column equals the label.
template <typename T, typename L>
absl::StatusOr<int64_t> count_argmax_hits(const Tensor& labels, const Tensor& predictions) {
  constexpr absl::string_view kFn = "SparseCategoricalAccuracy::update";
  const auto p = predictions.matrix<T>();
  const auto y = labels.flat<L>();
  const int64_t classes = p.cols();
  int64_t correct = 0;
  for (int64_t i = 0; i < p.rows(); ++i) {
    const int64_t label = static_cast<int64_t>(y[i]);
    if (label < 0 || label >= classes) {
      return internal::bad_class_label(kFn, label, static_cast<size_t>(i), classes, "predictions");
    }
    Eigen::Index best = 0;
    p.row(i).maxCoeff(&best);
    correct += static_cast<int64_t>(best) == label ? 1 : 0;
  }
  return correct;
}

// Adds `correct` hits out of `count` to `state`; OUT_OF_RANGE (and `state`
// unchanged) when a total would overflow.
template <typename State>
absl::Status add_hits(absl::string_view metric, int64_t correct, int64_t count, State* state) {
  State next = *state;
  PSFLOW_RETURN_IF_ERROR(internal::add_count(metric, correct, &next.correct));
  PSFLOW_RETURN_IF_ERROR(internal::add_count(metric, count, &next.count));
  *state = next;
  return absl::OkStatus();
}

// correct / count; 0 before any update.
template <typename State>
double hit_ratio(const State& s) {
  return s.count == 0 ? 0.0 : static_cast<double>(s.correct) / static_cast<double>(s.count);
}

}  // namespace

// --- SparseCategoricalAccuracy ----------------------------------------------

absl::Status SparseCategoricalAccuracy::update(const Tensor& labels, const Tensor& predictions) {
  constexpr absl::string_view kFn = "SparseCategoricalAccuracy::update";
  PSFLOW_RETURN_IF_ERROR(internal::check_float({kFn, "predictions"}, predictions));
  PSFLOW_RETURN_IF_ERROR(internal::check_rank({kFn, "predictions"}, predictions, 2, "[N, C]"));
  PSFLOW_RETURN_IF_ERROR(internal::check_class_labels({kFn, "labels"}, labels));
  const int64_t n = predictions.dim(0);
  if (labels.shape() != Shape{n} && labels.shape() != Shape{n, 1}) {
    return internal::arg_error(
        {kFn, "labels"},
        absl::StrCat("has shape ", shape_string(labels.shape()), ", expected [", n, "] or [", n,
                     ", 1] (one class id per row of "
                     "'predictions')"));
  }
  PSFLOW_ASSIGN_OR_RETURN(
      const int64_t correct, internal::visit_int(labels.dtype(), [&](auto label_zero) {
        return internal::visit_float(predictions.dtype(), [&](auto zero) {
          return count_argmax_hits<decltype(zero), decltype(label_zero)>(labels, predictions);
        });
      }));
  absl::MutexLock lock(&mu_);
  return add_hits(kSparseName, correct, n, &state_);
}

double SparseCategoricalAccuracy::result() const { return hit_ratio(snapshot()); }

void SparseCategoricalAccuracy::reset() { reset_state(); }

absl::Status SparseCategoricalAccuracy::merge(const SparseCategoricalAccuracy& other) {
  const State o = other.snapshot();
  absl::MutexLock lock(&mu_);
  return add_hits(kSparseName, o.correct, o.count, &state_);
}

Structure SparseCategoricalAccuracy::to_structure() const {
  const State s = snapshot();
  return Structure::dict({{std::string(internal::kMetricKey), std::string(kSparseName)},
                          {"correct", s.correct},
                          {"count", s.count}});
}

absl::StatusOr<SparseCategoricalAccuracy> SparseCategoricalAccuracy::from_structure(
    const Structure& s) {
  PSFLOW_RETURN_IF_ERROR(internal::check_metric_dict(s, kSparseName, {"correct", "count"}));
  PSFLOW_ASSIGN_OR_RETURN(const int64_t correct, internal::read_count(s, kSparseName, "correct"));
  PSFLOW_ASSIGN_OR_RETURN(const int64_t count, internal::read_count(s, kSparseName, "count"));
  PSFLOW_RETURN_IF_ERROR(internal::check_correct_le_count(kSparseName, correct, count));
  SparseCategoricalAccuracy m;
  {
    absl::MutexLock lock(&m.mu_);
    m.state_ = State{correct, count};
  }
  return m;
}

// --- BinaryAccuracy -----------------------------------------------------------

BinaryAccuracy::BinaryAccuracy(double threshold) {
  absl::MutexLock lock(&mu_);
  state_.threshold = threshold;
}

double BinaryAccuracy::threshold() const { return snapshot().threshold; }

absl::Status BinaryAccuracy::update(const Tensor& labels, const Tensor& predictions) {
  const double threshold = this->threshold();
  int64_t correct = 0;
  PSFLOW_RETURN_IF_ERROR(internal::for_each_binary(
      "BinaryAccuracy::update", labels, predictions,
      [&](bool label, double p) { correct += (p > threshold) == label ? 1 : 0; }));
  absl::MutexLock lock(&mu_);
  return add_hits(kBinaryName, correct, labels.num_elements(), &state_);
}

double BinaryAccuracy::result() const { return hit_ratio(snapshot()); }

void BinaryAccuracy::reset() {
  absl::MutexLock lock(&mu_);
  state_.correct = 0;
  state_.count = 0;
}

absl::Status BinaryAccuracy::merge(const BinaryAccuracy& other) {
  const State o = other.snapshot();
  absl::MutexLock lock(&mu_);
  if (o.threshold != state_.threshold) {
    return absl::InvalidArgumentError(absl::StrCat(
        "nn::BinaryAccuracy::merge: 'other' has threshold ", o.threshold, ", expected ",
        state_.threshold, " (only metrics with the same threshold can be merged)"));
  }
  return add_hits(kBinaryName, o.correct, o.count, &state_);
}

Structure BinaryAccuracy::to_structure() const {
  const State s = snapshot();
  return Structure::dict({{std::string(internal::kMetricKey), std::string(kBinaryName)},
                          {"threshold", s.threshold},
                          {"correct", s.correct},
                          {"count", s.count}});
}

absl::StatusOr<BinaryAccuracy> BinaryAccuracy::from_structure(const Structure& s) {
  PSFLOW_RETURN_IF_ERROR(
      internal::check_metric_dict(s, kBinaryName, {"threshold", "correct", "count"}));
  PSFLOW_ASSIGN_OR_RETURN(const double threshold,
                          internal::read_float(s, kBinaryName, "threshold", false));
  PSFLOW_ASSIGN_OR_RETURN(const int64_t correct, internal::read_count(s, kBinaryName, "correct"));
  PSFLOW_ASSIGN_OR_RETURN(const int64_t count, internal::read_count(s, kBinaryName, "count"));
  PSFLOW_RETURN_IF_ERROR(internal::check_correct_le_count(kBinaryName, correct, count));
  BinaryAccuracy m(threshold);
  {
    absl::MutexLock lock(&m.mu_);
    m.state_.correct = correct;
    m.state_.count = count;
  }
  return m;
}

}  // namespace psflow::nn

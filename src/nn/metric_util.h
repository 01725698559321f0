// Helpers shared by the metrics: reading their state back from an untrusted
// Structure, overflow-checked counting, and pairing binary labels with
// predictions.
#ifndef PSFLOW_NN_METRIC_UTIL_H_
#define PSFLOW_NN_METRIC_UTIL_H_

#include <cstdint>
#include <initializer_list>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "nn/checks.h"
#include "psflow/status_macros.h"
#include "psflow/structure.h"
#include "psflow/tensor.h"

namespace psflow::nn::internal {

// The "metric" field every metric's structure carries.
inline constexpr absl::string_view kMetricKey = "metric";

// `s` is a dict whose keys are exactly "metric" plus `fields`, with
// s["metric"] == `metric`. Messages name the metric, the key and the fix.
[[nodiscard]] absl::Status check_metric_dict(const Structure& s, absl::string_view metric,
                                             std::initializer_list<absl::string_view> fields);

// s[key] as an int >= 0.
[[nodiscard]] absl::StatusOr<int64_t> read_count(const Structure& s, absl::string_view metric,
                                                 absl::string_view key);
// s[key] as a float; finite unless `allow_non_finite`.
[[nodiscard]] absl::StatusOr<double> read_float(const Structure& s, absl::string_view metric,
                                                absl::string_view key, bool allow_non_finite);

// *total += add, OUT_OF_RANGE (and *total unchanged) on int64 overflow.
[[nodiscard]] absl::Status add_count(absl::string_view metric, int64_t add, int64_t* total);
// `correct` <= `count`, as accuracies need.
[[nodiscard]] absl::Status check_correct_le_count(absl::string_view metric, int64_t correct,
                                                  int64_t count);

// Checks that `labels` (0 or 1, any numeric or bool dtype) and float
// `predictions` pair up (same shape, or [N] with [N, 1]), then calls
// f(bool label, double prediction) for each element. Stops with
// INVALID_ARGUMENT at the first label that is not 0 or 1.
template <typename F>
absl::Status for_each_binary(absl::string_view fn, const Tensor& labels, const Tensor& predictions,
                             F&& f);

// --- implementation -------------------------------------------------------

[[nodiscard]] absl::Status check_binary_pair(absl::string_view fn, const Tensor& labels,
                                             const Tensor& predictions);
[[nodiscard]] absl::Status bad_binary_label(absl::string_view fn, double value, int64_t index);

template <typename L, typename P, typename F>
absl::Status for_each_binary_typed(absl::string_view fn, const L* labels, const P* predictions,
                                   int64_t n, F& f) {
  for (int64_t i = 0; i < n; ++i) {
    const L label = labels[i];
    if (!(label == L(0) || label == L(1))) {
      return bad_binary_label(fn, static_cast<double>(label), i);
    }
    f(label == L(1), static_cast<double>(predictions[i]));
  }
  return absl::OkStatus();
}

template <typename F>
absl::Status for_each_binary(absl::string_view fn, const Tensor& labels, const Tensor& predictions,
                             F&& f) {
  PSFLOW_RETURN_IF_ERROR(check_binary_pair(fn, labels, predictions));
  const int64_t n = labels.num_elements();
  return visit_float(predictions.dtype(), [&](auto pred_zero) -> absl::Status {
    using P = decltype(pred_zero);
    const P* p = predictions.flat<P>().data();
    const void* l = labels.raw_data();
    switch (labels.dtype()) {
      case DType::kFloat32: return for_each_binary_typed(fn, static_cast<const float*>(l), p, n, f);
      case DType::kFloat64:
        return for_each_binary_typed(fn, static_cast<const double*>(l), p, n, f);
      case DType::kInt32: return for_each_binary_typed(fn, static_cast<const int32_t*>(l), p, n, f);
      case DType::kInt64: return for_each_binary_typed(fn, static_cast<const int64_t*>(l), p, n, f);
      default:  // uint8 and bool, read as bytes so a corrupt bool is caught
        return for_each_binary_typed(fn, static_cast<const uint8_t*>(l), p, n, f);
    }
  });
}

}  // namespace psflow::nn::internal

#endif  // PSFLOW_NN_METRIC_UTIL_H_

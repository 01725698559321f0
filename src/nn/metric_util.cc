#include "nn/metric_util.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "base/strings.h"

namespace psflow::nn::internal {

using ::psflow::internal::av;
using ::psflow::internal::sv;

namespace {

absl::Status state_error(absl::string_view metric, absl::string_view detail) {
  return absl::InvalidArgumentError(
      absl::StrCat("nn metric '", metric, "': from_structure: ", detail));
}

}  // namespace

absl::Status check_metric_dict(const Structure& s, absl::string_view metric,
                               std::initializer_list<absl::string_view> fields) {
  std::vector<std::string> expected = {std::string(kMetricKey)};
  for (absl::string_view f : fields) expected.emplace_back(f);
  const std::string expected_text = absl::StrCat("{'", absl::StrJoin(expected, "', '"), "'}");
  if (!s.is_dict()) {
    return state_error(metric, absl::StrCat("got kind '", av(kind_name(s.kind())), "'",
                                            ", expected a dict with keys ", expected_text));
  }
  for (const auto& [key, value] : s.fields()) {
    bool known = false;
    for (const std::string& e : expected) known = known || key == e;
    if (!known) {
      return state_error(metric,
                         absl::StrCat("unexpected key '", key, "', expected keys ", expected_text));
    }
  }
  for (const std::string& e : expected) {
    if (s.fields().find(e) == s.fields().end()) {
      return state_error(metric,
                         absl::StrCat("missing key '", e, "', expected keys ", expected_text));
    }
  }
  const Structure& name = s[sv(kMetricKey)];
  if (name.kind() != Structure::Kind::kString || name.string_value() != metric) {
    return state_error(
        metric, absl::StrCat("'metric' is ", name.debug_string(), ", expected '", metric, "'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> read_count(const Structure& s, absl::string_view metric,
                                   absl::string_view key) {
  const Structure& v = s[sv(key)];
  if (v.kind() != Structure::Kind::kInt || v.int_value() < 0) {
    return state_error(metric,
                       absl::StrCat("'", key, "' is ", v.debug_string(), ", expected an int >= 0"));
  }
  return v.int_value();
}

absl::StatusOr<double> read_float(const Structure& s, absl::string_view metric,
                                  absl::string_view key, bool allow_non_finite) {
  const Structure& v = s[sv(key)];
  if (v.kind() != Structure::Kind::kFloat ||
      (!allow_non_finite && !std::isfinite(v.float_value()))) {
    return state_error(metric, absl::StrCat("'", key, "' is ", v.debug_string(),
                                            allow_non_finite ? ", expected a float"
                                                             : ", expected a finite float"));
  }
  return v.float_value();
}

absl::Status add_count(absl::string_view metric, int64_t add, int64_t* total) {
  int64_t sum = 0;
  if (__builtin_add_overflow(*total, add, &sum)) {
    return absl::OutOfRangeError(
        absl::StrCat("nn metric '", metric, "': count ", *total, " + ", add,
                     " overflows int64; reset() the metric or merge fewer partial states"));
  }
  *total = sum;
  return absl::OkStatus();
}

absl::Status check_correct_le_count(absl::string_view metric, int64_t correct, int64_t count) {
  if (correct <= count) return absl::OkStatus();
  return state_error(
      metric, absl::StrCat("'correct' is ", correct, ", expected at most 'count' (", count, ")"));
}

absl::Status check_binary_pair(absl::string_view fn, const Tensor& labels,
                               const Tensor& predictions) {
  PSFLOW_RETURN_IF_ERROR(check_float({fn, "predictions"}, predictions));
  switch (labels.dtype()) {
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt8:
    case DType::kBool: break;
    default:
      return arg_error(
          {fn, "labels"},
          absl::StrCat("has dtype ", labels.valid() ? av(dtype_name(labels.dtype())) : "invalid",
                       ", expected a numeric or bool dtype"));
  }
  const Shape& a = labels.shape();
  const Shape& b = predictions.shape();
  const bool column_pair = (a.size() == 1 && b.size() == 2 && b[1] == 1 && a[0] == b[0]) ||
                           (b.size() == 1 && a.size() == 2 && a[1] == 1 && a[0] == b[0]);
  if (a == b || column_pair) return absl::OkStatus();
  return arg_error({fn, "labels"},
                   absl::StrCat("has shape ", shape_string(a), ", expected ", shape_string(b),
                                " (the shape of 'predictions'; [N] and [N, 1] "
                                "also pair up)"));
}

absl::Status bad_binary_label(absl::string_view fn, double value, int64_t index) {
  return arg_error({fn, "labels"}, absl::StrCat("has value ", value, " at flat index ", index,
                                                ", expected 0 or 1"));
}

}  // namespace psflow::nn::internal

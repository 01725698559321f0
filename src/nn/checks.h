// Argument validation and dtype dispatch shared by the nn functions. Every
// error is INVALID_ARGUMENT and reads "nn::<fn>: '<arg>' <what was wrong>,
// expected <what is needed>".
#ifndef PSFLOW_NN_CHECKS_H_
#define PSFLOW_NN_CHECKS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "psflow/tensor.h"

namespace psflow::nn::internal {

// The name of the function and of the argument, for messages.
struct Arg {
  absl::string_view fn;
  absl::string_view name;
};

// "nn::fn: 'name' " followed by `detail`.
[[nodiscard]] absl::Status arg_error(const Arg& arg, absl::string_view detail);

// A class label outside [0, num_classes) at `index` of 'labels' of `fn`;
// `columns_of` names the argument whose columns are the classes.
[[nodiscard]] absl::Status bad_class_label(absl::string_view fn, int64_t label, size_t index,
                                           int64_t num_classes, absl::string_view columns_of);
// float32 or float64.
[[nodiscard]] absl::Status check_float(const Arg& arg, const Tensor& t);
// int32 or int64 (ids).
[[nodiscard]] absl::Status check_ids(const Arg& arg, const Tensor& t);
// int32, int64 or uint8 (class labels).
[[nodiscard]] absl::Status check_class_labels(const Arg& arg, const Tensor& t);
// Same dtype as `ref` (named `ref_name`).
[[nodiscard]] absl::Status check_same_dtype(const Arg& arg, const Tensor& t,
                                            absl::string_view ref_name, const Tensor& ref);
// Rank `rank`; `layout` ("[N, in]") describes the expected shape.
[[nodiscard]] absl::Status check_rank(const Arg& arg, const Tensor& t, int rank,
                                      absl::string_view layout);
// Exactly `expected`; `why` explains where the expectation comes from.
[[nodiscard]] absl::Status check_shape(const Arg& arg, const Tensor& t, const Shape& expected,
                                       absl::string_view why);

// Calls f(T{}) with T = float or double according to `dtype` (already
// checked by check_float), so one template body serves both.
template <typename F>
decltype(auto) visit_float(DType dtype, F&& f) {
  if (dtype == DType::kFloat64) return f(double{});
  return f(float{});
}

// As visit_float for int32 / int64 / uint8.
template <typename F>
decltype(auto) visit_int(DType dtype, F&& f) {
  if (dtype == DType::kInt64) return f(int64_t{});
  if (dtype == DType::kUInt8) return f(uint8_t{});
  return f(int32_t{});
}

}  // namespace psflow::nn::internal

#endif  // PSFLOW_NN_CHECKS_H_

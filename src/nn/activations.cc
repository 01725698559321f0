// Element-wise activations and their derivatives, as Eigen array
// expressions over the whole buffer.
#include "absl/strings/str_cat.h"
#include "nn/checks.h"
#include "nn/kernels.h"
#include "psflow/nn.h"
#include "psflow/status_macros.h"

namespace psflow::nn {
namespace {

// `dy` pairs element-wise with `ref` (named `ref_name`).
absl::Status check_pair(absl::string_view fn, absl::string_view ref_name, const Tensor& ref,
                        const Tensor& dy) {
  PSFLOW_RETURN_IF_ERROR(internal::check_float({fn, ref_name}, ref));
  PSFLOW_RETURN_IF_ERROR(internal::check_same_dtype({fn, "dy"}, dy, ref_name, ref));
  return internal::check_shape({fn, "dy"}, dy, ref.shape(),
                               absl::StrCat("the shape of '", ref_name, "'"));
}

template <typename T>
Tensor sigmoid_of(const Tensor& x) {
  Tensor y(x.dtype(), x.shape());
  auto Y = y.mutable_vec<T>();
  internal::stable_sigmoid<T>(x.vec<T>(), Y);
  return y;
}

}  // namespace

absl::StatusOr<Tensor> relu(const Tensor& x) {
  PSFLOW_RETURN_IF_ERROR(internal::check_float({"relu", "x"}, x));
  return internal::visit_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    Tensor y(x.dtype(), x.shape());
    y.mutable_vec<T>() = x.vec<T>().max(T(0));
    return y;
  });
}

absl::StatusOr<Tensor> relu_backward(const Tensor& y_or_x, const Tensor& dy) {
  PSFLOW_RETURN_IF_ERROR(check_pair("relu_backward", "y_or_x", y_or_x, dy));
  return internal::visit_float(dy.dtype(), [&](auto zero) {
    using T = decltype(zero);
    Tensor dx(dy.dtype(), dy.shape());
    dx.mutable_vec<T>() = (y_or_x.vec<T>() > T(0)).select(dy.vec<T>(), T(0));
    return dx;
  });
}

absl::StatusOr<Tensor> sigmoid(const Tensor& x) {
  PSFLOW_RETURN_IF_ERROR(internal::check_float({"sigmoid", "x"}, x));
  return internal::visit_float(x.dtype(), [&](auto zero) { return sigmoid_of<decltype(zero)>(x); });
}

absl::StatusOr<Tensor> sigmoid_backward(const Tensor& y, const Tensor& dy) {
  PSFLOW_RETURN_IF_ERROR(check_pair("sigmoid_backward", "y", y, dy));
  return internal::visit_float(dy.dtype(), [&](auto zero) {
    using T = decltype(zero);
    Tensor dx(dy.dtype(), dy.shape());
    const auto Y = y.vec<T>();
    dx.mutable_vec<T>() = dy.vec<T>() * Y * (T(1) - Y);
    return dx;
  });
}

}  // namespace psflow::nn

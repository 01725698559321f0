// Losses with their gradients w.r.t. the logits, plus softmax and argmax.
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "nn/checks.h"
#include "nn/kernels.h"
#include "psflow/nn.h"
#include "psflow/status_macros.h"

namespace psflow::nn {
namespace {

// x is a float [N, C] matrix.
absl::Status check_rows(absl::string_view fn, absl::string_view name, const Tensor& x,
                        absl::string_view layout) {
  PSFLOW_RETURN_IF_ERROR(internal::check_float({fn, name}, x));
  return internal::check_rank({fn, name}, x, 2, layout);
}

template <typename L>
absl::Status check_label_range(absl::string_view fn, const Tensor& labels, int64_t num_classes) {
  const auto flat = labels.flat<L>();
  for (size_t i = 0; i < flat.size(); ++i) {
    const int64_t label = static_cast<int64_t>(flat[i]);
    if (label < 0 || label >= num_classes) {
      return internal::bad_class_label(fn, label, i, num_classes, "logits");
    }
  }
  return absl::OkStatus();
}

template <typename T, typename L>
LossResult softmax_cross_entropy(const Tensor& logits, const Tensor& labels) {
  const int64_t n = logits.dim(0);
  LossResult r;
  r.probabilities = Tensor(logits.dtype(), logits.shape());
  r.d_logits = Tensor(logits.dtype(), logits.shape());
  if (n == 0) return r;
  const auto x = logits.matrix<T>();
  const auto y = labels.flat<L>();
  auto p = r.probabilities.mutable_matrix<T>();
  Eigen::Array<T, Eigen::Dynamic, 1> lse(n);
  internal::softmax_rows<T>(x, p, &lse);
  // loss_i = logsumexp(x_i) - x_i[y_i]; dloss/dx_i = (p_i - onehot(y_i)) / n.
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    total += static_cast<double>(lse(i) - x(i, static_cast<int64_t>(y[i])));
  }
  r.loss = total / static_cast<double>(n);
  auto g = r.d_logits.mutable_matrix<T>();
  const T inv_n = T(1) / static_cast<T>(n);
  g = p * inv_n;
  for (int64_t i = 0; i < n; ++i) g(i, static_cast<int64_t>(y[i])) -= inv_n;
  return r;
}

template <typename T, typename Z>
LossResult binary_cross_entropy(const Tensor& logits, const Tensor& labels) {
  const int64_t n = logits.num_elements();
  LossResult r;
  r.probabilities = Tensor(logits.dtype(), logits.shape());
  r.d_logits = Tensor(logits.dtype(), logits.shape());
  if (n == 0) return r;
  const auto x = logits.vec<T>();
  const auto z = labels.vec<Z>().template cast<T>();
  auto p = r.probabilities.mutable_vec<T>();
  internal::stable_sigmoid<T>(x, p);
  // max(x, 0) - x z + log(1 + exp(-|x|)): no overflow for any finite x.
  const double total =
      (x.max(T(0)) - x * z + (-x.abs()).exp().log1p()).template cast<double>().sum();
  r.loss = total / static_cast<double>(n);
  r.d_logits.mutable_vec<T>() = (p - z) * (T(1) / static_cast<T>(n));
  return r;
}

}  // namespace

absl::StatusOr<LossResult> sparse_softmax_cross_entropy(const Tensor& logits,
                                                        const Tensor& labels) {
  constexpr absl::string_view kFn = "sparse_softmax_cross_entropy";
  PSFLOW_RETURN_IF_ERROR(check_rows(kFn, "logits", logits, "[N, C]"));
  PSFLOW_RETURN_IF_ERROR(internal::check_class_labels({kFn, "labels"}, labels));
  PSFLOW_RETURN_IF_ERROR(internal::check_shape({kFn, "labels"}, labels, {logits.dim(0)},
                                               "one class id per row of 'logits'"));
  if (logits.dim(1) == 0 && logits.dim(0) > 0) {
    return internal::arg_error({kFn, "logits"},
                               absl::StrCat("has shape ", shape_string(logits.shape()),
                                            ", expected at least one class column"));
  }
  return internal::visit_int(labels.dtype(), [&](auto label_zero) -> absl::StatusOr<LossResult> {
    using L = decltype(label_zero);
    PSFLOW_RETURN_IF_ERROR(check_label_range<L>(kFn, labels, logits.dim(1)));
    return internal::visit_float(logits.dtype(), [&](auto zero) {
      return softmax_cross_entropy<decltype(zero), L>(logits, labels);
    });
  });
}

absl::StatusOr<LossResult> sigmoid_binary_cross_entropy(const Tensor& logits,
                                                        const Tensor& labels) {
  constexpr absl::string_view kFn = "sigmoid_binary_cross_entropy";
  PSFLOW_RETURN_IF_ERROR(internal::check_float({kFn, "logits"}, logits));
  if (!(logits.rank() == 1 || (logits.rank() == 2 && logits.dim(1) == 1))) {
    return internal::arg_error(
        {kFn, "logits"},
        absl::StrCat("has shape ", shape_string(logits.shape()), ", expected [N] or [N, 1]"));
  }
  PSFLOW_RETURN_IF_ERROR(internal::check_float({kFn, "labels"}, labels));
  PSFLOW_RETURN_IF_ERROR(
      internal::check_shape({kFn, "labels"}, labels, logits.shape(), "the shape of 'logits'"));
  return internal::visit_float(labels.dtype(), [&](auto label_zero) -> absl::StatusOr<LossResult> {
    using Z = decltype(label_zero);
    const auto z = labels.flat<Z>();
    for (size_t i = 0; i < z.size(); ++i) {
      if (!(z[i] >= Z(0) && z[i] <= Z(1))) {
        return internal::arg_error(
            {kFn, "labels"},
            absl::StrCat("has value ", z[i], " at index ", i, ", expected a value in [0, 1]"));
      }
    }
    return internal::visit_float(logits.dtype(), [&](auto zero) {
      return binary_cross_entropy<decltype(zero), Z>(logits, labels);
    });
  });
}

absl::StatusOr<Tensor> softmax(const Tensor& x) {
  PSFLOW_RETURN_IF_ERROR(check_rows("softmax", "x", x, "[N, C]"));
  return internal::visit_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    Tensor y(x.dtype(), x.shape());
    auto p = y.mutable_matrix<T>();
    internal::softmax_rows<T>(x.matrix<T>(), p, nullptr);
    return y;
  });
}

absl::StatusOr<Tensor> argmax_rows(const Tensor& x) {
  PSFLOW_RETURN_IF_ERROR(check_rows("argmax_rows", "x", x, "[N, C]"));
  if (x.dim(1) == 0 && x.dim(0) > 0) {
    return internal::arg_error(
        {"argmax_rows", "x"},
        absl::StrCat("has shape ", shape_string(x.shape()), ", expected at least one column"));
  }
  return internal::visit_float(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    Tensor out(DType::kInt64, {x.dim(0)});
    const auto m = x.matrix<T>();
    auto idx = out.mutable_flat<int64_t>();
    for (int64_t i = 0; i < m.rows(); ++i) {
      Eigen::Index col = 0;
      m.row(i).maxCoeff(&col);
      idx[i] = static_cast<int64_t>(col);
    }
    return out;
  });
}

}  // namespace psflow::nn

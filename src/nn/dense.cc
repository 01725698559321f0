// Dense layer forward and backward as Eigen GEMMs on the tensors' buffers
// (OpenBLAS's when built with PSFLOW_GEMM=openblas, cmake/psflow_gemm.cmake).
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "nn/checks.h"
#include "psflow/nn.h"
#include "psflow/status_macros.h"

#ifdef PSFLOW_OPENBLAS
extern "C" void openblas_set_num_threads(int num_threads);
#endif

namespace psflow::nn {
namespace {

// One GEMM thread per process unless OPENBLAS_NUM_THREADS says otherwise:
// a psflow task shares its host's cores with the other tasks and its own
// request threads, and OpenBLAS's default (a thread per core) would
// oversubscribe them.
void limit_gemm_threads() {
#ifdef PSFLOW_OPENBLAS
  static const bool once = [] {
    if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
#endif
}

// x [N, in] and w [in, out] agree; returns nothing else to check.
absl::Status check_x_w(absl::string_view fn, const Tensor& x, const Tensor& w) {
  PSFLOW_RETURN_IF_ERROR(internal::check_float({fn, "x"}, x));
  PSFLOW_RETURN_IF_ERROR(internal::check_rank({fn, "x"}, x, 2, "[N, in]"));
  PSFLOW_RETURN_IF_ERROR(internal::check_same_dtype({fn, "w"}, w, "x", x));
  PSFLOW_RETURN_IF_ERROR(internal::check_rank({fn, "w"}, w, 2, "[in, out]"));
  if (w.dim(0) != x.dim(1)) {
    return internal::arg_error(
        {fn, "w"}, absl::StrCat("has shape ", shape_string(w.shape()), ", expected [", x.dim(1),
                                ", out] (its rows must equal the columns of 'x' ",
                                shape_string(x.shape()), ")"));
  }
  return absl::OkStatus();
}

template <typename T>
Tensor forward(const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor y(x.dtype(), {x.dim(0), w.dim(1)});
  auto Y = y.mutable_matrix<T>();
  // Eigen's product with an empty inner dimension is not guaranteed to
  // write zeros; the tensor starts zero-filled, so skip it.
  if (x.dim(1) > 0) Y.noalias() = x.matrix<T>() * w.matrix<T>();
  Y.rowwise() += b.vec<T>().matrix().transpose();
  return y;
}

template <typename T>
DenseGradients backward(const Tensor& x, const Tensor& w, const Tensor& dy, bool need_dx) {
  DenseGradients g;
  const auto DY = dy.matrix<T>();
  g.dw = Tensor(x.dtype(), w.shape());
  if (x.dim(0) > 0) {
    g.dw.mutable_matrix<T>().noalias() = x.matrix<T>().transpose() * DY;
  }
  g.db = Tensor(x.dtype(), {w.dim(1)});
  if (x.dim(0) > 0) {
    g.db.mutable_vec<T>() = DY.colwise().sum().transpose().array();
  }
  if (need_dx) {
    g.dx = Tensor(x.dtype(), x.shape());
    if (w.dim(1) > 0) {
      g.dx.mutable_matrix<T>().noalias() = DY * w.matrix<T>().transpose();
    }
  }
  return g;
}

}  // namespace

absl::StatusOr<Tensor> dense_forward(const Tensor& x, const Tensor& w, const Tensor& b) {
  constexpr absl::string_view kFn = "dense_forward";
  limit_gemm_threads();
  PSFLOW_RETURN_IF_ERROR(check_x_w(kFn, x, w));
  PSFLOW_RETURN_IF_ERROR(internal::check_same_dtype({kFn, "b"}, b, "x", x));
  PSFLOW_RETURN_IF_ERROR(
      internal::check_shape({kFn, "b"}, b, {w.dim(1)}, "one bias per column of 'w'"));
  return internal::visit_float(x.dtype(), [&](auto t) { return forward<decltype(t)>(x, w, b); });
}

absl::StatusOr<DenseGradients> dense_backward(const Tensor& x, const Tensor& w, const Tensor& dy,
                                              bool need_dx) {
  constexpr absl::string_view kFn = "dense_backward";
  limit_gemm_threads();
  PSFLOW_RETURN_IF_ERROR(check_x_w(kFn, x, w));
  PSFLOW_RETURN_IF_ERROR(internal::check_same_dtype({kFn, "dy"}, dy, "x", x));
  PSFLOW_RETURN_IF_ERROR(
      internal::check_shape({kFn, "dy"}, dy, {x.dim(0), w.dim(1)}, "[N, out], the shape of y"));
  return internal::visit_float(x.dtype(),
                               [&](auto t) { return backward<decltype(t)>(x, w, dy, need_dx); });
}

}  // namespace psflow::nn

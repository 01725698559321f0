// Numerically careful element kernels shared by activations and losses.
#ifndef PSFLOW_NN_KERNELS_H_
#define PSFLOW_NN_KERNELS_H_

#include <Eigen/Core>

#include "psflow/tensor.h"

namespace psflow::nn::internal {

// y = sigmoid(x) element-wise; x and y may be the same array. With
// e = exp(-|x|), which never overflows, sigmoid is 1/(1+e) for x >= 0 and
// e/(1+e) below, accurate for very negative x.
template <typename T, typename In, typename Out>
void stable_sigmoid(const In& x, Out& y) {
  y = (-x.abs()).exp();
  y = (x >= T(0)).select(T(1) / (T(1) + y), y / (T(1) + y));
}

// Row-wise softmax of logits [N, C] into probs (same shape), with the row
// max subtracted first so exp never overflows. Also returns, per row,
// log(sum(exp(x - max))) + max (the log-sum-exp) in `lse` when non-null.
template <typename T>
void softmax_rows(const Tensor::ConstMat<T>& logits, Tensor::Mat<T>& probs,
                  Eigen::Array<T, Eigen::Dynamic, 1>* lse) {
  if (logits.cols() == 0) return;
  const Eigen::Array<T, Eigen::Dynamic, 1> row_max = logits.rowwise().maxCoeff().array();
  probs.array() = (logits.array().colwise() - row_max).exp();
  const Eigen::Array<T, Eigen::Dynamic, 1> sums = probs.rowwise().sum().array();
  probs.array().colwise() /= sums;
  if (lse != nullptr) *lse = sums.log() + row_max;
}

}  // namespace psflow::nn::internal

#endif  // PSFLOW_NN_KERNELS_H_

// The element-wise arithmetic of the server-side optimizers, for a dense
// span and for a set of scattered rows. Built once per x86-64 ISA level
// (baseline SSE2, AVX2 + FMA, AVX-512) and picked when the process loads,
// so one portable binary runs the widest vectors its CPU has; elsewhere
// one generic build. Results are bit-identical on every level: the kernels
// are element-wise (no reductions), built without floating-point
// contraction, and use only correctly rounded operations (+, -, *, /,
// sqrt) in a fixed order, so a model trains to the same values whichever
// ps machine holds a shard.
#ifndef PSFLOW_OPTIMIZER_OPTIMIZER_KERNELS_H_
#define PSFLOW_OPTIMIZER_OPTIMIZER_KERNELS_H_

#include <cstddef>
#include <cstdint>

#include "psflow/optimizer_config.h"

namespace psflow::internal {

// One apply's constants, in the variable's element type.
template <typename T>
struct UpdateCoefficients {
  OptimizerConfig::Kind kind = OptimizerConfig::Kind::kSgd;
  T lr = 0;
  T momentum = 0;
  bool nesterov = false;
  T epsilon = 0;
  T one_minus_beta_1 = 0;
  T one_minus_beta_2 = 0;
  T adam_lr = 0;  // bias-corrected Adam step size
  // FTRL.
  T l1 = 0;
  T l2 = 0;
  T beta = 0;
  T power = 0;               // -learning_rate_power
  bool square_root = false;  // learning_rate_power == -0.5
};

// Updates w[0, n) and its slots s0, s1 (null when the optimizer keeps
// fewer) with the gradient g[0, n). The four ranges do not overlap.
template <typename T>
void update_dense(const UpdateCoefficients<T>& k, T* w, T* s0, T* s1, const T* g, int64_t n);

// Updates rows ids[0, count) of a row-major [rows, row_size] variable and
// of its slots, row ids[u] with the gradient row grads[u] (row_size
// elements of T; untyped so that callers need not know T). Ids must be
// distinct and in range (the caller sums duplicates and checks them), and
// gradient rows do not overlap the variable or its slots.
template <typename T>
void update_rows(const UpdateCoefficients<T>& k, T* w, T* s0, T* s1, int64_t row_size,
                 const int64_t* ids, const void* const* grads, size_t count);

// The index of the first NaN or infinity in v[0, n), or -1 when every
// element is finite. Scans in blocks with the widest vectors the CPU has
// and looks for the index only in a block that holds one.
template <typename T>
[[nodiscard]] int64_t first_non_finite(const T* v, int64_t n);

}  // namespace psflow::internal

#endif  // PSFLOW_OPTIMIZER_OPTIMIZER_KERNELS_H_

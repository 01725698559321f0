#include "optimizer/optimizer_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/prefetch.h"

// This file is built with -ffp-contract=off and -fno-math-errno (see
// src/CMakeLists.txt): no fused multiply-adds, so every ISA level rounds
// alike, and sqrt without errno, so loops with it vectorize.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// One copy per ISA level, chosen by an ifunc resolver at load time.
#define PSFLOW_ISA_CLONES \
  __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define PSFLOW_ISA_CLONES
#endif

namespace psflow::internal {
namespace {

using Kind = OptimizerConfig::Kind;

// The update of n contiguous elements. Inlined into each ISA clone of its
// callers, where the compiler vectorizes it for that ISA; the order of
// operations is TF's and fixed (see the header).
template <Kind K, typename T>
[[gnu::always_inline]] inline void update_span(const UpdateCoefficients<T>& k, T* __restrict w,
                                               T* __restrict s0, T* __restrict s1,
                                               const T* __restrict g, int64_t n) {
  if constexpr (K == Kind::kSgd) {
    for (int64_t i = 0; i < n; ++i) w[i] -= k.lr * g[i];
  } else if constexpr (K == Kind::kMomentum) {
    // TF ApplyMomentum: accum = momentum * accum + g.
    if (k.nesterov) {
      const T lr_mom = k.lr * k.momentum;
      for (int64_t i = 0; i < n; ++i) {
        const T m = k.momentum * s0[i] + g[i];
        s0[i] = m;
        w[i] -= k.lr * g[i] + lr_mom * m;
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        const T m = k.momentum * s0[i] + g[i];
        s0[i] = m;
        w[i] -= k.lr * m;
      }
    }
  } else if constexpr (K == Kind::kAdagrad) {
    for (int64_t i = 0; i < n; ++i) {
      const T a = s0[i] + g[i] * g[i];
      s0[i] = a;
      w[i] -= k.lr * g[i] / (std::sqrt(a) + k.epsilon);
    }
  } else if constexpr (K == Kind::kAdam) {
    for (int64_t i = 0; i < n; ++i) {
      const T m = s0[i] + k.one_minus_beta_1 * (g[i] - s0[i]);
      const T v = s1[i] + k.one_minus_beta_2 * (g[i] * g[i] - s1[i]);
      s0[i] = m;
      s1[i] = v;
      w[i] -= k.adam_lr * m / (std::sqrt(v) + k.epsilon);
    }
  } else {
    static_assert(K == Kind::kFtrl);
    // TF ApplyFtrlV2 (no l2 shrinkage) plus Keras's `beta`.
    for (int64_t i = 0; i < n; ++i) {
      const T a = s0[i];
      const T new_acc = a + g[i] * g[i];
      const T new_pow = k.square_root ? std::sqrt(new_acc) : std::pow(new_acc, k.power);
      const T old_pow = k.square_root ? std::sqrt(a) : std::pow(a, k.power);
      const T l = s1[i] + (g[i] - (new_pow - old_pow) / k.lr * w[i]);
      const T quadratic = (new_pow + k.beta) / k.lr + T(2) * k.l2;
      const T sign = l > 0 ? T(1) : T(-1);
      w[i] = (l > k.l1 || l < -k.l1) ? (k.l1 * sign - l) / quadratic : T(0);
      s1[i] = l;
      s0[i] = new_acc;
    }
  }
}

template <Kind K, typename T>
[[gnu::always_inline]] inline void rows_loop(const UpdateCoefficients<T>& k, T* w, T* s0, T* s1,
                                             int64_t row_size, const int64_t* ids,
                                             const void* const* grads, size_t count) {
  const size_t row_bytes = static_cast<size_t>(row_size) * sizeof(T);
  for (size_t u = 0; u < count; ++u) {
    // Rows of a large table are main-memory round trips: ask for a later
    // row's lines while this one computes (ps/prefetch.h).
    if (u + kPrefetchRows < count) {
      const int64_t ahead = ids[u + kPrefetchRows] * row_size;
      prefetch_row(w + ahead, row_bytes, /*for_write=*/true);
      if (s0 != nullptr) prefetch_row(s0 + ahead, row_bytes, /*for_write=*/true);
      if (s1 != nullptr) prefetch_row(s1 + ahead, row_bytes, /*for_write=*/true);
    }
    const int64_t off = ids[u] * row_size;
    update_span<K, T>(k, w + off, s0 != nullptr ? s0 + off : nullptr,
                      s1 != nullptr ? s1 + off : nullptr, static_cast<const T*>(grads[u]),
                      row_size);
  }
}

}  // namespace

template <typename T>
PSFLOW_ISA_CLONES void update_dense(const UpdateCoefficients<T>& k, T* w, T* s0, T* s1, const T* g,
                                    int64_t n) {
  switch (k.kind) {
    case Kind::kSgd: return update_span<Kind::kSgd, T>(k, w, s0, s1, g, n);
    case Kind::kMomentum: return update_span<Kind::kMomentum, T>(k, w, s0, s1, g, n);
    case Kind::kAdagrad: return update_span<Kind::kAdagrad, T>(k, w, s0, s1, g, n);
    case Kind::kAdam: return update_span<Kind::kAdam, T>(k, w, s0, s1, g, n);
    case Kind::kFtrl: return update_span<Kind::kFtrl, T>(k, w, s0, s1, g, n);
  }
}

template <typename T>
PSFLOW_ISA_CLONES void update_rows(const UpdateCoefficients<T>& k, T* w, T* s0, T* s1,
                                   int64_t row_size, const int64_t* ids, const void* const* grads,
                                   size_t count) {
  switch (k.kind) {
    case Kind::kSgd: return rows_loop<Kind::kSgd, T>(k, w, s0, s1, row_size, ids, grads, count);
    case Kind::kMomentum:
      return rows_loop<Kind::kMomentum, T>(k, w, s0, s1, row_size, ids, grads, count);
    case Kind::kAdagrad:
      return rows_loop<Kind::kAdagrad, T>(k, w, s0, s1, row_size, ids, grads, count);
    case Kind::kAdam: return rows_loop<Kind::kAdam, T>(k, w, s0, s1, row_size, ids, grads, count);
    case Kind::kFtrl: return rows_loop<Kind::kFtrl, T>(k, w, s0, s1, row_size, ids, grads, count);
  }
}

namespace {

// The exponent bits of T: all set exactly in a NaN or an infinity.
template <typename T>
struct ExponentMask;
template <>
struct ExponentMask<float> {
  using Bits = uint32_t;
  static constexpr Bits kValue = 0x7f800000u;
};
template <>
struct ExponentMask<double> {
  using Bits = uint64_t;
  static constexpr Bits kValue = 0x7ff0000000000000ull;
};

}  // namespace

template <typename T>
PSFLOW_ISA_CLONES int64_t first_non_finite(const T* v, int64_t n) {
  using Bits = typename ExponentMask<T>::Bits;
  constexpr Bits kMask = ExponentMask<T>::kValue;
  constexpr int64_t kBlock = 2048;
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t end = std::min(n, start + kBlock);
    // Branch-free over the block, so that it vectorizes.
    Bits any = 0;
    for (int64_t i = start; i < end; ++i) {
      Bits bits;
      std::memcpy(&bits, v + i, sizeof(bits));
      any |= static_cast<Bits>((bits & kMask) == kMask);
    }
    if (any == 0) continue;
    for (int64_t i = start; i < end; ++i) {
      if (!std::isfinite(v[i])) return i;
    }
  }
  return -1;
}

template int64_t first_non_finite<float>(const float*, int64_t);
template int64_t first_non_finite<double>(const double*, int64_t);

template void update_dense<float>(const UpdateCoefficients<float>&, float*, float*, float*,
                                  const float*, int64_t);
template void update_dense<double>(const UpdateCoefficients<double>&, double*, double*, double*,
                                   const double*, int64_t);
template void update_rows<float>(const UpdateCoefficients<float>&, float*, float*, float*, int64_t,
                                 const int64_t*, const void* const*, size_t);
template void update_rows<double>(const UpdateCoefficients<double>&, double*, double*, double*,
                                  int64_t, const int64_t*, const void* const*, size_t);

}  // namespace psflow::internal

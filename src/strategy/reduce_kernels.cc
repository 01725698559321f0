#include "strategy/reduce_kernels.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "base/strings.h"
#include "psflow/status_macros.h"

namespace psflow::internal {
namespace {

std::string describe(const Tensor& t) {
  return absl::StrCat(av(dtype_name(t.dtype())), " ", shape_string(t.shape()));
}

// Calls fn(T{}) with T the C++ type of a reducible dtype.
template <typename Fn>
void dispatch(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat32: fn(float{}); return;
    case DType::kFloat64: fn(double{}); return;
    case DType::kInt32: fn(int32_t{}); return;
    case DType::kInt64: fn(int64_t{}); return;
    default: PSFLOW_CHECK(false, "not a reducible dtype: ", av(dtype_name(dtype)));
  }
}

template <typename T>
void sum_along_typed(const Tensor& in, Tensor* out, const std::vector<int64_t>& out_stride) {
  const absl::Span<const T> src = in.flat<T>();
  const absl::Span<T> dst = out->mutable_flat<T>();
  const Shape& shape = in.shape();
  const int rank = in.rank();
  std::vector<int64_t> index(shape.size(), 0);
  int64_t o = 0;
  for (size_t i = 0; i < src.size(); ++i) {
    dst[o] += src[i];
    for (int d = rank - 1; d >= 0; --d) {  // Row-major odometer.
      ++index[d];
      o += out_stride[d];
      if (index[d] < shape[d]) break;
      o -= out_stride[d] * shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace

bool is_reducible_dtype(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kInt32 ||
         dtype == DType::kInt64;
}

absl::Status check_reducible(DType dtype) {
  if (is_reducible_dtype(dtype)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("cannot reduce ", av(dtype_name(dtype)),
                   " tensors; reductions support float32, float64, int32 and int64"));
}

absl::StatusOr<Tensor> leaf_to_tensor(const Structure& leaf) {
  switch (leaf.kind()) {
    case Structure::Kind::kTensor: return leaf.tensor();
    case Structure::Kind::kInt: return Tensor::scalar<int64_t>(leaf.int_value());
    case Structure::Kind::kFloat: return Tensor::scalar<double>(leaf.float_value());
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("expected a tensor or a number, got ", leaf.debug_string()));
  }
}

absl::StatusOr<Tensor> add_replicas(absl::Span<const Tensor> tensors) {
  PSFLOW_CHECK(!tensors.empty());
  const Tensor& first = tensors[0];
  if (!first.valid()) return absl::InvalidArgumentError("replica 0 holds an invalid tensor");
  PSFLOW_RETURN_IF_ERROR(check_reducible(first.dtype()));
  for (size_t r = 1; r < tensors.size(); ++r) {
    if (tensors[r].dtype() != first.dtype() || tensors[r].shape() != first.shape()) {
      return absl::InvalidArgumentError(
          absl::StrCat("replica ", r, " has ", describe(tensors[r]), " but replica 0 has ",
                       describe(first), "; every replica needs the same dtype and shape"));
    }
  }
  Tensor out = first.clone();
  dispatch(first.dtype(), [&](auto zero) {
    using T = decltype(zero);
    auto acc = out.mutable_vec<T>();
    for (size_t r = 1; r < tensors.size(); ++r) acc += tensors[r].vec<T>();
  });
  return out;
}

absl::StatusOr<std::vector<int>> normalize_axes(absl::Span<const int> axes, int rank) {
  std::vector<int> out;
  out.reserve(axes.size());
  for (int axis : axes) {
    const int a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= rank) {
      return absl::InvalidArgumentError(
          absl::StrCat("`axis` = ", axis, " out of range for `value` with rank ", rank));
    }
    if (std::find(out.begin(), out.end(), a) != out.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("`axis` ", absl::StrJoin(axes, ", "), " names dimension ", a, " twice"));
    }
    out.push_back(a);
  }
  return out;
}

Tensor sum_along(const Tensor& t, absl::Span<const int> axes) {
  const Shape& shape = t.shape();
  std::vector<bool> reduced(shape.size(), false);
  for (int a : axes) reduced[a] = true;
  Shape out_shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) out_shape.push_back(shape[d]);
  }
  std::vector<int64_t> out_stride(shape.size(), 0);
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (reduced[d]) continue;
    out_stride[d] = stride;
    stride *= shape[d];
  }
  Tensor out(t.dtype(), out_shape);
  dispatch(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    sum_along_typed<T>(t, &out, out_stride);
  });
  return out;
}

int64_t axes_size(const Shape& shape, absl::Span<const int> axes) {
  int64_t n = 1;
  for (int a : axes) n *= shape[a];
  return n;
}

Tensor divide(const Tensor& t, double denominator) {
  if (t.dtype() == DType::kFloat32) {
    Tensor out(DType::kFloat32, t.shape());
    out.mutable_vec<float>() = t.vec<float>() / static_cast<float>(denominator);
    return out;
  }
  Tensor out(DType::kFloat64, t.shape());
  auto dst = out.mutable_flat<double>();
  dispatch(t.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const auto src = t.flat<T>();
    for (size_t i = 0; i < src.size(); ++i) dst[i] = static_cast<double>(src[i]) / denominator;
  });
  return out;
}

absl::StatusOr<Tensor> concat_replicas(absl::Span<const Tensor> tensors, int axis) {
  PSFLOW_CHECK(!tensors.empty());
  const Tensor& first = tensors[0];
  if (!first.valid()) return absl::InvalidArgumentError("replica 0 holds an invalid tensor");
  const int rank = first.rank();
  if (rank == 0) {
    return absl::InvalidArgumentError(absl::StrCat("cannot gather rank-0 values (replica 0 has ",
                                                   describe(first),
                                                   "); add a dimension first (tf.expand_dims)"));
  }
  if (axis < 0 || axis >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("`axis` = ", axis, " out of range [0, ", rank, ") for values of rank ", rank));
  }
  Shape out_shape = first.shape();
  out_shape[axis] = 0;
  for (size_t r = 0; r < tensors.size(); ++r) {
    const Tensor& t = tensors[r];
    bool match = t.dtype() == first.dtype() && t.rank() == rank;
    for (int d = 0; match && d < rank; ++d) {
      match = d == axis || t.shape()[d] == first.shape()[d];
    }
    if (!match) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cannot gather along axis ", axis, ": replica ", r, " has ", describe(t),
          " but replica 0 has ", describe(first), "; values need the same dtype and rank and ",
          "may differ only in dimension ", axis));
    }
    out_shape[axis] += t.shape()[axis];
  }
  Tensor out(first.dtype(), out_shape);
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= first.shape()[d];
  int64_t inner = 1;  // Elements per unit of `axis`.
  for (int d = axis + 1; d < rank; ++d) inner *= first.shape()[d];
  const bool strings = first.dtype() == DType::kString;
  const size_t width = dtype_size(first.dtype());
  int64_t pos = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor& t : tensors) {
      const int64_t block = t.shape()[axis] * inner;
      const int64_t from = o * block;
      if (strings) {
        for (int64_t i = 0; i < block; ++i) out.mutable_string_at(pos + i) = t.string_at(from + i);
      } else if (block > 0) {
        std::memcpy(static_cast<uint8_t*>(out.mutable_raw_data()) + pos * width,
                    static_cast<const uint8_t*>(t.raw_data()) + from * width,
                    static_cast<size_t>(block) * width);
      }
      pos += block;
    }
  }
  return out;
}

}  // namespace psflow::internal

// Embedding lookups, their row-sparse gradient, and bag combiners.
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "nn/checks.h"
#include "psflow/nn.h"
#include "psflow/status_macros.h"

namespace psflow::nn {
namespace {

// Row-major [rows, cols] view of a tensor's elements whatever its rank.
template <typename T>
Tensor::ConstMat<T> rows_of(const Tensor& t, int64_t rows, int64_t cols) {
  return Tensor::ConstMat<T>(t.flat<T>().data(), rows, cols);
}
template <typename T>
Tensor::Mat<T> mutable_rows_of(Tensor& t, int64_t rows, int64_t cols) {
  return Tensor::Mat<T>(t.mutable_flat<T>().data(), rows, cols);
}

// Distinct ids in order of first occurrence, and where each element of
// `ids` landed among them.
struct Dedup {
  std::vector<int64_t> unique;
  std::vector<int64_t> position;
};

template <typename I>
Dedup dedup(const Tensor& ids) {
  const auto flat = ids.flat<I>();
  Dedup d;
  d.position.resize(flat.size());
  absl::flat_hash_map<int64_t, int64_t> slot;
  slot.reserve(flat.size());
  for (size_t i = 0; i < flat.size(); ++i) {
    const int64_t id = static_cast<int64_t>(flat[i]);
    const auto [it, inserted] = slot.try_emplace(id, static_cast<int64_t>(d.unique.size()));
    if (inserted) d.unique.push_back(id);
    d.position[i] = it->second;
  }
  return d;
}

Dedup dedup_any(const Tensor& ids) {
  return ids.dtype() == DType::kInt64 ? dedup<int64_t>(ids) : dedup<int32_t>(ids);
}

// Optional bag weights: invalid means all ones; otherwise [N, L] of the
// embeddings' dtype, finite and >= 0.
absl::Status check_weights(absl::string_view fn, const Tensor& weights, const Tensor& ref,
                           absl::string_view ref_name, int64_t n, int64_t bag_size) {
  if (!weights.valid()) return absl::OkStatus();
  PSFLOW_RETURN_IF_ERROR(internal::check_same_dtype({fn, "weights"}, weights, ref_name, ref));
  PSFLOW_RETURN_IF_ERROR(internal::check_shape({fn, "weights"}, weights, {n, bag_size},
                                               "[N, L], one weight per bag slot"));
  return internal::visit_float(weights.dtype(), [&](auto zero) -> absl::Status {
    using T = decltype(zero);
    const auto w = weights.flat<T>();
    for (size_t i = 0; i < w.size(); ++i) {
      if (!(std::isfinite(w[i]) && w[i] >= T(0))) {
        return internal::arg_error({fn, "weights"},
                                   absl::StrCat("has value ", w[i], " at flat index ", i,
                                                ", expected a finite value >= 0"));
      }
    }
    return absl::OkStatus();
  });
}

// Per bag n, the factor each slot's weight is divided by: sum of weights
// for kMean (1 when that sum is 0, whose rows are all zero anyway), else 1.
template <typename T>
Eigen::Array<T, Eigen::Dynamic, 1> bag_divisors(const Tensor& weights, Combiner combiner, int64_t n,
                                                int64_t bag_size) {
  Eigen::Array<T, Eigen::Dynamic, 1> div = Eigen::Array<T, Eigen::Dynamic, 1>::Ones(n);
  if (combiner != Combiner::kMean) return div;
  if (!weights.valid()) {
    if (bag_size > 0) div.setConstant(static_cast<T>(bag_size));
    return div;
  }
  const auto w = weights.matrix<T>();
  for (int64_t i = 0; i < n; ++i) {
    const T s = w.row(i).sum();
    if (s > T(0)) div(i) = s;
  }
  return div;
}

}  // namespace

absl::StatusOr<UniqueIds> unique_ids(const Tensor& ids) {
  PSFLOW_RETURN_IF_ERROR(internal::check_ids({"unique_ids", "ids"}, ids));
  Dedup d = dedup_any(ids);
  UniqueIds out;
  out.values = Tensor::from_vector(d.unique);
  out.index = Tensor(DType::kInt64, ids.shape());
  if (!d.position.empty()) {
    out.index.mutable_vec<int64_t>() = Eigen::Map<const Eigen::Array<int64_t, Eigen::Dynamic, 1>>(
        d.position.data(), static_cast<Eigen::Index>(d.position.size()));
  }
  return out;
}

absl::StatusOr<Tensor> embedding_lookup(const Tensor& params, const Tensor& ids) {
  constexpr absl::string_view kFn = "embedding_lookup";
  PSFLOW_RETURN_IF_ERROR(internal::check_float({kFn, "params"}, params));
  PSFLOW_RETURN_IF_ERROR(internal::check_rank({kFn, "params"}, params, 2, "[V, dim]"));
  PSFLOW_RETURN_IF_ERROR(internal::check_ids({kFn, "ids"}, ids));
  const int64_t vocab = params.dim(0);
  const int64_t dim = params.dim(1);
  Shape out_shape = ids.shape();
  out_shape.push_back(dim);
  PSFLOW_ASSIGN_OR_RETURN(Tensor out, Tensor::create(params.dtype(), out_shape));
  return internal::visit_float(params.dtype(), [&](auto zero) -> absl::StatusOr<Tensor> {
    using T = decltype(zero);
    const auto p = params.matrix<T>();
    auto o = mutable_rows_of<T>(out, ids.num_elements(), dim);
    return internal::visit_int(ids.dtype(), [&](auto id_zero) -> absl::StatusOr<Tensor> {
      const auto flat = ids.flat<decltype(id_zero)>();
      for (size_t i = 0; i < flat.size(); ++i) {
        const int64_t id = static_cast<int64_t>(flat[i]);
        if (id < 0 || id >= vocab) {
          return internal::arg_error({kFn, "ids"}, absl::StrCat("has value ", id, " at flat index ",
                                                                i, ", expected an id in [0, ",
                                                                vocab, ") (the rows of 'params')"));
        }
        o.row(static_cast<Eigen::Index>(i)) = p.row(id);
      }
      return out;
    });
  });
}

absl::StatusOr<SparseGradient> embedding_backward(const Tensor& ids, const Tensor& d_out) {
  constexpr absl::string_view kFn = "embedding_backward";
  PSFLOW_RETURN_IF_ERROR(internal::check_ids({kFn, "ids"}, ids));
  PSFLOW_RETURN_IF_ERROR(internal::check_float({kFn, "d_out"}, d_out));
  if (d_out.rank() != ids.rank() + 1) {
    return internal::arg_error(
        {kFn, "d_out"},
        absl::StrCat("has shape ", shape_string(d_out.shape()), ", expected the shape of 'ids' ",
                     shape_string(ids.shape()), " plus a trailing embedding dimension"));
  }
  Shape expected = ids.shape();
  expected.push_back(d_out.dim(-1));
  PSFLOW_RETURN_IF_ERROR(internal::check_shape(
      {kFn, "d_out"}, d_out, expected, "the shape of 'ids' plus a trailing embedding dimension"));
  const int64_t dim = d_out.dim(-1);
  const Dedup d = dedup_any(ids);
  const int64_t n = static_cast<int64_t>(d.unique.size());
  SparseGradient g;
  g.indices = Tensor::from_vector(d.unique);
  g.values = Tensor(d_out.dtype(), {n, dim});
  internal::visit_float(d_out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const auto src = rows_of<T>(d_out, ids.num_elements(), dim);
    auto dst = g.values.mutable_matrix<T>();
    for (size_t i = 0; i < d.position.size(); ++i) {
      dst.row(d.position[i]) += src.row(static_cast<Eigen::Index>(i));
    }
  });
  return g;
}

absl::StatusOr<Tensor> embedding_combine(const Tensor& embeddings, Combiner combiner,
                                         const Tensor& weights) {
  constexpr absl::string_view kFn = "embedding_combine";
  PSFLOW_RETURN_IF_ERROR(internal::check_float({kFn, "embeddings"}, embeddings));
  PSFLOW_RETURN_IF_ERROR(internal::check_rank({kFn, "embeddings"}, embeddings, 3, "[N, L, dim]"));
  const int64_t n = embeddings.dim(0);
  const int64_t bag = embeddings.dim(1);
  const int64_t dim = embeddings.dim(2);
  PSFLOW_RETURN_IF_ERROR(check_weights(kFn, weights, embeddings, "embeddings", n, bag));
  return internal::visit_float(embeddings.dtype(), [&](auto zero) {
    using T = decltype(zero);
    Tensor out(embeddings.dtype(), {n, dim});
    if (bag == 0 || dim == 0) return out;
    const auto e = rows_of<T>(embeddings, n * bag, dim);
    auto o = out.mutable_matrix<T>();
    const auto div = bag_divisors<T>(weights, combiner, n, bag);
    for (int64_t i = 0; i < n; ++i) {
      const auto block = e.middleRows(i * bag, bag);
      if (weights.valid()) {
        o.row(i).noalias() = weights.matrix<T>().row(i) * block;
      } else {
        o.row(i) = block.colwise().sum();
      }
    }
    if (combiner == Combiner::kMean) o.array().colwise() /= div;
    return out;
  });
}

absl::StatusOr<Tensor> embedding_combine_backward(const Tensor& d_combined, int64_t bag_size,
                                                  Combiner combiner, const Tensor& weights) {
  constexpr absl::string_view kFn = "embedding_combine_backward";
  PSFLOW_RETURN_IF_ERROR(internal::check_float({kFn, "d_combined"}, d_combined));
  PSFLOW_RETURN_IF_ERROR(internal::check_rank({kFn, "d_combined"}, d_combined, 2, "[N, dim]"));
  if (bag_size < 0) {
    return internal::arg_error({kFn, "bag_size"},
                               absl::StrCat("is ", bag_size, ", expected L >= 0 (the bag length)"));
  }
  const int64_t n = d_combined.dim(0);
  const int64_t dim = d_combined.dim(1);
  PSFLOW_RETURN_IF_ERROR(check_weights(kFn, weights, d_combined, "d_combined", n, bag_size));
  absl::StatusOr<Tensor> created = Tensor::create(d_combined.dtype(), {n, bag_size, dim});
  if (!created.ok()) {
    return internal::arg_error(
        {kFn, "bag_size"},
        absl::StrCat("is ", bag_size, ", too large: ", created.status().message()));
  }
  Tensor out = *std::move(created);
  internal::visit_float(d_combined.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if (bag_size == 0 || dim == 0) return;
    const auto dy = d_combined.matrix<T>();
    auto de = mutable_rows_of<T>(out, n * bag_size, dim);
    const auto div = bag_divisors<T>(weights, combiner, n, bag_size);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t l = 0; l < bag_size; ++l) {
        const T w = weights.valid() ? weights.matrix<T>()(i, l) : T(1);
        de.row(i * bag_size + l) = dy.row(i) * (w / div(i));
      }
    }
  });
  return out;
}

}  // namespace psflow::nn

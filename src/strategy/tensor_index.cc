// get_item: NumPy indexing of a dense tensor (TF's Tensor.__getitem__).
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/status_macros.h"
#include "strategy/tensor_index_impl.h"

namespace psflow {
namespace internal {
namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

bool is_mask(const TensorIndex& i) { return std::holds_alternative<Tensor>(i.value()); }

std::vector<int64_t> full_range(int64_t n) {
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = i;
  return out;
}

// Element strides of a row-major shape.
std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

void copy_element(const Tensor& src, int64_t from, Tensor& dst, int64_t to, size_t bytes) {
  if (src.dtype() == DType::kString) {
    dst.mutable_string_at(to) = src.string_at(from);
    return;
  }
  std::memcpy(static_cast<uint8_t*>(dst.mutable_raw_data()) + static_cast<size_t>(to) * bytes,
              static_cast<const uint8_t*>(src.raw_data()) + static_cast<size_t>(from) * bytes,
              bytes);
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> slice_positions(const Slice& s, int64_t n) {
  const int64_t step = s.step.value_or(1);
  if (step == 0) return absl::InvalidArgumentError("slice step cannot be zero");
  // CPython's PySlice_AdjustIndices.
  auto adjust = [&](std::optional<int64_t> bound, int64_t if_unset) {
    if (!bound.has_value()) return if_unset;
    int64_t b = *bound;
    if (b < 0) {
      b += n;
      if (b < 0) b = step < 0 ? -1 : 0;
    } else if (b >= n) {
      b = step < 0 ? n - 1 : n;
    }
    return b;
  };
  const int64_t start = adjust(s.start, step < 0 ? n - 1 : 0);
  const int64_t stop = adjust(s.stop, step < 0 ? -1 : n);
  std::vector<int64_t> out;
  if (step > 0) {
    for (int64_t i = start; i < stop; i += step) out.push_back(i);
  } else {
    for (int64_t i = start; i > stop; i += step) out.push_back(i);
  }
  return out;
}

Shape ResolvedIndex::result_shape() const {
  Shape out;
  for (const ResolvedAxis& a : axes) {
    if (a.kind == ResolvedAxis::Kind::kRange) out.push_back(static_cast<int64_t>(a.indices.size()));
    if (a.kind == ResolvedAxis::Kind::kNewAxis) out.push_back(1);
  }
  return out;
}

absl::StatusOr<ResolvedIndex> resolve_index(const Shape& shape,
                                            const std::vector<TensorIndex>& index,
                                            std::string_view who) {
  const int rank = static_cast<int>(shape.size());
  int consuming = 0;  // elements that index an input dimension
  int ellipses = 0;
  for (const TensorIndex& i : index) {
    if (is_mask(i)) {
      return absl::InvalidArgumentError(
          absl::StrCat(av(who),
                       "using Tensor for indexing is not allowed (a bool mask must be the whole "
                       "index)"));
    }
    if (std::holds_alternative<int64_t>(i.value()) || std::holds_alternative<Slice>(i.value())) {
      ++consuming;
    }
    if (std::holds_alternative<Ellipsis>(i.value())) ++ellipses;
  }
  if (ellipses > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(av(who), "Multiple ellipses in slice spec not allowed"));
  }
  if (consuming > rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        av(who), "Index out of range using input dim ", rank, "; input has only ", rank,
        " dims (index ", consuming, " dimensions of shape ", shape_string(shape), ")"));
  }
  ResolvedIndex out;
  int axis = 0;
  auto full = [&](int a) {
    out.axes.push_back({ResolvedAxis::Kind::kRange, a, full_range(shape[static_cast<size_t>(a)])});
  };
  for (const TensorIndex& i : index) {
    absl::Status status = std::visit(
        Overloaded{
            [&](int64_t v) -> absl::Status {
              const int64_t n = shape[static_cast<size_t>(axis)];
              const int64_t p = v < 0 ? v + n : v;
              if (p < 0 || p >= n) {
                return absl::InvalidArgumentError(absl::StrCat(
                    av(who), "slice index ", v, " of dimension ", axis, " out of bounds."));
              }
              out.axes.push_back({ResolvedAxis::Kind::kInteger, axis++, {p}});
              return absl::OkStatus();
            },
            [&](const Slice& s) -> absl::Status {
              absl::StatusOr<std::vector<int64_t>> positions =
                  slice_positions(s, shape[static_cast<size_t>(axis)]);
              if (!positions.ok()) {
                return absl::InvalidArgumentError(
                    absl::StrCat(av(who), positions.status().message()));
              }
              out.axes.push_back({ResolvedAxis::Kind::kRange, axis++, *std::move(positions)});
              return absl::OkStatus();
            },
            [&](NewAxis) -> absl::Status {
              out.axes.push_back({ResolvedAxis::Kind::kNewAxis, -1, {}});
              return absl::OkStatus();
            },
            [&](Ellipsis) -> absl::Status {
              for (int k = 0; k < rank - consuming; ++k) full(axis++);
              return absl::OkStatus();
            },
            [&](const Tensor&) -> absl::Status { return absl::OkStatus(); },
        },
        i.value());
    PSFLOW_RETURN_IF_ERROR(status);
  }
  while (axis < rank) full(axis++);
  return out;
}

Tensor take_elements(const Tensor& x, const ResolvedIndex& r) {
  Tensor out(x.dtype(), r.result_shape());
  const std::vector<int64_t> strides = strides_of(x.shape());
  // Only the axes that read the input matter for the source offset; new
  // axes have one position and no stride.
  std::vector<const ResolvedAxis*> reading;
  int64_t base = 0;
  for (const ResolvedAxis& a : r.axes) {
    if (a.kind == ResolvedAxis::Kind::kInteger) {
      base += a.indices[0] * strides[static_cast<size_t>(a.input_axis)];
    } else if (a.kind == ResolvedAxis::Kind::kRange) {
      reading.push_back(&a);
    }
  }
  const int64_t count = out.num_elements();
  if (count == 0) return out;
  const size_t bytes = x.dtype() == DType::kString ? 0 : dtype_size(x.dtype());
  std::vector<size_t> pos(reading.size(), 0);
  for (int64_t e = 0; e < count; ++e) {
    int64_t from = base;
    for (size_t k = 0; k < reading.size(); ++k) {
      from += reading[k]->indices[pos[k]] * strides[static_cast<size_t>(reading[k]->input_axis)];
    }
    copy_element(x, from, out, e, bytes);
    for (size_t k = reading.size(); k-- > 0;) {
      if (++pos[k] < reading[k]->indices.size()) break;
      pos[k] = 0;
    }
  }
  return out;
}

absl::StatusOr<Tensor> boolean_mask(const Tensor& x, const Tensor& mask) {
  if (mask.dtype() != DType::kBool) {
    return absl::InvalidArgumentError(
        absl::StrCat("using Tensor for indexing is not allowed: only a bool mask may index, got ",
                     av(dtype_name(mask.dtype())), " ", shape_string(mask.shape())));
  }
  if (mask.rank() == 0) return absl::InvalidArgumentError("mask cannot be scalar.");
  const bool leading = mask.rank() <= x.rank() &&
                       std::equal(mask.shape().begin(), mask.shape().end(), x.shape().begin());
  if (!leading) {
    return absl::InvalidArgumentError(
        absl::StrCat("Shapes ", shape_string(x.shape()), " and ", shape_string(mask.shape()),
                     " are incompatible: the mask's shape must equal the leading dimensions of "
                     "the indexed value"));
  }
  int64_t inner = 1;
  for (int d = mask.rank(); d < x.rank(); ++d) inner *= x.dim(d);
  const auto flags = mask.flat<bool>();
  int64_t selected = 0;
  for (bool f : flags) selected += f ? 1 : 0;
  Shape shape{selected};
  shape.insert(shape.end(), x.shape().begin() + mask.rank(), x.shape().end());
  Tensor out(x.dtype(), std::move(shape));
  const size_t bytes = x.dtype() == DType::kString ? 0 : dtype_size(x.dtype());
  int64_t to = 0;
  for (size_t i = 0; i < flags.size(); ++i) {
    if (!flags[i]) continue;
    for (int64_t j = 0; j < inner; ++j) {
      copy_element(x, static_cast<int64_t>(i) * inner + j, out, to++, bytes);
    }
  }
  return out;
}

}  // namespace internal

absl::StatusOr<Tensor> get_item(const Tensor& x, const std::vector<TensorIndex>& index) {
  if (!x.valid()) {
    return absl::InvalidArgumentError("get_item on an invalid (default-constructed) Tensor");
  }
  if (index.size() == 1 && std::holds_alternative<Tensor>(index[0].value())) {
    return internal::boolean_mask(x, std::get<Tensor>(index[0].value()));
  }
  PSFLOW_ASSIGN_OR_RETURN(internal::ResolvedIndex r, internal::resolve_index(x.shape(), index, ""));
  return internal::take_elements(x, r);
}

}  // namespace psflow

// Tensor::debug_string and all_close: the text views of tensors.
#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/tensor.h"
#include "tensor/format.h"

namespace psflow {

using internal::av;

namespace {

// numpy's summarisation: the first and last kEdgeItems of long dimensions.
constexpr int64_t kEdgeItems = 3;

void append_element(std::string* out, const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32: internal::append_shortest(out, t.flat<float>()[i]); return;
    case DType::kFloat64: internal::append_shortest(out, t.flat<double>()[i]); return;
    case DType::kInt32: absl::StrAppend(out, t.flat<int32_t>()[i]); return;
    case DType::kInt64: absl::StrAppend(out, t.flat<int64_t>()[i]); return;
    case DType::kUInt8: absl::StrAppend(out, static_cast<int>(t.flat<uint8_t>()[i])); return;
    case DType::kBool: out->append(t.flat<bool>()[i] ? "True" : "False"); return;
    case DType::kString: internal::append_python_string(out, t.string_at(i)); return;
    case DType::kInvalid: return;
  }
}

void append_dims(std::string* out, const Tensor& t, size_t axis, int64_t base, bool summarize) {
  const Shape& shape = t.shape();
  int64_t stride = 1;
  for (size_t a = axis + 1; a < shape.size(); ++a) stride *= shape[a];
  const int64_t n = shape[axis];
  const bool elide = summarize && n > 2 * kEdgeItems;
  out->push_back('[');
  for (int64_t i = 0; i < n; ++i) {
    if (elide && i == kEdgeItems) {
      out->append(", ...");
      i = n - kEdgeItems;
    }
    if (i > 0) out->append(", ");
    if (axis + 1 == shape.size()) {
      append_element(out, t, base + i);
    } else {
      append_dims(out, t, axis + 1, base + i * stride, summarize);
    }
  }
  out->push_back(']');
}

std::string index_string(const Shape& shape, int64_t flat) {
  Shape index(shape.size());
  for (size_t axis = shape.size(); axis-- > 0;) {
    index[axis] = flat % shape[axis];
    flat /= shape[axis];
  }
  return shape_string(index);
}

template <typename T>
absl::Status float_all_close(const Tensor& a, const Tensor& b, double rtol, double atol) {
  const absl::Span<const T> x = a.flat<T>();
  const absl::Span<const T> y = b.flat<T>();
  for (size_t i = 0; i < x.size(); ++i) {
    const double u = x[i];
    const double v = y[i];
    if (u == v) continue;  // Also equal infinities.
    if (std::fabs(u - v) <= atol + rtol * std::fabs(v)) continue;
    std::string msg =
        absl::StrCat("at index ", index_string(a.shape(), static_cast<int64_t>(i)), ": ");
    internal::append_shortest(&msg, x[i]);
    msg.append(" vs ");
    internal::append_shortest(&msg, y[i]);
    absl::StrAppend(&msg, " (rtol ", rtol, ", atol ", atol, ")");
    return absl::InvalidArgumentError(msg);
  }
  return absl::OkStatus();
}

absl::Status exact_all_close(const Tensor& a, const Tensor& b) {
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    std::string x;
    std::string y;
    append_element(&x, a, i);
    append_element(&y, b, i);
    bool same = x == y;
    if (a.dtype() == DType::kString) same = a.string_at(i) == b.string_at(i);
    if (!same) {
      return absl::InvalidArgumentError(
          absl::StrCat("at index ", index_string(a.shape(), i), ": ", x, " vs ", y));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string Tensor::debug_string(int64_t max_elements) const {
  if (!valid()) return "Tensor<invalid>";
  std::string out =
      absl::StrCat("Tensor<", av(dtype_name(dtype_)), ", ", shape_string(shape_), "> ");
  if (rank() == 0) {
    append_element(&out, *this, 0);
  } else {
    append_dims(&out, *this, 0, 0, num_elements_ > max_elements);
  }
  return out;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.debug_string(); }

absl::Status all_close(const Tensor& a, const Tensor& b, double rtol, double atol) {
  if (a.dtype() != b.dtype()) {
    return absl::InvalidArgumentError(
        absl::StrCat("dtype ", av(dtype_name(a.dtype())), " vs ", av(dtype_name(b.dtype()))));
  }
  if (a.shape() != b.shape()) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape ", shape_string(a.shape()), " vs ", shape_string(b.shape())));
  }
  switch (a.dtype()) {
    case DType::kInvalid: return absl::OkStatus();
    case DType::kFloat32: return float_all_close<float>(a, b, rtol, atol);
    case DType::kFloat64: return float_all_close<double>(a, b, rtol, atol);
    default: return a == b ? absl::OkStatus() : exact_all_close(a, b);
  }
}

}  // namespace psflow

#include "psflow/tensor.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "base/strings.h"
#include "psflow/status_macros.h"
#include "tensor/tensor_internal.h"

namespace psflow {

using internal::av;

namespace {

// Product of the dimensions with zeros counted as one; error on a negative
// dimension or overflow.
absl::StatusOr<int64_t> nonzero_product(const Shape& shape) {
  int64_t product = 1;
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    const int64_t d = shape[axis];
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape ", shape_string(shape), " has negative dimension ", d, " at axis ", axis));
    }
    if (d != 0 && __builtin_mul_overflow(product, d, &product)) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape ", shape_string(shape), " has more elements than int64 can count"));
    }
  }
  return product;
}

bool has_zero_dim(const Shape& shape) {
  for (const int64_t d : shape) {
    if (d == 0) return true;
  }
  return false;
}

}  // namespace

namespace internal {

absl::StatusOr<int64_t> validate_shape(DType dtype, const Shape& shape) {
  if (!is_valid_dtype(static_cast<int>(dtype))) {
    return absl::InvalidArgumentError(absl::StrCat("invalid dtype ", static_cast<int>(dtype)));
  }
  PSFLOW_ASSIGN_OR_RETURN(const int64_t product, nonzero_product(shape));
  const auto element_size = static_cast<int64_t>(dtype_size(dtype));
  if (element_size > 0 && product > std::numeric_limits<int64_t>::max() / element_size) {
    return absl::InvalidArgumentError(absl::StrCat("shape ", shape_string(shape), " of ",
                                                   av(dtype_name(dtype)),
                                                   " needs more bytes than int64 can count"));
  }
  return has_zero_dim(shape) ? 0 : product;
}

}  // namespace internal

int64_t num_elements(const Shape& shape) {
  absl::StatusOr<int64_t> n = checked_num_elements(shape);
  PSFLOW_CHECK(n.ok(), n.status().ToString());
  return *n;
}

absl::StatusOr<int64_t> checked_num_elements(const Shape& shape) {
  PSFLOW_ASSIGN_OR_RETURN(const int64_t product, nonzero_product(shape));
  return has_zero_dim(shape) ? 0 : product;
}

std::string shape_string(const Shape& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

Tensor::Tensor(DType dtype, Shape shape) {
  absl::StatusOr<int64_t> n = internal::validate_shape(dtype, shape);
  PSFLOW_CHECK(n.ok(), n.status().ToString());
  dtype_ = dtype;
  shape_ = std::move(shape);
  num_elements_ = *n;
  if (dtype == DType::kString) {
    strings_ = std::make_shared<std::vector<std::string>>(static_cast<size_t>(num_elements_));
  } else {
    buffer_ = TensorBuffer::allocate(byte_size());
  }
}

absl::StatusOr<Tensor> Tensor::create(DType dtype, Shape shape) {
  PSFLOW_RETURN_IF_ERROR(internal::validate_shape(dtype, shape).status());
  return Tensor(dtype, std::move(shape));
}

absl::StatusOr<Tensor> Tensor::from_buffer(DType dtype, Shape shape,
                                           std::shared_ptr<TensorBuffer> buffer,
                                           size_t byte_offset) {
  if (dtype == DType::kString) {
    return absl::InvalidArgumentError("string tensors cannot wrap a byte buffer; use from_strings");
  }
  PSFLOW_ASSIGN_OR_RETURN(const int64_t n, internal::validate_shape(dtype, shape));
  if (buffer == nullptr) {
    return absl::InvalidArgumentError("from_buffer needs a buffer, got null");
  }
  const size_t element_size = dtype_size(dtype);
  const size_t bytes = static_cast<size_t>(n) * element_size;
  if (byte_offset > buffer->size() || bytes > buffer->size() - byte_offset) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shape ", shape_string(shape), " of ", av(dtype_name(dtype)), " needs ", bytes,
        " bytes at offset ", byte_offset, " but the buffer holds only ", buffer->size(), " bytes"));
  }
  const auto address = reinterpret_cast<uintptr_t>(buffer->data()) + byte_offset;
  if (address % element_size != 0) {
    return absl::InvalidArgumentError(absl::StrCat("buffer offset ", byte_offset,
                                                   " is not aligned for ", av(dtype_name(dtype)),
                                                   " (", element_size, " bytes)"));
  }
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.num_elements_ = n;
  t.buffer_ = std::move(buffer);
  t.byte_offset_ = byte_offset;
  return t;
}

Tensor Tensor::from_strings(std::vector<std::string> values, Shape shape) {
  if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
  Tensor t;
  t.dtype_ = DType::kString;
  t.num_elements_ = psflow::num_elements(shape);
  check_value_count(t.num_elements_, values.size());
  t.shape_ = std::move(shape);
  t.strings_ = std::make_shared<std::vector<std::string>>(std::move(values));
  return t;
}

Tensor Tensor::scalar_string(std::string value) {
  Tensor t;
  t.dtype_ = DType::kString;
  t.num_elements_ = 1;
  t.strings_ = std::make_shared<std::vector<std::string>>(1, std::move(value));
  return t;
}

int64_t Tensor::dim(int axis) const {
  const int r = rank();
  const int resolved = axis < 0 ? axis + r : axis;
  PSFLOW_CHECK(resolved >= 0 && resolved < r, "axis ", axis, " is out of range for rank ", r);
  return shape_[static_cast<size_t>(resolved)];
}

size_t Tensor::byte_size() const { return static_cast<size_t>(num_elements_) * dtype_size(dtype_); }

void Tensor::check_type(DType requested) const {
  PSFLOW_CHECK(dtype_ == requested, "tensor has dtype ", av(dtype_name(dtype_)), ", accessed as ",
               av(dtype_name(requested)));
}

void Tensor::check_value_count(int64_t expected, size_t actual) {
  PSFLOW_CHECK(static_cast<size_t>(expected) == actual, "shape needs ", expected, " values, got ",
               actual);
}

void Tensor::check_single_element() const {
  PSFLOW_CHECK(num_elements_ == 1, "scalar_value needs one element, shape ", shape_string(shape_),
               " has ", num_elements_);
}

void Tensor::check_matrix_rank() const {
  PSFLOW_CHECK(rank() == 1 || rank() == 2, "matrix view needs rank 1 or 2, shape ",
               shape_string(shape_), " has rank ", rank());
}

int64_t Tensor::flat_index(std::initializer_list<int64_t> index) const {
  PSFLOW_CHECK(index.size() == shape_.size(), "index of rank ", index.size(), " into shape ",
               shape_string(shape_));
  int64_t flat = 0;
  size_t axis = 0;
  for (const int64_t i : index) {
    const int64_t d = shape_[axis];
    PSFLOW_CHECK(i >= 0 && i < d, "index ", i, " is out of range for axis ", axis, " of shape ",
                 shape_string(shape_));
    flat = flat * d + i;
    ++axis;
  }
  return flat;
}

int64_t Tensor::check_flat_index(int64_t flat_index) const {
  PSFLOW_CHECK(flat_index >= 0 && flat_index < num_elements_, "flat index ", flat_index,
               " is out of range for ", num_elements_, " elements");
  return flat_index;
}

const std::string& Tensor::string_at(int64_t flat_index) const {
  return typed_data<std::string>()[check_flat_index(flat_index)];
}

std::string& Tensor::mutable_string_at(int64_t flat_index) {
  return const_cast<std::string*>(typed_data<std::string>())[check_flat_index(flat_index)];
}

const void* Tensor::raw_data() const {
  PSFLOW_CHECK(buffer_ != nullptr, "raw_data of a ", av(dtype_name(dtype_)),
               " tensor, which has no byte buffer");
  return buffer_->data() + byte_offset_;
}

void* Tensor::mutable_raw_data() {
  return const_cast<void*>(static_cast<const Tensor*>(this)->raw_data());
}

Tensor Tensor::slice(int64_t begin, int64_t end) const {
  absl::StatusOr<Tensor> t = checked_slice(begin, end);
  PSFLOW_CHECK(t.ok(), t.status().ToString());
  return *std::move(t);
}

absl::StatusOr<Tensor> Tensor::checked_slice(int64_t begin, int64_t end) const {
  if (rank() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot slice a scalar (", av(dtype_name(dtype_)), " tensor of shape [])"));
  }
  if (begin < 0 || begin > end || end > shape_[0]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "slice [", begin, ", ", end, ") is out of range for shape ", shape_string(shape_)));
  }
  int64_t row = 1;
  for (size_t axis = 1; axis < shape_.size(); ++axis) row *= shape_[axis];
  Tensor t = *this;
  t.shape_[0] = end - begin;
  t.num_elements_ = (end - begin) * row;
  if (dtype_ == DType::kString) {
    t.string_offset_ += begin * row;
  } else {
    t.byte_offset_ += static_cast<size_t>(begin * row) * dtype_size(dtype_);
  }
  return t;
}

absl::StatusOr<Tensor> Tensor::reshape(Shape shape) const {
  int inferred_axis = -1;
  int64_t known = 1;
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    const int64_t d = shape[axis];
    if (d == -1 && inferred_axis < 0) {
      inferred_axis = static_cast<int>(axis);
    } else if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("reshape to ", shape_string(shape),
                       ": dimensions must be >= 0, with at most one -1 to infer"));
    } else if (__builtin_mul_overflow(known, d, &known)) {
      return absl::InvalidArgumentError(
          absl::StrCat("reshape to ", shape_string(shape), ": more elements than int64 can count"));
    }
  }
  if (inferred_axis >= 0) {
    if (known == 0 || num_elements_ % known != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot reshape ", num_elements_, " elements (shape ", shape_string(shape_),
                       ") to ", shape_string(shape), ": the -1 dimension cannot be inferred"));
    }
    shape[static_cast<size_t>(inferred_axis)] = num_elements_ / known;
  }
  PSFLOW_ASSIGN_OR_RETURN(const int64_t n, internal::validate_shape(dtype_, shape));
  if (n != num_elements_) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot reshape ", num_elements_, " elements (shape ", shape_string(shape_),
                     ") to shape ", shape_string(shape), " with ", n, " elements"));
  }
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = *this;
  if (!valid()) return t;
  if (dtype_ == DType::kString) {
    const std::string* begin = typed_data<std::string>();
    t.strings_ = std::make_shared<std::vector<std::string>>(begin, begin + num_elements_);
    t.string_offset_ = 0;
  } else {
    t.buffer_ = internal::allocate_buffer(byte_size(), /*zero_fill=*/false);
    if (byte_size() > 0) std::memcpy(t.buffer_->data(), raw_data(), byte_size());
    t.byte_offset_ = 0;
  }
  return t;
}

namespace {

template <typename T>
bool elements_equal(const Tensor& a, const Tensor& b) {
  const absl::Span<const T> x = a.flat<T>();
  const absl::Span<const T> y = b.flat<T>();
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] == y[i])) return false;
  }
  return true;
}

}  // namespace

bool operator==(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  switch (a.dtype()) {
    case DType::kInvalid: return true;
    case DType::kFloat32: return elements_equal<float>(a, b);
    case DType::kFloat64: return elements_equal<double>(a, b);
    case DType::kString: return elements_equal<std::string>(a, b);
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt8:
    case DType::kBool:
      return a.byte_size() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()) == 0;
  }
  return false;
}

}  // namespace psflow

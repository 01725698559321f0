// psflow::Tensor: a typed, shaped, row-major array in a shared buffer.
#ifndef PSFLOW_TENSOR_H_
#define PSFLOW_TENSOR_H_

#include <Eigen/Core>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "psflow/dtype.h"

namespace psflow {

// Dimensions, outermost first; empty for a scalar.
using Shape = std::vector<int64_t>;

// Product of the dimensions (1 for a scalar). Dimensions must be >= 0 and
// the product must fit in int64 (aborts otherwise: a programming error).
[[nodiscard]] int64_t num_elements(const Shape& shape);
// As num_elements, for untrusted shapes: INVALID_ARGUMENT naming the
// negative dimension or the overflow.
[[nodiscard]] absl::StatusOr<int64_t> checked_num_elements(const Shape& shape);
// "[2, 3]"; "[]" for a scalar.
[[nodiscard]] std::string shape_string(const Shape& shape);

// A contiguous block of bytes that tensors share. Immutable in size; its
// bytes may be written through a Tensor's mutable accessors.
// Thread-safety: the object is immutable; concurrent writers to the bytes
// must synchronise themselves.
class TensorBuffer {
 public:
  // 64-byte aligned, zero-filled.
  [[nodiscard]] static std::shared_ptr<TensorBuffer> allocate(size_t bytes);
  // Takes ownership of `bytes` without copying (used by the wire codec).
  [[nodiscard]] static std::shared_ptr<TensorBuffer> adopt(std::string bytes);

  virtual ~TensorBuffer() = default;
  [[nodiscard]] virtual uint8_t* data() const = 0;
  [[nodiscard]] virtual size_t size() const = 0;
};

// A typed, shaped, row-major array.
//
// Copies are cheap and share the buffer (like torch::Tensor): writing
// through one copy is visible through the others; `clone()` makes a deep
// copy. `slice(begin, end)` along axis 0 shares the buffer as well.
// A default-constructed Tensor is invalid (dtype kInvalid).
//
// Thread-safety: const methods may be called concurrently; writes to the
// elements need external synchronisation, as with any shared array.
class Tensor {
 public:
  Tensor() = default;
  // Zero-filled (empty strings for kString). Negative dims are a programming
  // error and abort; use `create` for untrusted shapes.
  Tensor(DType dtype, Shape shape);

  // Validated construction for untrusted input: INVALID_ARGUMENT on a bad
  // dtype, a negative dimension or an element count that overflows.
  [[nodiscard]] static absl::StatusOr<Tensor> create(DType dtype, Shape shape);
  // Wraps an existing buffer (no copy) for a fixed-width dtype.
  // INVALID_ARGUMENT unless `byte_offset + byte size` fits in the buffer and
  // the first element is aligned for the dtype.
  [[nodiscard]] static absl::StatusOr<Tensor> from_buffer(DType dtype, Shape shape,
                                                          std::shared_ptr<TensorBuffer> buffer,
                                                          size_t byte_offset = 0);

  // Fixed-width element types. `values.size()` must equal the shape's
  // element count; an empty shape means a 1-D tensor of values.size().
  template <typename T>
  [[nodiscard]] static Tensor from_vector(const std::vector<T>& values, Shape shape = {});
  [[nodiscard]] static Tensor from_strings(std::vector<std::string> values, Shape shape = {});
  template <typename T>
  [[nodiscard]] static Tensor scalar(T value);
  [[nodiscard]] static Tensor scalar_string(std::string value);

  [[nodiscard]] bool valid() const { return dtype_ != DType::kInvalid; }
  [[nodiscard]] DType dtype() const { return dtype_; }
  [[nodiscard]] const Shape& shape() const { return shape_; }
  [[nodiscard]] int rank() const { return static_cast<int>(shape_.size()); }
  // Size of dimension `axis`; negative axes count from the end.
  [[nodiscard]] int64_t dim(int axis) const;
  [[nodiscard]] int64_t num_elements() const { return num_elements_; }
  // Bytes of element data (0 for kString).
  [[nodiscard]] size_t byte_size() const;

  // Element access; T must match dtype() (checked, aborts on mismatch: a
  // programming error, not an input error). T = std::string reads kString
  // tensors. at/mutable_at/string_at check their indices and abort when out
  // of range.
  template <typename T>
  [[nodiscard]] absl::Span<const T> flat() const;
  template <typename T>
  [[nodiscard]] absl::Span<T> mutable_flat();
  template <typename T>
  [[nodiscard]] const T& at(std::initializer_list<int64_t> index) const;
  template <typename T>
  [[nodiscard]] T& mutable_at(std::initializer_list<int64_t> index);
  // The single element of a one-element tensor.
  template <typename T>
  [[nodiscard]] const T& scalar_value() const;

  // kString elements.
  [[nodiscard]] const std::string& string_at(int64_t flat_index) const;
  [[nodiscard]] std::string& mutable_string_at(int64_t flat_index);

  // First byte of a fixed-width tensor's elements (aborts for kString, whose
  // elements are not contiguous bytes).
  [[nodiscard]] const void* raw_data() const;
  [[nodiscard]] void* mutable_raw_data();
  [[nodiscard]] const std::shared_ptr<TensorBuffer>& buffer() const { return buffer_; }

  // Eigen views (no copy) of fixed-width tensors. `vec` sees every element
  // in row-major order; `matrix` needs rank 2 (rank 1 is a column).
  template <typename T>
  using ConstVec = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
  template <typename T>
  using Vec = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
  template <typename T>
  using ConstMat =
      Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
  template <typename T>
  using Mat = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>;
  template <typename T>
  [[nodiscard]] ConstVec<T> vec() const;
  template <typename T>
  [[nodiscard]] Vec<T> mutable_vec();
  template <typename T>
  [[nodiscard]] ConstMat<T> matrix() const;
  template <typename T>
  [[nodiscard]] Mat<T> mutable_matrix();

  // Rows [begin, end) along axis 0, sharing the buffer. Aborts on a scalar
  // or out-of-range bounds; `checked_slice` returns an error instead.
  [[nodiscard]] Tensor slice(int64_t begin, int64_t end) const;
  [[nodiscard]] absl::StatusOr<Tensor> checked_slice(int64_t begin, int64_t end) const;
  // Same elements, new shape (same element count), sharing the buffer. One
  // dimension may be -1 and is then inferred, as in tf.reshape.
  [[nodiscard]] absl::StatusOr<Tensor> reshape(Shape shape) const;
  // Deep copy into a new buffer.
  [[nodiscard]] Tensor clone() const;

  // Readable printout: `Tensor<float32, [2, 2]> [[1, 2], [3, 4]]`. Beyond
  // `max_elements` elements, every dimension longer than 6 shows its first
  // and last 3 entries around "..." (numpy's summarisation).
  [[nodiscard]] std::string debug_string(int64_t max_elements = 64) const;

  // Exact equality of dtype, shape and elements (NaN != NaN).
  friend bool operator==(const Tensor& a, const Tensor& b);

 private:
  DType dtype_ = DType::kInvalid;
  Shape shape_;
  int64_t num_elements_ = 0;
  // Fixed-width dtypes: bytes live in buffer_ starting at byte_offset_.
  std::shared_ptr<TensorBuffer> buffer_;
  size_t byte_offset_ = 0;
  // kString: elements live in strings_ starting at string_offset_.
  std::shared_ptr<std::vector<std::string>> strings_;
  int64_t string_offset_ = 0;

  void check_type(DType requested) const;
  int64_t flat_index(std::initializer_list<int64_t> index) const;
  int64_t check_flat_index(int64_t flat_index) const;
  void check_single_element() const;
  void check_matrix_rank() const;
  static void check_value_count(int64_t expected, size_t actual);
  template <typename T>
  const T* typed_data() const;
};

// Prints debug_string().
std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Approximate comparison for tests: same dtype and shape, and for every
// element |a - b| <= atol + rtol * |b| (numpy.isclose; NaN is never close,
// equal infinities are). Non-float dtypes compare exactly.
// On mismatch the status message names the first differing index.
[[nodiscard]] absl::Status all_close(const Tensor& a, const Tensor& b, double rtol = 1e-5,
                                     double atol = 1e-8);

}  // namespace psflow

#include "psflow/tensor_inl.h"  // IWYU pragma: export

#endif  // PSFLOW_TENSOR_H_

// Template definitions for psflow/tensor.h; include that header instead.
#ifndef PSFLOW_TENSOR_INL_H_
#define PSFLOW_TENSOR_INL_H_

#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

// Included alone, this brings tensor.h, which includes this file at its end
// (the guard above makes that a no-op and the definitions follow here).
#include "psflow/tensor.h"

namespace psflow {

template <typename T>
const T* Tensor::typed_data() const {
  check_type(dtype_of<T>());
  if constexpr (std::is_same_v<T, std::string>) {
    return strings_->data() + string_offset_;
  } else {
    return reinterpret_cast<const T*>(buffer_->data() + byte_offset_);
  }
}

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, Shape shape) {
  if constexpr (std::is_same_v<T, std::string>) {
    return from_strings(values, std::move(shape));
  } else {
    if (shape.empty()) shape = {static_cast<int64_t>(values.size())};
    Tensor t(dtype_of<T>(), std::move(shape));
    check_value_count(t.num_elements(), values.size());
    if constexpr (std::is_same_v<T, bool>) {
      // std::vector<bool> is packed bits; copy one element at a time.
      absl::Span<bool> out = t.mutable_flat<bool>();
      for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
    } else if (!values.empty()) {
      std::memcpy(t.mutable_raw_data(), values.data(), values.size() * sizeof(T));
    }
    return t;
  }
}

template <typename T>
Tensor Tensor::scalar(T value) {
  Tensor t(dtype_of<T>(), Shape{});
  t.mutable_flat<T>()[0] = std::move(value);
  return t;
}

template <typename T>
absl::Span<const T> Tensor::flat() const {
  return absl::Span<const T>(typed_data<T>(), static_cast<size_t>(num_elements_));
}

template <typename T>
absl::Span<T> Tensor::mutable_flat() {
  return absl::Span<T>(const_cast<T*>(typed_data<T>()), static_cast<size_t>(num_elements_));
}

template <typename T>
const T& Tensor::at(std::initializer_list<int64_t> index) const {
  return typed_data<T>()[flat_index(index)];
}

template <typename T>
T& Tensor::mutable_at(std::initializer_list<int64_t> index) {
  return const_cast<T*>(typed_data<T>())[flat_index(index)];
}

template <typename T>
const T& Tensor::scalar_value() const {
  check_single_element();
  return typed_data<T>()[0];
}

template <typename T>
Tensor::ConstVec<T> Tensor::vec() const {
  static_assert(std::is_arithmetic_v<T>, "Eigen views need a numeric type");
  return ConstVec<T>(typed_data<T>(), num_elements_);
}

template <typename T>
Tensor::Vec<T> Tensor::mutable_vec() {
  static_assert(std::is_arithmetic_v<T>, "Eigen views need a numeric type");
  return Vec<T>(const_cast<T*>(typed_data<T>()), num_elements_);
}

template <typename T>
Tensor::ConstMat<T> Tensor::matrix() const {
  static_assert(std::is_arithmetic_v<T>, "Eigen views need a numeric type");
  check_matrix_rank();
  const int64_t cols = rank() == 2 ? shape_[1] : 1;
  return ConstMat<T>(typed_data<T>(), shape_[0], cols);
}

template <typename T>
Tensor::Mat<T> Tensor::mutable_matrix() {
  static_assert(std::is_arithmetic_v<T>, "Eigen views need a numeric type");
  check_matrix_rank();
  const int64_t cols = rank() == 2 ? shape_[1] : 1;
  return Mat<T>(const_cast<T*>(typed_data<T>()), shape_[0], cols);
}

}  // namespace psflow

#endif  // PSFLOW_TENSOR_INL_H_

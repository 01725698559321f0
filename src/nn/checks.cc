#include "nn/checks.h"

#include "absl/strings/str_cat.h"
#include "base/strings.h"

namespace psflow::nn::internal {

using ::psflow::internal::av;

namespace {

std::string describe(const Tensor& t) {
  if (!t.valid()) return "an invalid (default-constructed) tensor";
  return absl::StrCat(av(dtype_name(t.dtype())), " tensor of shape ", shape_string(t.shape()));
}

}  // namespace

absl::Status arg_error(const Arg& arg, absl::string_view detail) {
  return absl::InvalidArgumentError(absl::StrCat("nn::", arg.fn, ": '", arg.name, "' ", detail));
}

absl::Status bad_class_label(absl::string_view fn, int64_t label, size_t index, int64_t num_classes,
                             absl::string_view columns_of) {
  return arg_error({fn, "labels"}, absl::StrCat("has value ", label, " at index ", index,
                                                ", expected a class id in [0, ", num_classes,
                                                ") (the columns of '", columns_of, "')"));
}

absl::Status check_float(const Arg& arg, const Tensor& t) {
  if (t.dtype() == DType::kFloat32 || t.dtype() == DType::kFloat64) {
    return absl::OkStatus();
  }
  return arg_error(arg, absl::StrCat("is ", describe(t), ", expected dtype float32 or float64"));
}

absl::Status check_ids(const Arg& arg, const Tensor& t) {
  if (t.dtype() == DType::kInt32 || t.dtype() == DType::kInt64) {
    return absl::OkStatus();
  }
  return arg_error(arg, absl::StrCat("is ", describe(t), ", expected dtype int32 or int64"));
}

absl::Status check_class_labels(const Arg& arg, const Tensor& t) {
  if (t.dtype() == DType::kInt32 || t.dtype() == DType::kInt64 || t.dtype() == DType::kUInt8) {
    return absl::OkStatus();
  }
  return arg_error(arg, absl::StrCat("is ", describe(t), ", expected dtype int32, int64 or uint8"));
}

absl::Status check_same_dtype(const Arg& arg, const Tensor& t, absl::string_view ref_name,
                              const Tensor& ref) {
  if (t.dtype() == ref.dtype()) return absl::OkStatus();
  return arg_error(arg, absl::StrCat("is ", describe(t), ", expected dtype ",
                                     av(dtype_name(ref.dtype())), " (that of '", ref_name, "')"));
}

absl::Status check_rank(const Arg& arg, const Tensor& t, int rank, absl::string_view layout) {
  if (t.rank() == rank) return absl::OkStatus();
  return arg_error(arg, absl::StrCat("has shape ", shape_string(t.shape()), " (rank ", t.rank(),
                                     "), expected rank ", rank, " ", layout));
}

absl::Status check_shape(const Arg& arg, const Tensor& t, const Shape& expected,
                         absl::string_view why) {
  if (t.shape() == expected) return absl::OkStatus();
  return arg_error(arg, absl::StrCat("has shape ", shape_string(t.shape()), ", expected ",
                                     shape_string(expected), " (", why, ")"));
}

}  // namespace psflow::nn::internal

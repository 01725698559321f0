// Tensor/Structure <-> generated psflow.v1 messages (see codec.h).
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "psflow/status_macros.h"
#include "tensor/bfloat16.h"
#include "tensor/codec.h"
#include "tensor/codec_internal.h"
#include "tensor/format.h"
#include "tensor/tensor_internal.h"

namespace psflow::internal {
namespace {

using internal::DecodePath;

// Converts generated StructureProtos depth-first; on error the path is left
// at the failing node. Thread-safety: not thread-safe; one per call.
class ProtoConverter {
 public:
  ProtoConverter(const CodecLimits& limits, size_t wire_bytes)
      : limits_(limits), budget_(wire_bytes, limits) {}

  absl::StatusOr<Structure> convert_root(v1::StructureProto* proto) {
    PSFLOW_RETURN_IF_ERROR(budget_.charge(DecodeBudget::kNodeBytes));
    absl::StatusOr<Structure> result = convert(proto, 0);
    if (!result.ok()) return path_.annotate(result.status());
    return result;
  }

 private:
  absl::StatusOr<Structure> convert(v1::StructureProto* proto, int level) {
    switch (proto->kind_case()) {
      case v1::StructureProto::kNone: return Structure::none();
      case v1::StructureProto::kTensor: {
        PSFLOW_ASSIGN_OR_RETURN(Tensor t,
                                tensor_from_proto(proto->mutable_tensor(), limits_, budget_));
        return Structure(std::move(t));
      }
      case v1::StructureProto::kIntValue:
        return Structure(static_cast<int64_t>(proto->int_value()));
      case v1::StructureProto::kFloatValue: return Structure(proto->float_value());
      case v1::StructureProto::kBoolValue: return Structure(proto->bool_value());
      case v1::StructureProto::kStringValue:
        PSFLOW_RETURN_IF_ERROR(
            budget_.charge(DecodeBudget::string_bytes(proto->string_value().size())));
        return Structure(std::move(*proto->mutable_string_value()));
      case v1::StructureProto::kTuple:
      case v1::StructureProto::kList: {
        if (level >= limits_.max_depth) return internal::depth_error(limits_);
        const bool tuple = proto->kind_case() == v1::StructureProto::kTuple;
        v1::StructureList* list = tuple ? proto->mutable_tuple() : proto->mutable_list();
        PSFLOW_RETURN_IF_ERROR(
            budget_.charge(static_cast<size_t>(list->items_size()) * DecodeBudget::kNodeBytes));
        Structure::Items items;
        items.reserve(static_cast<size_t>(list->items_size()));
        for (int i = 0; i < list->items_size(); ++i) {
          path_.push_index(static_cast<size_t>(i));
          PSFLOW_ASSIGN_OR_RETURN(Structure item, convert(list->mutable_items(i), level + 1));
          items.push_back(std::move(item));
          path_.pop();
        }
        return tuple ? Structure::tuple(std::move(items)) : Structure::list(std::move(items));
      }
      case v1::StructureProto::kDict: {
        if (level >= limits_.max_depth) return internal::depth_error(limits_);
        Structure::Fields fields;
        for (v1::StructureField& field : *proto->mutable_dict()->mutable_fields()) {
          PSFLOW_RETURN_IF_ERROR(internal::validate_key(field.key()));
          if (fields.find(field.key()) != fields.end()) {
            std::string shown;
            internal::append_python_string(&shown, field.key());
            return absl::InvalidArgumentError(absl::StrCat("duplicate dict key ", shown));
          }
          PSFLOW_RETURN_IF_ERROR(budget_.charge(DecodeBudget::kDictEntryBytes +
                                                DecodeBudget::kNodeBytes +
                                                DecodeBudget::string_bytes(field.key().size())));
          path_.push_key(field.key());
          PSFLOW_ASSIGN_OR_RETURN(Structure value, convert(field.mutable_value(), level + 1));
          fields.emplace(field.key(), std::move(value));
          path_.pop();
        }
        return Structure::dict(std::move(fields));
      }
      case v1::StructureProto::KIND_NOT_SET: break;
    }
    return absl::InvalidArgumentError(
        "StructureProto has no kind set (an empty message, or a kind newer "
        "than this decoder)");
  }

  const CodecLimits& limits_;
  DecodeBudget budget_;
  DecodePath path_;
};

}  // namespace

absl::StatusOr<Tensor> tensor_from_proto(v1::TensorProto* proto, const CodecLimits& limits) {
  DecodeBudget budget(proto->ByteSizeLong(), limits);
  return tensor_from_proto(proto, limits, budget);
}

absl::StatusOr<Tensor> tensor_from_proto(v1::TensorProto* proto, const CodecLimits& limits,
                                         DecodeBudget& budget) {
  if (proto->shape_size() > limits.max_rank) {
    return internal::rank_error(limits);
  }
  internal::TensorFields fields;
  fields.dtype = proto->dtype();
  fields.shape.assign(proto->shape().begin(), proto->shape().end());
  fields.content_bytes = proto->content().size();
  fields.string_count = proto->string_val_size();
  PSFLOW_ASSIGN_OR_RETURN(const int64_t n, internal::validate_tensor_fields(fields, limits));
  const DType dtype = internal::decoded_dtype(fields.dtype);
  const bool bfloat16 = fields.dtype == internal::kWireBFloat16;
  size_t held = DecodeBudget::kTensorBytes + (bfloat16 ? 2 : 1) * fields.content_bytes;
  if (dtype == DType::kString) {
    for (const std::string& s : proto->string_val()) held += DecodeBudget::string_bytes(s.size());
  }
  PSFLOW_RETURN_IF_ERROR(budget.charge(held));
  if (dtype == DType::kString) {
    std::vector<std::string> strings;
    strings.reserve(static_cast<size_t>(n));
    for (std::string& s : *proto->mutable_string_val()) {
      strings.push_back(std::move(s));
    }
    proto->clear_string_val();
    return Tensor::from_strings(std::move(strings), {n}).reshape(std::move(fields.shape));
  }
  if (dtype == DType::kBool) {
    PSFLOW_RETURN_IF_ERROR(internal::validate_bool_content(proto->content()));
  }
  if (bfloat16) {
    std::shared_ptr<TensorBuffer> widened =
        internal::allocate_buffer(2 * fields.content_bytes, /*zero_fill=*/false);
    internal::widen_from_bfloat16(proto->content().data(), static_cast<size_t>(n),
                                  reinterpret_cast<float*>(widened->data()));
    proto->clear_content();
    return Tensor::from_buffer(dtype, std::move(fields.shape), std::move(widened));
  }
  std::shared_ptr<TensorBuffer> buffer = TensorBuffer::adopt(std::move(*proto->mutable_content()));
  proto->clear_content();
  const auto address = reinterpret_cast<uintptr_t>(buffer->data());
  if (address % dtype_size(dtype) != 0) {
    // A short string stores its bytes inline and may be misaligned for
    // 8-byte elements; copy those few bytes instead.
    std::shared_ptr<TensorBuffer> aligned =
        internal::allocate_buffer(buffer->size(), /*zero_fill=*/false);
    if (buffer->size() > 0) {
      std::memcpy(aligned->data(), buffer->data(), buffer->size());
    }
    buffer = std::move(aligned);
  }
  return Tensor::from_buffer(dtype, std::move(fields.shape), std::move(buffer));
}

void tensor_to_proto(const Tensor& tensor, v1::TensorProto* proto) {
  proto->Clear();
  if (!tensor.valid()) return;
  proto->set_dtype(static_cast<v1::DataType>(tensor.dtype()));
  proto->mutable_shape()->Reserve(tensor.rank());
  for (const int64_t d : tensor.shape()) proto->add_shape(d);
  if (tensor.dtype() == DType::kString) {
    proto->mutable_string_val()->Reserve(static_cast<int>(tensor.num_elements()));
    for (const std::string& s : tensor.flat<std::string>()) {
      proto->add_string_val(s);
    }
  } else if (tensor.byte_size() > 0) {
    proto->set_content(static_cast<const char*>(tensor.raw_data()), tensor.byte_size());
  }
}

absl::StatusOr<Structure> structure_from_proto(v1::StructureProto* proto,
                                               const CodecLimits& limits) {
  return ProtoConverter(limits, proto->ByteSizeLong()).convert_root(proto);
}

void structure_to_proto(const Structure& structure, v1::StructureProto* proto) {
  proto->Clear();
  switch (structure.kind()) {
    case Structure::Kind::kNone: proto->mutable_none(); return;
    case Structure::Kind::kTensor:
      tensor_to_proto(structure.tensor(), proto->mutable_tensor());
      return;
    case Structure::Kind::kInt: proto->set_int_value(structure.int_value()); return;
    case Structure::Kind::kFloat: proto->set_float_value(structure.float_value()); return;
    case Structure::Kind::kBool: proto->set_bool_value(structure.bool_value()); return;
    case Structure::Kind::kString: proto->set_string_value(structure.string_value()); return;
    case Structure::Kind::kTuple:
    case Structure::Kind::kList: {
      v1::StructureList* list = structure.kind() == Structure::Kind::kTuple ? proto->mutable_tuple()
                                                                            : proto->mutable_list();
      list->mutable_items()->Reserve(static_cast<int>(structure.size()));
      for (const Structure& item : structure.items()) {
        structure_to_proto(item, list->add_items());
      }
      return;
    }
    case Structure::Kind::kDict: {
      v1::StructureDict* dict = proto->mutable_dict();
      for (const auto& [key, value] : structure.fields()) {
        v1::StructureField* field = dict->add_fields();
        field->set_key(key);
        structure_to_proto(value, field->mutable_value());
      }
      return;
    }
  }
}

}  // namespace psflow::internal

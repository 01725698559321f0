// Encoding half of the wire codec (see codec.h).
#include <bit>
#include <string>
#include <vector>

#include "tensor/bfloat16.h"
#include "tensor/codec.h"
#include "tensor/codec_internal.h"
#include "tensor/wire.h"

// Tensor content is little-endian on the wire and memcpy'd as is.
static_assert(std::endian::native == std::endian::little,
              "the psflow codec assumes a little-endian host");

namespace psflow::internal {
namespace {

using internal::put_fixed64;
using internal::put_tag;
using internal::put_varint;
using internal::WireType;
using namespace internal::fields;  // NOLINT: the proto's field numbers

size_t shape_payload_size(const Shape& shape) {
  size_t size = 0;
  for (const int64_t d : shape) size += internal::varint_size(static_cast<uint64_t>(d));
  return size;
}

// The dtype `t` travels as: DT_BFLOAT16 for a float32 tensor sent as
// bfloat16, else its own.
uint64_t wire_dtype_value(const Tensor& t, bool bfloat16) {
  return bfloat16 ? static_cast<uint64_t>(internal::kWireBFloat16)
                  : static_cast<uint64_t>(t.dtype());
}

size_t tensor_body_size(const Tensor& t, bool bfloat16 = false) {
  size_t size = 0;
  if (t.dtype() != DType::kInvalid) {
    size += internal::tag_size(kTensorDtype) + internal::varint_size(wire_dtype_value(t, bfloat16));
  }
  if (t.rank() > 0) {
    size += internal::length_delimited_size(kTensorShape, shape_payload_size(t.shape()));
  }
  if (t.dtype() == DType::kString) {
    for (const std::string& s : t.flat<std::string>()) {
      size += internal::length_delimited_size(kTensorStringVal, s.size());
    }
  } else if (t.byte_size() > 0) {
    size += internal::length_delimited_size(kTensorContent,
                                            bfloat16 ? t.byte_size() / 2 : t.byte_size());
  }
  return size;
}

void write_tensor_body(const Tensor& t, std::string* out, bool bfloat16 = false) {
  if (t.dtype() != DType::kInvalid) {
    put_tag(out, kTensorDtype, WireType::kVarint);
    put_varint(out, wire_dtype_value(t, bfloat16));
  }
  if (t.rank() > 0) {
    put_tag(out, kTensorShape, WireType::kLengthDelimited);
    put_varint(out, shape_payload_size(t.shape()));
    for (const int64_t d : t.shape()) put_varint(out, static_cast<uint64_t>(d));
  }
  if (t.dtype() == DType::kString) {
    for (const std::string& s : t.flat<std::string>()) {
      put_tag(out, kTensorStringVal, WireType::kLengthDelimited);
      put_varint(out, s.size());
      out->append(s);
    }
  } else if (bfloat16 && t.byte_size() > 0) {
    const size_t n = static_cast<size_t>(t.num_elements());
    put_tag(out, kTensorContent, WireType::kLengthDelimited);
    put_varint(out, 2 * n);
    const size_t at = out->size();
    out->resize(at + 2 * n);
    // The one pass over the payload, narrowing as it copies.
    internal::narrow_to_bfloat16(t.flat<float>().data(), n, out->data() + at);
  } else if (t.byte_size() > 0) {
    put_tag(out, kTensorContent, WireType::kLengthDelimited);
    put_varint(out, t.byte_size());
    // The one copy of the payload.
    out->append(static_cast<const char*>(t.raw_data()), t.byte_size());
  }
}

// Size of `s` as a StructureProto body. When `sizes` is given, records the
// body size of every nested length-delimited message in the order
// write_structure_body needs them, so that encoding sizes each node once.
size_t structure_body_size(const Structure& s, std::vector<size_t>* sizes) {
  auto reserve_slot = [sizes]() -> size_t {
    if (sizes == nullptr) return 0;
    sizes->push_back(0);
    return sizes->size() - 1;
  };
  auto fill_slot = [sizes](size_t slot, size_t value) {
    if (sizes != nullptr) (*sizes)[slot] = value;
  };
  switch (s.kind()) {
    case Structure::Kind::kNone: return internal::length_delimited_size(kStructNone, 0);
    case Structure::Kind::kTensor: {
      const size_t slot = reserve_slot();
      const size_t body = tensor_body_size(s.tensor());
      fill_slot(slot, body);
      return internal::length_delimited_size(kStructTensor, body);
    }
    case Structure::Kind::kInt:
      return internal::tag_size(kStructInt) +
             internal::varint_size(static_cast<uint64_t>(s.int_value()));
    case Structure::Kind::kFloat: return internal::tag_size(kStructFloat) + 8;
    case Structure::Kind::kBool: return internal::tag_size(kStructBool) + 1;
    case Structure::Kind::kString:
      return internal::length_delimited_size(kStructString, s.string_value().size());
    case Structure::Kind::kTuple:
    case Structure::Kind::kList: {
      const size_t slot = reserve_slot();
      size_t body = 0;
      for (const Structure& item : s.items()) {
        const size_t item_slot = reserve_slot();
        const size_t item_body = structure_body_size(item, sizes);
        fill_slot(item_slot, item_body);
        body += internal::length_delimited_size(kListItems, item_body);
      }
      fill_slot(slot, body);
      return internal::length_delimited_size(
          s.kind() == Structure::Kind::kTuple ? kStructTuple : kStructList, body);
    }
    case Structure::Kind::kDict: {
      const size_t slot = reserve_slot();
      size_t body = 0;
      for (const auto& [key, value] : s.fields()) {
        const size_t field_slot = reserve_slot();
        const size_t value_slot = reserve_slot();
        const size_t value_body = structure_body_size(value, sizes);
        fill_slot(value_slot, value_body);
        // proto3 omits an empty string; the value is always present.
        const size_t field_body =
            (key.empty() ? 0 : internal::length_delimited_size(kFieldKey, key.size())) +
            internal::length_delimited_size(kFieldValue, value_body);
        fill_slot(field_slot, field_body);
        body += internal::length_delimited_size(kDictFields, field_body);
      }
      fill_slot(slot, body);
      return internal::length_delimited_size(kStructDict, body);
    }
  }
  return 0;
}

void write_structure_body(const Structure& s, const std::vector<size_t>& sizes, size_t* next,
                          std::string* out) {
  switch (s.kind()) {
    case Structure::Kind::kNone:
      put_tag(out, kStructNone, WireType::kLengthDelimited);
      put_varint(out, 0);
      return;
    case Structure::Kind::kTensor:
      put_tag(out, kStructTensor, WireType::kLengthDelimited);
      put_varint(out, sizes[(*next)++]);
      write_tensor_body(s.tensor(), out);
      return;
    case Structure::Kind::kInt:
      put_tag(out, kStructInt, WireType::kVarint);
      put_varint(out, static_cast<uint64_t>(s.int_value()));
      return;
    case Structure::Kind::kFloat:
      put_tag(out, kStructFloat, WireType::kFixed64);
      put_fixed64(out, std::bit_cast<uint64_t>(s.float_value()));
      return;
    case Structure::Kind::kBool:
      put_tag(out, kStructBool, WireType::kVarint);
      put_varint(out, s.bool_value() ? 1 : 0);
      return;
    case Structure::Kind::kString:
      put_tag(out, kStructString, WireType::kLengthDelimited);
      put_varint(out, s.string_value().size());
      out->append(s.string_value());
      return;
    case Structure::Kind::kTuple:
    case Structure::Kind::kList:
      put_tag(out, s.kind() == Structure::Kind::kTuple ? kStructTuple : kStructList,
              WireType::kLengthDelimited);
      put_varint(out, sizes[(*next)++]);
      for (const Structure& item : s.items()) {
        put_tag(out, kListItems, WireType::kLengthDelimited);
        put_varint(out, sizes[(*next)++]);
        write_structure_body(item, sizes, next, out);
      }
      return;
    case Structure::Kind::kDict:
      put_tag(out, kStructDict, WireType::kLengthDelimited);
      put_varint(out, sizes[(*next)++]);
      for (const auto& [key, value] : s.fields()) {
        put_tag(out, kDictFields, WireType::kLengthDelimited);
        put_varint(out, sizes[(*next)++]);
        const size_t value_body = sizes[(*next)++];
        if (!key.empty()) {
          put_tag(out, kFieldKey, WireType::kLengthDelimited);
          put_varint(out, key.size());
          out->append(key);
        }
        put_tag(out, kFieldValue, WireType::kLengthDelimited);
        put_varint(out, value_body);
        write_structure_body(value, sizes, next, out);
      }
      return;
  }
}

}  // namespace

size_t encoded_size(const Tensor& tensor) { return tensor_body_size(tensor); }

void encode_tensor(const Tensor& tensor, std::string* out) {
  out->reserve(out->size() + encoded_size(tensor));
  write_tensor_body(tensor, out);
}

std::string encode_tensor(const Tensor& tensor) {
  std::string out;
  encode_tensor(tensor, &out);
  return out;
}

bool sends_bfloat16(const Tensor& tensor, WireDType wire) {
  return wire == WireDType::kBFloat16 && tensor.dtype() == DType::kFloat32;
}

size_t encoded_size(const Tensor& tensor, WireDType wire) {
  return tensor_body_size(tensor, sends_bfloat16(tensor, wire));
}

void encode_tensor(const Tensor& tensor, WireDType wire, std::string* out) {
  const bool bfloat16 = sends_bfloat16(tensor, wire);
  out->reserve(out->size() + tensor_body_size(tensor, bfloat16));
  write_tensor_body(tensor, out, bfloat16);
}

size_t encoded_size(const Structure& structure) { return structure_body_size(structure, nullptr); }

void encode_structure(const Structure& structure, std::string* out) {
  std::vector<size_t> sizes;
  const size_t total = structure_body_size(structure, &sizes);
  out->reserve(out->size() + total);
  size_t next = 0;
  write_structure_body(structure, sizes, &next, out);
}

std::string encode_structure(const Structure& structure) {
  std::string out;
  encode_structure(structure, &out);
  return out;
}

}  // namespace psflow::internal

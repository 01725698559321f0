#include "tensor/codec_internal.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/status_macros.h"
#include "tensor/format.h"
#include "tensor/tensor_internal.h"

namespace psflow::internal {

absl::Status rank_error(const CodecLimits& limits) {
  return absl::InvalidArgumentError(absl::StrCat("tensor rank exceeds max_rank ", limits.max_rank));
}

absl::Status depth_error(const CodecLimits& limits) {
  return absl::InvalidArgumentError(
      absl::StrCat("structure is nested deeper than max_depth ", limits.max_depth));
}

DecodeBudget::DecodeBudget(size_t wire_bytes, const CodecLimits& limits)
    : wire_bytes_(wire_bytes),
      max_expansion_(limits.max_expansion),
      floor_(limits.expansion_floor_bytes) {
  const size_t cap = std::numeric_limits<size_t>::max();
  const size_t scaled =
      max_expansion_ != 0 && wire_bytes > cap / max_expansion_ ? cap : wire_bytes * max_expansion_;
  limit_ = scaled > cap - floor_ ? cap : scaled + floor_;
}

absl::Status DecodeBudget::charge(size_t bytes) {
  used_ = bytes > std::numeric_limits<size_t>::max() - used_ ? std::numeric_limits<size_t>::max()
                                                             : used_ + bytes;
  if (used_ <= limit_) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "the decoded value would take more than ", limit_, " bytes of memory, the bound for a ",
      wire_bytes_, "-byte message (CodecLimits: max_expansion ", max_expansion_,
      " x its size + expansion_floor_bytes ", floor_,
      "): it has too many tiny elements (empty strings, empty structures, scalars); send such "
      "data as one numeric tensor, or split it over several messages"));
}

absl::StatusOr<int64_t> validate_tensor_fields(const TensorFields& fields,
                                               const CodecLimits& limits) {
  if (fields.dtype == 0) {
    return absl::InvalidArgumentError("tensor has no dtype (DT_INVALID)");
  }
  const bool bfloat16 = fields.dtype == kWireBFloat16;
  if (!bfloat16 && !is_valid_dtype(fields.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("unknown tensor dtype ", fields.dtype));
  }
  const DType dtype = decoded_dtype(fields.dtype);
  if (fields.shape.size() > static_cast<size_t>(std::max(limits.max_rank, 0))) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor rank ", fields.shape.size(), " exceeds max_rank ", limits.max_rank));
  }
  PSFLOW_ASSIGN_OR_RETURN(const int64_t n, validate_shape(dtype, fields.shape));
  const std::string_view name = bfloat16 ? std::string_view("bfloat16") : dtype_name(dtype);
  if (dtype == DType::kString) {
    if (fields.content_bytes != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("string tensor carries ", fields.content_bytes,
                       " content bytes; string elements belong in string_val"));
    }
    if (fields.string_count != n) {
      return absl::InvalidArgumentError(absl::StrCat("string tensor has ", fields.string_count,
                                                     " string_val entries but shape ",
                                                     shape_string(fields.shape), " needs ", n));
    }
    return n;
  }
  if (fields.string_count != 0) {
    return absl::InvalidArgumentError(absl::StrCat(av(name), " tensor carries ",
                                                   fields.string_count,
                                                   " string_val entries; only string tensors may"));
  }
  const size_t needed = static_cast<size_t>(n) * (bfloat16 ? 2 : dtype_size(dtype));
  if (fields.content_bytes != needed) {
    return absl::InvalidArgumentError(absl::StrCat("tensor content is ", fields.content_bytes,
                                                   " bytes but shape ", shape_string(fields.shape),
                                                   " of ", av(name), " needs ", needed, " bytes"));
  }
  return n;
}

absl::Status validate_bool_content(std::string_view content) {
  for (size_t i = 0; i < content.size(); ++i) {
    const auto byte = static_cast<unsigned char>(content[i]);
    if (byte > 1) {
      return absl::InvalidArgumentError(absl::StrCat("bool tensor element ", i, " is byte ",
                                                     static_cast<int>(byte),
                                                     "; bools must be 0 or 1"));
    }
  }
  return absl::OkStatus();
}

absl::Status validate_key(std::string_view key) {
  // RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF.
  size_t i = 0;
  while (i < key.size()) {
    const auto c = static_cast<unsigned char>(key[i]);
    size_t extra = 0;
    uint32_t cp = 0;
    uint32_t min = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      extra = 1, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3, cp = c & 0x07, min = 0x10000;
    } else {
      extra = 99;
    }
    // The continuation bytes key[i + 1 .. i + extra] must exist.
    bool ok = extra != 99 && extra < key.size() - i;
    for (size_t k = 1; ok && k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(key[i + k]);
      ok = (cc & 0xC0) == 0x80;
      cp = (cp << 6) | (cc & 0x3F);
    }
    ok = ok && cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!ok) {
      std::string shown;
      append_python_string(&shown, key);
      return absl::InvalidArgumentError(
          absl::StrCat("dict key ", shown, " is not valid UTF-8 (byte ", i, ")"));
    }
    i += extra + 1;
  }
  return absl::OkStatus();
}

void DecodePath::push_index(size_t i) {
  marks_.push_back(path_.size());
  absl::StrAppend(&path_, "[", i, "]");
}

void DecodePath::push_key(std::string_view key) {
  marks_.push_back(path_.size());
  path_.push_back('[');
  append_python_string(&path_, key);
  path_.push_back(']');
}

void DecodePath::pop() {
  path_.resize(marks_.back());
  marks_.pop_back();
}

absl::Status DecodePath::annotate(const absl::Status& status) const {
  if (status.ok() || path_.empty()) return status;
  return absl::Status(status.code(), absl::StrCat("at ", path_, ": ", status.message()));
}

}  // namespace psflow::internal

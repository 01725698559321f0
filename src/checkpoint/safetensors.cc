#include "checkpoint/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/status_macros.h"

namespace psflow::internal::checkpoint {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian and psflow copies it as is");

using Json = nlohmann::json;

constexpr std::string_view kMetadataKey = "__metadata__";
// Deepest JSON nesting a valid header has is 3 (root, entry, shape).
constexpr int kMaxHeaderDepth = 8;

absl::Status bad_file(std::string_view file, std::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(av(file), ": ", av(problem)));
}

// The header (length prefix included) and the order of the data.
struct Layout {
  std::string header;
  std::vector<size_t> order;  // indices into the entries
};

absl::StatusOr<Layout> plan(const std::vector<SafetensorsEntry>& entries,
                            const std::map<std::string, std::string, std::less<>>& metadata) {
  Layout layout;
  std::set<std::string_view> names;
  for (size_t i = 0; i < entries.size(); ++i) {
    const SafetensorsEntry& e = entries[i];
    if (e.name.empty() || e.name == kMetadataKey) {
      return absl::InvalidArgumentError(absl::StrCat("safetensors tensor name '", e.name,
                                                     "' is reserved or empty; pick another name"));
    }
    if (!names.insert(e.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("safetensors tensor name '", e.name, "' appears twice"));
    }
    absl::StatusOr<std::string> dtype = safetensors_dtype(e.tensor.dtype());
    if (!dtype.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", e.name, "': ", dtype.status().message()));
    }
    layout.order.push_back(i);
  }
  // Largest element size first, then by name: every tensor stays aligned
  // for its type without padding between tensors.
  std::sort(layout.order.begin(), layout.order.end(), [&](size_t a, size_t b) {
    const size_t sa = dtype_size(entries[a].tensor.dtype());
    const size_t sb = dtype_size(entries[b].tensor.dtype());
    return std::tie(sb, entries[a].name) < std::tie(sa, entries[b].name);
  });
  Json header = Json::object();
  uint64_t offset = 0;
  for (size_t i : layout.order) {
    const Tensor& t = entries[i].tensor;
    Json shape = Json::array();
    for (int64_t d : t.shape()) shape.push_back(static_cast<uint64_t>(d));
    const uint64_t end = offset + t.byte_size();
    header[entries[i].name] = {{"dtype", *safetensors_dtype(t.dtype())},
                               {"shape", std::move(shape)},
                               {"data_offsets", {offset, end}}};
    offset = end;
  }
  if (!metadata.empty()) {
    Json meta = Json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header[std::string(kMetadataKey)] = std::move(meta);
  }
  std::string text = header.dump(-1, ' ', false, Json::error_handler_t::replace);
  // Pad with spaces so that the data starts 8-byte aligned.
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');
  uint64_t n = text.size();
  layout.header.resize(8);
  std::memcpy(layout.header.data(), &n, 8);
  layout.header += text;
  return layout;
}

// A non-negative JSON integer, or nullopt.
std::optional<uint64_t> as_unsigned(const Json& j) {
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  if (j.is_number_integer() && j.get<int64_t>() >= 0)
    return static_cast<uint64_t>(j.get<int64_t>());
  return std::nullopt;
}

struct Range {
  uint64_t begin = 0;
  uint64_t end = 0;
  std::string name;
};

}  // namespace

absl::StatusOr<std::string> safetensors_dtype(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return std::string("F32");
    case DType::kFloat64: return std::string("F64");
    case DType::kInt32: return std::string("I32");
    case DType::kInt64: return std::string("I64");
    case DType::kUInt8: return std::string("U8");
    case DType::kBool: return std::string("BOOL");
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "dtype ", av(dtype_name(dtype)),
          " has no safetensors form; checkpoints hold float32, float64, int32, int64, uint8 "
          "and bool tensors"));
  }
}

absl::StatusOr<DType> dtype_from_safetensors(std::string_view name) {
  for (DType d : {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64, DType::kUInt8,
                  DType::kBool}) {
    if (*safetensors_dtype(d) == name) return d;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "dtype '", av(name), "' is not one psflow reads (F32, F64, I32, I64, U8, BOOL)"));
}

absl::StatusOr<std::string> encode_safetensors(
    const std::vector<SafetensorsEntry>& entries,
    const std::map<std::string, std::string, std::less<>>& metadata) {
  PSFLOW_ASSIGN_OR_RETURN(Layout layout, plan(entries, metadata));
  std::string out = std::move(layout.header);
  for (size_t i : layout.order) {
    const Tensor& t = entries[i].tensor;
    if (t.byte_size() > 0) out.append(static_cast<const char*>(t.raw_data()), t.byte_size());
  }
  return out;
}

absl::StatusOr<FileDigest> write_safetensors_file(
    const std::string& path, const std::vector<SafetensorsEntry>& entries,
    const std::map<std::string, std::string, std::less<>>& metadata) {
  PSFLOW_ASSIGN_OR_RETURN(Layout layout, plan(entries, metadata));
  PSFLOW_ASSIGN_OR_RETURN(AtomicFileWriter writer, AtomicFileWriter::open(path));
  PSFLOW_RETURN_IF_ERROR(writer.append(layout.header));
  for (size_t i : layout.order) {
    const Tensor& t = entries[i].tensor;
    if (t.byte_size() > 0) PSFLOW_RETURN_IF_ERROR(writer.append(t.raw_data(), t.byte_size()));
  }
  return writer.commit();
}

absl::StatusOr<SafetensorsContents> decode_safetensors(std::string bytes, std::string_view file) {
  if (bytes.size() < 8) {
    return bad_file(file, absl::StrCat("the file is ", bytes.size(),
                                       " bytes, too short for the 8-byte header length"));
  }
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  if (n > kMaxSafetensorsHeaderBytes) {
    return bad_file(file, absl::StrCat("header length ", n, " is more than the limit of ",
                                       kMaxSafetensorsHeaderBytes, " bytes"));
  }
  if (n > bytes.size() - 8) {
    return bad_file(file, absl::StrCat("header length ", n, " runs past the end of the file (",
                                       bytes.size(), " bytes; truncated?)"));
  }
  const std::string_view text(bytes.data() + 8, n);
  if (text.empty() || text[0] != '{') {
    return bad_file(file, "the header is not a JSON object (it must start with '{')");
  }
  std::string problem;
  std::set<std::string> seen;
  auto callback = [&](int depth, Json::parse_event_t event, Json& parsed) {
    if (depth > kMaxHeaderDepth && problem.empty()) {
      problem = absl::StrCat("the header nests deeper than ", kMaxHeaderDepth, " levels");
    }
    if (event == Json::parse_event_t::key && depth == 1 && parsed.is_string() &&
        !seen.insert(parsed.get<std::string>()).second && problem.empty()) {
      problem = absl::StrCat("tensor '", parsed.get<std::string>(), "' appears twice");
    }
    return true;
  };
  Json header = Json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/false);
  if (header.is_discarded()) return bad_file(file, "the header is not valid JSON");
  if (!problem.empty()) return bad_file(file, problem);
  if (!header.is_object()) return bad_file(file, "the header is not a JSON object");

  const uint64_t data_size = bytes.size() - 8 - n;
  const uint64_t data_start = 8 + n;
  SafetensorsContents out;
  struct Pending {
    std::string name;
    DType dtype;
    Shape shape;
    uint64_t begin;
    uint64_t end;
  };
  std::vector<Pending> pending;
  for (auto it = header.begin(); it != header.end(); ++it) {
    const std::string& name = it.key();
    const Json& value = it.value();
    if (name == kMetadataKey) {
      if (!value.is_object()) return bad_file(file, "__metadata__ is not a JSON object");
      for (auto m = value.begin(); m != value.end(); ++m) {
        if (!m.value().is_string()) {
          return bad_file(file, absl::StrCat("__metadata__ entry '", m.key(),
                                             "' is not a string (safetensors metadata maps "
                                             "strings to strings)"));
        }
        out.metadata.emplace(m.key(), m.value().get<std::string>());
      }
      continue;
    }
    auto where = [&](absl::string_view what) {
      return bad_file(file, absl::StrCat("tensor '", name, "': ", what));
    };
    if (!value.is_object()) return where("its entry is not a JSON object");
    auto dtype_it = value.find("dtype");
    if (dtype_it == value.end() || !dtype_it->is_string()) return where("no string \"dtype\"");
    absl::StatusOr<DType> dtype = dtype_from_safetensors(dtype_it->get<std::string>());
    if (!dtype.ok()) return where(dtype.status().message());
    auto shape_it = value.find("shape");
    if (shape_it == value.end() || !shape_it->is_array()) return where("no \"shape\" array");
    Shape shape;
    for (const Json& d : *shape_it) {
      std::optional<uint64_t> dim = as_unsigned(d);
      if (!dim || *dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return where(absl::StrCat("shape entry ",
                                  d.dump(-1, ' ', false, Json::error_handler_t::replace),
                                  " is not a non-negative integer"));
      }
      shape.push_back(static_cast<int64_t>(*dim));
    }
    auto offsets_it = value.find("data_offsets");
    if (offsets_it == value.end() || !offsets_it->is_array() || offsets_it->size() != 2) {
      return where("no \"data_offsets\" pair [begin, end]");
    }
    std::optional<uint64_t> begin = as_unsigned((*offsets_it)[0]);
    std::optional<uint64_t> end = as_unsigned((*offsets_it)[1]);
    if (!begin || !end || *begin > *end) {
      return where("data_offsets must be two non-negative integers with begin <= end");
    }
    if (*end > data_size) {
      return where(absl::StrCat("data_offsets [", *begin, ", ", *end,
                                ") run past the end of the data (", data_size,
                                " bytes; truncated?)"));
    }
    absl::StatusOr<int64_t> elements = checked_num_elements(shape);
    if (!elements.ok()) return where(elements.status().message());
    const uint64_t item = dtype_size(*dtype);
    if (static_cast<uint64_t>(*elements) > std::numeric_limits<uint64_t>::max() / item ||
        static_cast<uint64_t>(*elements) * item != *end - *begin) {
      return where(absl::StrCat(
          "shape ", shape_string(shape), " of ", av(dtype_it->get<std::string>()), " needs ",
          static_cast<uint64_t>(*elements) * item, " bytes but data_offsets give ", *end - *begin));
    }
    pending.push_back({name, *dtype, std::move(shape), *begin, *end});
  }

  // The byte ranges must tile the data exactly.
  std::vector<const Pending*> sorted;
  for (const Pending& p : pending) sorted.push_back(&p);
  std::sort(sorted.begin(), sorted.end(), [](const Pending* a, const Pending* b) {
    return std::tie(a->begin, a->end, a->name) < std::tie(b->begin, b->end, b->name);
  });
  uint64_t covered = 0;
  const Pending* previous = nullptr;
  for (const Pending* p : sorted) {
    if (p->begin < covered) {
      return bad_file(file, absl::StrCat("tensor '", p->name, "' [", p->begin, ", ", p->end,
                                         ") overlaps tensor '", previous->name, "' [",
                                         previous->begin, ", ", previous->end, ")"));
    }
    if (p->begin > covered) {
      return bad_file(
          file, absl::StrCat("bytes [", covered, ", ", p->begin,
                             ") of the data belong to no tensor (a hole before '", p->name, "')"));
    }
    covered = p->end;
    if (p->end > p->begin) previous = p;
  }
  if (covered != data_size) {
    return bad_file(file, absl::StrCat("the data is ", data_size, " bytes but the tensors cover ",
                                       covered, " (trailing bytes)"));
  }

  std::shared_ptr<TensorBuffer> buffer = TensorBuffer::adopt(std::move(bytes));
  for (Pending& p : pending) {
    const uint64_t size = p.end - p.begin;
    const uint8_t* src = buffer->data() + data_start + p.begin;
    if (p.dtype == DType::kBool) {
      for (uint64_t i = 0; i < size; ++i) {
        if (src[i] > 1) {
          return bad_file(file, absl::StrCat("tensor '", p.name, "': bool element ", i, " is ",
                                             static_cast<int>(src[i]), ", not 0 or 1"));
        }
      }
    }
    Tensor t;
    if (size == 0) {
      t = Tensor(p.dtype, p.shape);
    } else {
      absl::StatusOr<Tensor> shared =
          Tensor::from_buffer(p.dtype, p.shape, buffer, static_cast<size_t>(data_start + p.begin));
      if (shared.ok()) {
        t = *std::move(shared);
      } else {  // not aligned for its type: copy
        t = Tensor(p.dtype, p.shape);
        std::memcpy(t.mutable_raw_data(), src, static_cast<size_t>(size));
      }
    }
    out.tensors.emplace(std::move(p.name), std::move(t));
  }
  return out;
}

absl::StatusOr<SafetensorsContents> read_safetensors_file(const std::string& path,
                                                          uint64_t max_bytes) {
  PSFLOW_ASSIGN_OR_RETURN(std::string bytes, read_file(path, max_bytes));
  return decode_safetensors(std::move(bytes), path);
}

}  // namespace psflow::internal::checkpoint

// VariableHandle: validation and the Structure form that travels in
// function arguments.
#include "psflow/variable_handle.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/cluster_spec.h"
#include "psflow/status_macros.h"

namespace psflow {

using internal::av;

namespace {

constexpr char kMarker[] = "psflow_variable";
constexpr int64_t kFormatVersion = 1;

absl::Status bad(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("malformed variable handle: ", what));
}

Structure shape_structure(const Shape& shape) {
  Structure::Items dims;
  dims.reserve(shape.size());
  for (int64_t d : shape) dims.emplace_back(d);
  return Structure::tuple(std::move(dims));
}

absl::StatusOr<const Structure*> field(const Structure& s, std::string_view key,
                                       Structure::Kind kind, std::string_view where) {
  const auto& fields = s.fields();
  auto it = fields.find(key);
  if (it == fields.end()) {
    return bad(absl::StrCat(av(where), " has no field '", av(key), "'"));
  }
  if (it->second.kind() != kind) {
    return bad(absl::StrCat(av(where), " field '", av(key),
                            "' has the wrong type: ", it->second.debug_string()));
  }
  return &it->second;
}

absl::StatusOr<std::string> string_field(const Structure& s, std::string_view key,
                                         std::string_view where) {
  PSFLOW_ASSIGN_OR_RETURN(const Structure* f, field(s, key, Structure::Kind::kString, where));
  return f->string_value();
}

absl::StatusOr<int64_t> int_field(const Structure& s, std::string_view key,
                                  std::string_view where) {
  PSFLOW_ASSIGN_OR_RETURN(const Structure* f, field(s, key, Structure::Kind::kInt, where));
  return f->int_value();
}

absl::StatusOr<Shape> shape_field(const Structure& s, std::string_view where) {
  const auto& fields = s.fields();
  auto it = fields.find("shape");
  if (it == fields.end() || !it->second.is_sequence()) {
    return bad(absl::StrCat(av(where), " needs 'shape' as a tuple of ints"));
  }
  Shape shape;
  for (const Structure& d : it->second.items()) {
    if (d.kind() != Structure::Kind::kInt) {
      return bad(absl::StrCat(av(where), " shape has a non-int entry ", d.debug_string()));
    }
    shape.push_back(d.int_value());
  }
  return shape;
}

std::string part_where(const VariableHandle& h, size_t i) {
  return absl::StrCat("part ", i, " of variable '", h.name, "'");
}

}  // namespace

absl::Status VariableHandle::validate() const {
  if (name.empty()) return bad("the variable name is empty");
  if (variable_aggregation_name(aggregation).empty() ||
      variable_synchronization_name(synchronization).empty()) {
    return bad(absl::StrCat("variable '", name, "' has an invalid aggregation (",
                            static_cast<int>(aggregation), ") or synchronization (",
                            static_cast<int>(synchronization), ")"));
  }
  if (dtype == DType::kInvalid || !is_valid_dtype(static_cast<int>(dtype))) {
    return bad(absl::StrCat("variable '", name, "' has no valid dtype"));
  }
  for (int64_t d : shape) {
    if (d < 0) return bad(absl::StrCat("variable '", name, "' has shape ", shape_string(shape)));
  }
  if (parts.empty()) return bad(absl::StrCat("variable '", name, "' has no parts"));
  if (shape.empty() && parts.size() != 1) {
    return bad(absl::StrCat("scalar variable '", name, "' has ", parts.size(),
                            " parts; scalars are never sharded"));
  }
  int64_t next_row = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const VariablePartHandle& p = parts[i];
    const std::string where = part_where(*this, i);
    if (p.job.empty() || p.task < 0 || p.name.empty()) {
      return bad(absl::StrCat(where, " needs a job, a task >= 0 and a stored name, got ",
                              task_name(p.job, p.task), " '", p.name, "'"));
    }
    const bool rank_ok = p.shape.size() == shape.size();
    bool tail_ok = rank_ok;
    for (size_t d = 1; tail_ok && d < shape.size(); ++d) tail_ok = p.shape[d] == shape[d];
    if (!tail_ok || (!p.shape.empty() && p.shape[0] < 0)) {
      return bad(absl::StrCat(where, " has shape ", shape_string(p.shape),
                              ", which does not match the variable's ", shape_string(shape),
                              " beyond axis 0"));
    }
    if (p.offset != next_row) {
      return bad(absl::StrCat(where, " starts at row ", p.offset,
                              " but the parts before it end at ", next_row,
                              "; parts must tile axis 0 in order"));
    }
    if (!p.shape.empty()) next_row += p.shape[0];
  }
  if (!shape.empty() && next_row != shape[0]) {
    return bad(absl::StrCat("the parts of variable '", name, "' hold ", next_row,
                            " rows but its shape ", shape_string(shape), " has ", shape[0]));
  }
  return absl::OkStatus();
}

Structure VariableHandle::to_structure() const {
  Structure::Items part_items;
  part_items.reserve(parts.size());
  for (const VariablePartHandle& p : parts) {
    part_items.push_back(Structure::dict({{"job", p.job},
                                          {"task", p.task},
                                          {"name", p.name},
                                          {"shape", shape_structure(p.shape)},
                                          {"offset", p.offset}}));
  }
  Structure::Fields fields = {
      {kMarker, kFormatVersion},
      {"name", name},
      {"dtype", std::string(dtype_name(dtype))},
      {"shape", shape_structure(shape)},
      {"parts", Structure::list(std::move(part_items))},
      {"aggregation", std::string(variable_aggregation_name(aggregation))},
      {"synchronization", std::string(variable_synchronization_name(synchronization))},
      {"trainable", trainable}};
  // Written only when set, so that builds before it read the handle.
  if (wire_dtype != WireDType::kFloat32) {
    fields.emplace("wire_dtype", std::string(wire_dtype_name(wire_dtype)));
  }
  return Structure::dict(std::move(fields));
}

bool VariableHandle::is_handle(const Structure& s) {
  return s.is_dict() && s.fields().contains(kMarker);
}

absl::StatusOr<VariableHandle> VariableHandle::from_structure(const Structure& s) {
  if (!is_handle(s)) {
    return bad(absl::StrCat("expected a dict with a '", kMarker, "' field, got ",
                            s.debug_string().substr(0, 200)));
  }
  PSFLOW_ASSIGN_OR_RETURN(int64_t version, int_field(s, kMarker, "handle"));
  if (version != kFormatVersion) {
    return bad(absl::StrCat("format version ", version, " is not supported (this build reads ",
                            kFormatVersion, "); use the same psflow build on every task"));
  }
  VariableHandle h;
  PSFLOW_ASSIGN_OR_RETURN(h.name, string_field(s, "name", "handle"));
  PSFLOW_ASSIGN_OR_RETURN(std::string dtype, string_field(s, "dtype", "handle"));
  auto d = dtype_from_name(dtype);
  if (!d.ok()) return bad(std::string(d.status().message()));
  h.dtype = *d;
  PSFLOW_ASSIGN_OR_RETURN(h.shape, shape_field(s, "handle"));
  const auto& fields = s.fields();
  if (fields.contains("aggregation")) {
    PSFLOW_ASSIGN_OR_RETURN(std::string a, string_field(s, "aggregation", "handle"));
    auto parsed = variable_aggregation_from_name(a);
    if (!parsed.ok()) return bad(std::string(parsed.status().message()));
    h.aggregation = *parsed;
  }
  if (fields.contains("synchronization")) {
    PSFLOW_ASSIGN_OR_RETURN(std::string y, string_field(s, "synchronization", "handle"));
    auto parsed = variable_synchronization_from_name(y);
    if (!parsed.ok()) return bad(std::string(parsed.status().message()));
    h.synchronization = *parsed;
  }
  if (fields.contains("trainable")) {
    PSFLOW_ASSIGN_OR_RETURN(const Structure* t,
                            field(s, "trainable", Structure::Kind::kBool, "handle"));
    h.trainable = t->bool_value();
  }
  if (fields.contains("wire_dtype")) {
    PSFLOW_ASSIGN_OR_RETURN(std::string w, string_field(s, "wire_dtype", "handle"));
    auto parsed = wire_dtype_from_name(w);
    if (!parsed.ok()) return bad(std::string(parsed.status().message()));
    h.wire_dtype = *parsed;
  }
  auto parts = fields.find("parts");
  if (parts == fields.end() || !parts->second.is_sequence()) {
    return bad(absl::StrCat("variable '", h.name, "' needs 'parts' as a list"));
  }
  for (size_t i = 0; i < parts->second.items().size(); ++i) {
    const Structure& p = parts->second.items()[i];
    const std::string where = part_where(h, i);
    if (!p.is_dict()) return bad(absl::StrCat(where, " is not a dict"));
    VariablePartHandle part;
    PSFLOW_ASSIGN_OR_RETURN(part.job, string_field(p, "job", where));
    PSFLOW_ASSIGN_OR_RETURN(int64_t task, int_field(p, "task", where));
    if (task < 0 || task > std::numeric_limits<int>::max()) {
      return bad(absl::StrCat(where, " has task ", task));
    }
    part.task = static_cast<int>(task);
    PSFLOW_ASSIGN_OR_RETURN(part.name, string_field(p, "name", where));
    PSFLOW_ASSIGN_OR_RETURN(part.shape, shape_field(p, where));
    PSFLOW_ASSIGN_OR_RETURN(part.offset, int_field(p, "offset", where));
    h.parts.push_back(std::move(part));
  }
  PSFLOW_RETURN_IF_ERROR(h.validate());
  return h;
}

}  // namespace psflow

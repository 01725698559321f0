#include "checkpoint/index.h"

#include <initializer_list>
#include <iterator>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "checkpoint/safetensors.h"
#include "optimizer/optimizer.h"
#include "psflow/status_macros.h"

namespace psflow::internal::checkpoint {
namespace {

using Json = nlohmann::json;

constexpr int kMaxIndexDepth = 16;

Json shape_json(const Shape& shape) {
  Json out = Json::array();
  for (int64_t d : shape) out.push_back(d);
  return out;
}

Json optimizer_json(const OptimizerConfig& c) {
  Json j{{std::string(kOptimizerKindField), std::string(optimizer_name(c.kind))}};
  for (const OptimizerField& f : kOptimizerFields) {
    const std::string key(f.name);
    if (f.flag != nullptr) {
      j[key] = c.*f.flag;
    } else {
      j[key] = c.*f.number;
    }
  }
  return j;
}

// Reads fields of untrusted JSON; every error names the file and where.
class Reader {
 public:
  explicit Reader(absl::string_view file) : file_(file) {}

  absl::Status error(absl::string_view where, absl::string_view problem) const {
    return absl::InvalidArgumentError(
        absl::StrCat(file_, ": ", where, where.empty() ? "" : ": ", problem));
  }

  absl::StatusOr<const Json*> field(const Json& object, absl::string_view key,
                                    absl::string_view where) const {
    auto it = object.find(std::string(key));
    if (it == object.end()) return error(where, absl::StrCat("missing \"", key, "\""));
    return &*it;
  }

  absl::StatusOr<std::string> string(const Json& object, absl::string_view key,
                                     absl::string_view where) const {
    PSFLOW_ASSIGN_OR_RETURN(const Json* j, field(object, key, where));
    if (!j->is_string()) return error(where, absl::StrCat("\"", key, "\" is not a string"));
    return j->get<std::string>();
  }

  absl::StatusOr<int64_t> integer(const Json& object, absl::string_view key,
                                  absl::string_view where, int64_t min, int64_t max) const {
    PSFLOW_ASSIGN_OR_RETURN(const Json* j, field(object, key, where));
    return integer_value(*j, absl::StrCat(where, ".", key), min, max);
  }

  absl::StatusOr<int64_t> integer_value(const Json& j, absl::string_view where, int64_t min,
                                        int64_t max) const {
    int64_t v = 0;
    if (j.is_number_unsigned()) {
      const auto u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return error(where, "is out of range");
      }
      v = static_cast<int64_t>(u);
    } else if (j.is_number_integer()) {
      v = j.get<int64_t>();
    } else {
      return error(where, "is not an integer");
    }
    if (v < min || v > max) {
      return error(where, absl::StrCat(v, " is outside [", min, ", ", max, "]"));
    }
    return v;
  }

  absl::StatusOr<double> number(const Json& object, absl::string_view key,
                                absl::string_view where) const {
    PSFLOW_ASSIGN_OR_RETURN(const Json* j, field(object, key, where));
    if (!j->is_number()) return error(where, absl::StrCat("\"", key, "\" is not a number"));
    return j->get<double>();
  }

  absl::StatusOr<const Json*> typed(const Json& object, absl::string_view key,
                                    absl::string_view where, Json::value_t type,
                                    absl::string_view type_name) const {
    PSFLOW_ASSIGN_OR_RETURN(const Json* j, field(object, key, where));
    if (j->type() != type) {
      return error(where, absl::StrCat("\"", key, "\" is not ", type_name));
    }
    return j;
  }

  absl::StatusOr<Shape> shape(const Json& object, absl::string_view where) const {
    PSFLOW_ASSIGN_OR_RETURN(const Json* j,
                            typed(object, "shape", where, Json::value_t::array, "an array"));
    Shape out;
    for (size_t i = 0; i < j->size(); ++i) {
      PSFLOW_ASSIGN_OR_RETURN(int64_t d,
                              integer_value((*j)[i], absl::StrCat(where, ".shape[", i, "]"), 0,
                                            std::numeric_limits<int64_t>::max()));
      out.push_back(d);
    }
    if (absl::StatusOr<int64_t> n = checked_num_elements(out); !n.ok()) {
      return error(where, n.status().message());
    }
    return out;
  }

 private:
  absl::string_view file_;
};

bool plain_file_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name != kIndexFileName &&
         name.find('/') == std::string_view::npos && name.find('\0') == std::string_view::npos;
}

absl::StatusOr<OptimizerConfig> parse_optimizer(const Reader& r, const Json& j) {
  const std::string where = "optimizer";
  if (!j.is_object()) return r.error(where, "is not an object");
  OptimizerConfig c;
  PSFLOW_ASSIGN_OR_RETURN(std::string kind, r.string(j, av(kOptimizerKindField), where));
  absl::StatusOr<OptimizerConfig::Kind> k = optimizer_kind_from_name(kind);
  if (!k.ok()) return r.error(where, k.status().message());
  c.kind = *k;
  for (const OptimizerField& f : kOptimizerFields) {
    if (f.flag != nullptr) {
      PSFLOW_ASSIGN_OR_RETURN(const Json* flag,
                              r.typed(j, av(f.name), where, Json::value_t::boolean, "a boolean"));
      c.*f.flag = flag->get<bool>();
    } else {
      PSFLOW_ASSIGN_OR_RETURN(c.*f.number, r.number(j, av(f.name), where));
    }
  }
  if (absl::Status s = validate_optimizer(c); !s.ok()) return r.error(where, s.message());
  return c;
}

absl::StatusOr<PartEntry> parse_part(const Reader& r, const Json& j, const std::string& where,
                                     const CheckpointIndex& index) {
  if (!j.is_object()) return r.error(where, "is not an object");
  PartEntry p;
  PSFLOW_ASSIGN_OR_RETURN(p.job, r.string(j, "job", where));
  PSFLOW_ASSIGN_OR_RETURN(int64_t task,
                          r.integer(j, "task", where, 0, std::numeric_limits<int>::max()));
  p.task = static_cast<int>(task);
  PSFLOW_ASSIGN_OR_RETURN(p.stored_name, r.string(j, "stored_name", where));
  PSFLOW_ASSIGN_OR_RETURN(p.offset,
                          r.integer(j, "offset", where, 0, std::numeric_limits<int64_t>::max()));
  PSFLOW_ASSIGN_OR_RETURN(p.shape, r.shape(j, where));
  PSFLOW_ASSIGN_OR_RETURN(p.file, r.string(j, "file", where));
  if (index.find_file(p.file) == nullptr) {
    return r.error(where, absl::StrCat("file '", p.file, "' is not listed in \"files\""));
  }
  PSFLOW_ASSIGN_OR_RETURN(p.key, r.string(j, "key", where));
  if (p.key.empty()) return r.error(where, "\"key\" is empty");
  PSFLOW_ASSIGN_OR_RETURN(p.optimizer, r.string(j, "optimizer", where));
  PSFLOW_ASSIGN_OR_RETURN(p.steps,
                          r.integer(j, "steps", where, 0, std::numeric_limits<int64_t>::max()));
  PSFLOW_ASSIGN_OR_RETURN(const Json* slots,
                          r.typed(j, "slots", where, Json::value_t::object, "an object"));
  for (auto it = slots->begin(); it != slots->end(); ++it) {
    if (!it.value().is_string() || it.value().get<std::string>().empty()) {
      return r.error(where, absl::StrCat("slot '", it.key(), "' does not name a tensor key"));
    }
    p.slots.emplace(it.key(), it.value().get<std::string>());
  }
  // The slots must be exactly the optimizer's.
  std::vector<std::string_view> expected;
  if (!p.optimizer.empty()) {
    absl::StatusOr<OptimizerConfig::Kind> kind = optimizer_kind_from_name(p.optimizer);
    if (!kind.ok()) return r.error(where, kind.status().message());
    expected = optimizer_slot_names(*kind);
  } else if (p.steps != 0) {
    return r.error(where, absl::StrCat("has ", p.steps, " steps but no optimizer"));
  }
  bool same = expected.size() == p.slots.size();
  for (std::string_view s : expected) same = same && p.slots.count(s) > 0;
  if (!same) {
    std::string names;
    for (const auto& [name, key] : p.slots)
      absl::StrAppend(&names, names.empty() ? "" : ", ", name);
    return r.error(
        where, absl::StrCat("slots {", names, "} are not those of optimizer '", p.optimizer, "'"));
  }
  return p;
}

absl::StatusOr<VariableEntry> parse_variable(const Reader& r, const Json& j, size_t i,
                                             const CheckpointIndex& index) {
  std::string where = absl::StrCat("variables[", i, "]");
  if (!j.is_object()) return r.error(where, "is not an object");
  VariableEntry v;
  PSFLOW_ASSIGN_OR_RETURN(v.name, r.string(j, "name", where));
  if (v.name.empty()) return r.error(where, "\"name\" is empty");
  where = absl::StrCat(where, " ('", v.name, "')");
  PSFLOW_ASSIGN_OR_RETURN(std::string dtype, r.string(j, "dtype", where));
  absl::StatusOr<DType> d = dtype_from_name(dtype);
  if (!d.ok()) return r.error(where, d.status().message());
  if (absl::StatusOr<std::string> st = safetensors_dtype(*d); !st.ok()) {
    return r.error(where, st.status().message());
  }
  v.dtype = *d;
  PSFLOW_ASSIGN_OR_RETURN(v.shape, r.shape(j, where));
  PSFLOW_ASSIGN_OR_RETURN(const Json* parts,
                          r.typed(j, "parts", where, Json::value_t::array, "an array"));
  if (parts->empty()) return r.error(where, "has no parts");
  if (v.shape.empty() && parts->size() != 1) {
    return r.error(where, absl::StrCat("a scalar has one part, not ", parts->size()));
  }
  int64_t next_row = 0;
  for (size_t k = 0; k < parts->size(); ++k) {
    const std::string part_where = absl::StrCat(where, ".parts[", k, "]");
    PSFLOW_ASSIGN_OR_RETURN(PartEntry p, parse_part(r, (*parts)[k], part_where, index));
    if (p.shape.size() != v.shape.size()) {
      return r.error(part_where, absl::StrCat("shape ", shape_string(p.shape), " has rank ",
                                              p.shape.size(), " but the variable's ",
                                              shape_string(v.shape), " has rank ", v.shape.size()));
    }
    if (v.shape.empty()) {
      if (p.offset != 0) return r.error(part_where, "a scalar's part has offset 0");
    } else {
      for (size_t a = 1; a < v.shape.size(); ++a) {
        if (p.shape[a] != v.shape[a]) {
          return r.error(part_where,
                         absl::StrCat("shape ", shape_string(p.shape), " differs from the ",
                                      "variable's ", shape_string(v.shape), " beyond axis 0"));
        }
      }
      if (p.offset != next_row) {
        return r.error(part_where, absl::StrCat("offset ", p.offset, " does not continue at row ",
                                                next_row, " where the previous part ends"));
      }
      if (p.shape[0] > v.shape[0] - next_row) {
        return r.error(part_where, absl::StrCat("rows [", p.offset, ", ", p.offset + p.shape[0],
                                                ") run past the variable's ", v.shape[0], " rows"));
      }
      next_row += p.shape[0];
    }
    v.parts.push_back(std::move(p));
  }
  if (!v.shape.empty() && next_row != v.shape[0]) {
    return r.error(where, absl::StrCat("the parts cover ", next_row, " of ", v.shape[0], " rows"));
  }
  return v;
}

constexpr std::string_view kInitializerNames[] = {"zeros", "uniform", "normal"};

Json table_options_json(const DynamicEmbeddingOptions& o) {
  return Json{{"dim", o.dim},
              {"dtype", std::string(dtype_name(o.dtype))},
              {"seed", o.seed},
              {"initializer", std::string(kInitializerNames[static_cast<int>(o.initializer)])},
              {"init_scale", o.init_scale},
              {"optimizer", optimizer_json(o.optimizer)},
              {"capacity_per_shard", o.capacity_per_shard},
              {"ttl_steps", o.ttl_steps},
              {"admit_after", o.admit_after},
              {"sketch_width", o.sketch_width},
              {"admit_probability", o.admit_probability}};
}

absl::StatusOr<DynamicEmbeddingOptions> parse_table_options(const Reader& r, const Json& j,
                                                            const std::string& where) {
  if (!j.is_object()) return r.error(where, "is not an object");
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  DynamicEmbeddingOptions o;
  PSFLOW_ASSIGN_OR_RETURN(o.dim, r.integer(j, "dim", where, 1, kMax));
  PSFLOW_ASSIGN_OR_RETURN(std::string dtype, r.string(j, "dtype", where));
  absl::StatusOr<DType> d = dtype_from_name(dtype);
  if (!d.ok()) return r.error(where, d.status().message());
  o.dtype = *d;
  PSFLOW_ASSIGN_OR_RETURN(const Json* seed, r.field(j, "seed", where));
  if (!seed->is_number_unsigned()) return r.error(where, "\"seed\" is not an unsigned integer");
  o.seed = seed->get<uint64_t>();
  PSFLOW_ASSIGN_OR_RETURN(std::string init, r.string(j, "initializer", where));
  bool known = false;
  for (size_t i = 0; i < std::size(kInitializerNames); ++i) {
    if (init == kInitializerNames[i]) {
      o.initializer = static_cast<DynamicEmbeddingInitializer>(i);
      known = true;
    }
  }
  if (!known) {
    return r.error(where, absl::StrCat("initializer '", init, "' is not zeros, uniform or normal"));
  }
  PSFLOW_ASSIGN_OR_RETURN(o.init_scale, r.number(j, "init_scale", where));
  PSFLOW_ASSIGN_OR_RETURN(const Json* opt, r.field(j, "optimizer", where));
  PSFLOW_ASSIGN_OR_RETURN(o.optimizer, parse_optimizer(r, *opt));
  PSFLOW_ASSIGN_OR_RETURN(o.capacity_per_shard, r.integer(j, "capacity_per_shard", where, 0, kMax));
  PSFLOW_ASSIGN_OR_RETURN(o.ttl_steps, r.integer(j, "ttl_steps", where, 0, kMax));
  PSFLOW_ASSIGN_OR_RETURN(o.admit_after, r.integer(j, "admit_after", where, 0, kMax));
  PSFLOW_ASSIGN_OR_RETURN(o.sketch_width, r.integer(j, "sketch_width", where, 0, kMax));
  PSFLOW_ASSIGN_OR_RETURN(o.admit_probability, r.number(j, "admit_probability", where));
  return o;
}

absl::StatusOr<TableEntry> parse_table(const Reader& r, const Json& j, size_t i,
                                       const CheckpointIndex& index) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  std::string where = absl::StrCat("tables[", i, "]");
  if (!j.is_object()) return r.error(where, "is not an object");
  TableEntry t;
  PSFLOW_ASSIGN_OR_RETURN(t.name, r.string(j, "name", where));
  if (t.name.empty()) return r.error(where, "\"name\" is empty");
  where = absl::StrCat(where, " ('", t.name, "')");
  PSFLOW_ASSIGN_OR_RETURN(const Json* options, r.field(j, "options", where));
  PSFLOW_ASSIGN_OR_RETURN(t.options, parse_table_options(r, *options, where + ".options"));
  PSFLOW_ASSIGN_OR_RETURN(const Json* shards,
                          r.typed(j, "shards", where, Json::value_t::array, "an array"));
  if (shards->empty()) return r.error(where, "has no shards");
  const std::vector<std::string_view> slot_names = optimizer_slot_names(t.options.optimizer.kind);
  for (size_t k = 0; k < shards->size(); ++k) {
    const Json& s = (*shards)[k];
    const std::string sw = absl::StrCat(where, ".shards[", k, "]");
    if (!s.is_object()) return r.error(sw, "is not an object");
    TableShardEntry e;
    PSFLOW_ASSIGN_OR_RETURN(int64_t task,
                            r.integer(s, "task", sw, 0, std::numeric_limits<int>::max()));
    e.task = static_cast<int>(task);
    if (e.task != static_cast<int>(k)) {
      return r.error(sw,
                     absl::StrCat("task ", e.task, " is not ", k, " (shards are in task order)"));
    }
    PSFLOW_ASSIGN_OR_RETURN(e.file, r.string(s, "file", sw));
    if (index.find_file(e.file) == nullptr) {
      return r.error(sw, absl::StrCat("file '", e.file, "' is not listed in \"files\""));
    }
    PSFLOW_ASSIGN_OR_RETURN(e.rows, r.integer(s, "rows", sw, 0, kMax));
    PSFLOW_ASSIGN_OR_RETURN(e.clock, r.integer(s, "clock", sw, 0, kMax));
    PSFLOW_ASSIGN_OR_RETURN(e.applies, r.integer(s, "applies", sw, 0, kMax));
    using Field = std::pair<const char*, std::string*>;
    for (const auto& [field, out] : std::initializer_list<Field>{
             {"keys", &e.keys}, {"values", &e.values}, {"last_seen", &e.last_seen}}) {
      PSFLOW_ASSIGN_OR_RETURN(*out, r.string(s, field, sw));
      if (out->empty()) return r.error(sw, absl::StrCat("\"", field, "\" is empty"));
    }
    PSFLOW_ASSIGN_OR_RETURN(const Json* slots,
                            r.typed(s, "slots", sw, Json::value_t::object, "an object"));
    for (auto it = slots->begin(); it != slots->end(); ++it) {
      if (!it.value().is_string() || it.value().get<std::string>().empty()) {
        return r.error(sw, absl::StrCat("slot '", it.key(), "' does not name a tensor key"));
      }
      e.slots.emplace(it.key(), it.value().get<std::string>());
    }
    bool same = slot_names.size() == e.slots.size();
    for (std::string_view n : slot_names) same = same && e.slots.count(n) > 0;
    if (!same) {
      return r.error(sw, absl::StrCat("slots are not those of the table's optimizer '",
                                      av(optimizer_name(t.options.optimizer.kind)), "'"));
    }
    t.shards.push_back(std::move(e));
  }
  return t;
}

}  // namespace

const TableEntry* CheckpointIndex::find_table(std::string_view name) const {
  for (const TableEntry& t : tables) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const VariableEntry* CheckpointIndex::find_variable(std::string_view name) const {
  for (const VariableEntry& v : variables) {
    if (v.name == name) return &v;
  }
  return nullptr;
}

const FileEntry* CheckpointIndex::find_file(std::string_view name) const {
  for (const FileEntry& f : files) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string index_to_json(const CheckpointIndex& index) {
  Json j = Json::object();
  j["format"] = std::string(kFormatName);
  j["format_version"] = kFormatVersion;
  if (index.iterations.has_value()) j["iterations"] = *index.iterations;
  if (index.optimizer.has_value()) j["optimizer"] = optimizer_json(*index.optimizer);
  Json files = Json::array();
  for (const FileEntry& f : index.files) {
    files.push_back({{"name", f.name},
                     {"job", f.job},
                     {"task", f.task},
                     {"size", f.digest.size},
                     {"crc32", f.digest.crc32}});
  }
  j["files"] = std::move(files);
  Json variables = Json::array();
  for (const VariableEntry& v : index.variables) {
    Json parts = Json::array();
    for (const PartEntry& p : v.parts) {
      Json slots = Json::object();
      for (const auto& [name, key] : p.slots) slots[name] = key;
      parts.push_back({{"job", p.job},
                       {"task", p.task},
                       {"stored_name", p.stored_name},
                       {"offset", p.offset},
                       {"shape", shape_json(p.shape)},
                       {"file", p.file},
                       {"key", p.key},
                       {"optimizer", p.optimizer},
                       {"steps", p.steps},
                       {"slots", std::move(slots)}});
    }
    variables.push_back({{"name", v.name},
                         {"dtype", std::string(dtype_name(v.dtype))},
                         {"shape", shape_json(v.shape)},
                         {"parts", std::move(parts)}});
  }
  j["variables"] = std::move(variables);
  if (!index.tables.empty()) {
    Json tables = Json::array();
    for (const TableEntry& t : index.tables) {
      Json shards = Json::array();
      for (const TableShardEntry& s : t.shards) {
        Json slots = Json::object();
        for (const auto& [name, key] : s.slots) slots[name] = key;
        shards.push_back({{"task", s.task},
                          {"file", s.file},
                          {"rows", s.rows},
                          {"clock", s.clock},
                          {"applies", s.applies},
                          {"keys", s.keys},
                          {"values", s.values},
                          {"last_seen", s.last_seen},
                          {"slots", std::move(slots)}});
      }
      tables.push_back({{"name", t.name},
                        {"admission_counts", "reset"},
                        {"options", table_options_json(t.options)},
                        {"shards", std::move(shards)}});
    }
    j["tables"] = std::move(tables);
  }
  return j.dump(1, ' ', false, Json::error_handler_t::replace) + "\n";
}

absl::StatusOr<CheckpointIndex> parse_index(std::string_view text, std::string_view file) {
  const Reader r(av(file));
  bool too_deep = false;
  auto callback = [&](int depth, Json::parse_event_t, Json&) {
    too_deep = too_deep || depth > kMaxIndexDepth;
    return true;
  };
  Json j = Json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/false);
  if (j.is_discarded()) return r.error("", "not valid JSON");
  if (too_deep) return r.error("", absl::StrCat("nests deeper than ", kMaxIndexDepth, " levels"));
  if (!j.is_object()) return r.error("", "not a JSON object");
  PSFLOW_ASSIGN_OR_RETURN(std::string format, r.string(j, "format", "index"));
  if (format != kFormatName) {
    return r.error("", absl::StrCat("format '", format, "' is not '", av(kFormatName), "'"));
  }
  PSFLOW_ASSIGN_OR_RETURN(int64_t version, r.integer(j, "format_version", "index", 0,
                                                     std::numeric_limits<int64_t>::max()));
  if (version != kFormatVersion) {
    return r.error("", absl::StrCat("format_version ", version, " is not one this psflow reads (",
                                    kFormatVersion, "); use a newer psflow"));
  }
  CheckpointIndex index;
  if (j.contains("iterations") && !j["iterations"].is_null()) {
    PSFLOW_ASSIGN_OR_RETURN(index.iterations, r.integer(j, "iterations", "index", 0,
                                                        std::numeric_limits<int64_t>::max()));
  }
  if (j.contains("optimizer") && !j["optimizer"].is_null()) {
    PSFLOW_ASSIGN_OR_RETURN(index.optimizer, parse_optimizer(r, j["optimizer"]));
  }
  PSFLOW_ASSIGN_OR_RETURN(const Json* files,
                          r.typed(j, "files", "index", Json::value_t::array, "an array"));
  for (size_t i = 0; i < files->size(); ++i) {
    const Json& f = (*files)[i];
    const std::string where = absl::StrCat("files[", i, "]");
    if (!f.is_object()) return r.error(where, "is not an object");
    FileEntry e;
    PSFLOW_ASSIGN_OR_RETURN(e.name, r.string(f, "name", where));
    if (!plain_file_name(e.name)) {
      return r.error(where,
                     absl::StrCat("'", e.name, "' is not a plain file name inside the checkpoint"));
    }
    if (index.find_file(e.name) != nullptr) {
      return r.error(where, absl::StrCat("file '", e.name, "' is listed twice"));
    }
    PSFLOW_ASSIGN_OR_RETURN(e.job, r.string(f, "job", where));
    PSFLOW_ASSIGN_OR_RETURN(int64_t task,
                            r.integer(f, "task", where, 0, std::numeric_limits<int>::max()));
    e.task = static_cast<int>(task);
    PSFLOW_ASSIGN_OR_RETURN(int64_t size,
                            r.integer(f, "size", where, 0, std::numeric_limits<int64_t>::max()));
    e.digest.size = static_cast<uint64_t>(size);
    PSFLOW_ASSIGN_OR_RETURN(int64_t crc, r.integer(f, "crc32", where, 0, 0xffffffffLL));
    e.digest.crc32 = static_cast<uint32_t>(crc);
    index.files.push_back(std::move(e));
  }
  PSFLOW_ASSIGN_OR_RETURN(const Json* variables,
                          r.typed(j, "variables", "index", Json::value_t::array, "an array"));
  for (size_t i = 0; i < variables->size(); ++i) {
    PSFLOW_ASSIGN_OR_RETURN(VariableEntry v, parse_variable(r, (*variables)[i], i, index));
    if (index.find_variable(v.name) != nullptr) {
      return r.error(absl::StrCat("variables[", i, "]"),
                     absl::StrCat("variable '", v.name, "' is listed twice"));
    }
    index.variables.push_back(std::move(v));
  }
  if (j.contains("tables") && !j["tables"].is_null()) {
    PSFLOW_ASSIGN_OR_RETURN(const Json* tables,
                            r.typed(j, "tables", "index", Json::value_t::array, "an array"));
    for (size_t i = 0; i < tables->size(); ++i) {
      PSFLOW_ASSIGN_OR_RETURN(TableEntry t, parse_table(r, (*tables)[i], i, index));
      if (index.find_table(t.name) != nullptr) {
        return r.error(absl::StrCat("tables[", i, "]"),
                       absl::StrCat("table '", t.name, "' is listed twice"));
      }
      index.tables.push_back(std::move(t));
    }
  }
  return index;
}

}  // namespace psflow::internal::checkpoint

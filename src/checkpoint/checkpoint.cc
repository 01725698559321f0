// Checkpoint: ps state to safetensors files + index.json, and back.
#include "psflow/checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/strings.h"
#include "checkpoint/checkpoint_io.h"
#include "checkpoint/file_io.h"
#include "checkpoint/index.h"
#include "checkpoint/reshard.h"
#include "checkpoint/safetensors.h"
#include "embedding/dynamic_table.h"
#include "embedding/table_reshard.h"
#include "optimizer/optimizer.h"
#include "psflow/cluster_spec.h"
#include "psflow/status_macros.h"
#include "strategy/dynamic_embedding_rows.h"
#include "strategy/variable_snapshots.h"
#include "tensor/codec_internal.h"

namespace psflow {

using internal::av;
using internal::optimizer_name;
using internal::optimizer_slot_names;
using internal::ShardSnapshot;
using internal::validate_optimizer_slots;

namespace {

namespace fs = std::filesystem;
using internal::checkpoint::CheckpointIndex;
using internal::checkpoint::FileDigest;
using internal::checkpoint::fs_error;
using internal::checkpoint::PartEntry;
using internal::checkpoint::unique_suffix;
using internal::checkpoint::VariableEntry;
using Prepared = internal::checkpoint::PreparedCheckpoint;

constexpr uint64_t kMaxIndexBytes = uint64_t{256} << 20;

std::string file_name_for(const Variable& part) {
  return absl::StrCat(part.job(), "-", part.task(), ".safetensors");
}

std::string describe(DType dtype, const Shape& shape) {
  return absl::StrCat(av(dtype_name(dtype)), " ", shape_string(shape));
}

// ---- save ----------------------------------------------------------------

absl::StatusOr<Prepared> prepare(const Checkpoint& ckpt) {
  std::vector<ShardedVariable> variables;
  std::vector<std::string> names;
  for (const auto& [name, v] : ckpt.variables()) {
    if (absl::StatusOr<std::string> st = internal::checkpoint::safetensors_dtype(v.dtype());
        !st.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot save variable '", name, "': ", st.status().message()));
    }
    variables.push_back(v);
    names.push_back(name);
  }
  if (ckpt.optimizer().has_value()) variables.push_back(ckpt.optimizer()->iterations());
  PSFLOW_ASSIGN_OR_RETURN(std::vector<std::vector<ShardSnapshot>> snapshots,
                          internal::snapshot_variables(variables));

  Prepared out;
  if (ckpt.optimizer().has_value()) {
    const Tensor& it = snapshots.back()[0].value;
    if (it.dtype() != DType::kInt64 || it.num_elements() != 1) {
      return absl::InternalError("the optimizer's iterations is not an int64 scalar");
    }
    out.index.iterations = it.scalar_value<int64_t>();
    out.index.optimizer = ckpt.optimizer()->config();
  }
  std::map<std::string, std::set<std::string>> keys;  // per file, to catch collisions
  for (size_t i = 0; i < names.size(); ++i) {
    const ShardedVariable& v = variables[i];
    VariableEntry entry;
    entry.name = names[i];
    entry.dtype = v.dtype();
    entry.shape = v.shape();
    for (size_t j = 0; j < v.num_parts(); ++j) {
      const Variable& part = v.variables()[j];
      ShardSnapshot& s = snapshots[i][j];
      PartEntry p;
      p.job = part.job();
      p.task = part.task();
      p.stored_name = part.name();
      p.offset = v.offsets()[j];
      p.shape = part.shape();
      p.file = file_name_for(part);
      p.key = absl::StrCat(names[i], "/part_", j);
      p.optimizer = s.slots.optimizer;
      p.steps = s.slots.steps;
      std::vector<internal::checkpoint::SafetensorsEntry>& file = out.files[p.file];
      std::set<std::string>& used = keys[p.file];
      auto add = [&](const std::string& key, Tensor t) -> absl::Status {
        if (!used.insert(key).second) {
          return absl::InvalidArgumentError(absl::StrCat("tensor key '", key,
                                                         "' would appear twice in ", p.file,
                                                         "; rename the checkpoint's variables"));
        }
        file.push_back({key, std::move(t)});
        return absl::OkStatus();
      };
      PSFLOW_RETURN_IF_ERROR(add(p.key, std::move(s.value)));
      for (auto& [slot, tensor] : s.slots.slots) {
        const std::string key = absl::StrCat(p.key, "/", slot);
        PSFLOW_RETURN_IF_ERROR(add(key, std::move(tensor)));
        p.slots.emplace(slot, key);
      }
      entry.parts.push_back(std::move(p));
    }
    out.index.variables.push_back(std::move(entry));
  }
  for (const auto& [name, table] : ckpt.tables()) {
    PSFLOW_ASSIGN_OR_RETURN(
        std::vector<internal::DynamicTable::Rows> shards,
        internal::export_table_rows(table, internal::checkpoint_table_page_rows()));
    internal::checkpoint::TableEntry entry;
    entry.name = name;
    entry.options = table.options();
    const std::vector<std::string_view> slot_names =
        internal::optimizer_slot_names(table.options().optimizer.kind);
    for (size_t t = 0; t < shards.size(); ++t) {
      internal::DynamicTable::Rows& rows = shards[t];
      internal::checkpoint::TableShardEntry e;
      e.task = static_cast<int>(t);
      e.file = absl::StrCat(av(kPsJob), "-", t, ".safetensors");
      e.rows = rows.keys.num_elements();
      e.clock = rows.clock;
      e.applies = rows.applies;
      const std::string prefix = absl::StrCat("table/", name, "/shard_", t);
      e.keys = prefix + "/keys";
      e.values = prefix + "/values";
      e.last_seen = prefix + "/last_seen";
      std::vector<internal::checkpoint::SafetensorsEntry>& file = out.files[e.file];
      std::set<std::string>& used = keys[e.file];
      auto add = [&](const std::string& key, Tensor tensor) -> absl::Status {
        if (!used.insert(key).second) {
          return absl::InvalidArgumentError(
              absl::StrCat("tensor key '", key, "' would appear twice in ", e.file,
                           "; rename the checkpoint's variables or tables"));
        }
        file.push_back({key, std::move(tensor)});
        return absl::OkStatus();
      };
      PSFLOW_RETURN_IF_ERROR(add(e.keys, std::move(rows.keys)));
      PSFLOW_RETURN_IF_ERROR(add(e.values, std::move(rows.values)));
      PSFLOW_RETURN_IF_ERROR(add(e.last_seen, std::move(rows.last_seen)));
      for (size_t j = 0; j < slot_names.size(); ++j) {
        const std::string key = absl::StrCat(prefix, "/", av(slot_names[j]));
        PSFLOW_RETURN_IF_ERROR(add(key, std::move(rows.slots[j])));
        e.slots.emplace(std::string(slot_names[j]), key);
      }
      entry.shards.push_back(std::move(e));
    }
    out.index.tables.push_back(std::move(entry));
  }
  for (const auto& [file, entries] : out.files) {
    internal::checkpoint::FileEntry f;
    f.name = file;
    // "<job>-<task>.safetensors": recover job and task from any part.
    for (const VariableEntry& v : out.index.variables) {
      for (const PartEntry& p : v.parts) {
        if (p.file == file) {
          f.job = p.job;
          f.task = p.task;
        }
      }
    }
    for (const internal::checkpoint::TableEntry& t : out.index.tables) {
      for (const internal::checkpoint::TableShardEntry& e : t.shards) {
        if (e.file == file) {
          f.job = std::string(kPsJob);
          f.task = e.task;
        }
      }
    }
    out.index.files.push_back(std::move(f));
  }
  return out;
}

// Writes `prepared` as directory `path`: everything goes into a temporary
// sibling directory that is renamed to `path` once complete. With
// `replace`, an existing checkpoint at `path` is swapped out and deleted.
absl::Status write_directory(Prepared prepared, const std::string& path, bool replace) {
  fs::path final_path = fs::path(path).lexically_normal();
  if (final_path.filename().empty()) final_path = final_path.parent_path();  // "a/b/
  fs::path parent = final_path.parent_path();
  if (parent.empty()) parent = ".";
  const std::string base = final_path.filename().string();
  if (base.empty() || base == "." || base == "..") {
    return absl::InvalidArgumentError(
        absl::StrCat("checkpoint path '", path, "' does not name a directory to create"));
  }
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) return fs_error(ec, absl::StrCat("cannot create directory ", parent.string()));
  if (!replace && fs::exists(final_path, ec)) {
    return absl::AlreadyExistsError(absl::StrCat(
        "checkpoint path ", path, " already exists; save to a new path or delete it first"));
  }
  const fs::path tmp = parent / absl::StrCat(".", base, ".tmp-", unique_suffix());
  if (!fs::create_directory(tmp, ec) || ec) {
    return fs_error(ec ? ec : std::make_error_code(std::errc::file_exists),
                    absl::StrCat("cannot create directory ", tmp.string()));
  }
  auto cleanup = [&tmp] {
    std::error_code ignored;
    fs::remove_all(tmp, ignored);
  };
  const std::map<std::string, std::string, std::less<>> metadata = {
      {"format", std::string(internal::checkpoint::kFormatName)},
      {"format_version", absl::StrCat(internal::checkpoint::kFormatVersion)}};
  for (internal::checkpoint::FileEntry& f : prepared.index.files) {
    std::map<std::string, std::string, std::less<>> meta = metadata;
    meta["task"] = task_name(f.job, f.task);
    absl::StatusOr<FileDigest> digest = internal::checkpoint::write_safetensors_file(
        (tmp / f.name).string(), prepared.files[f.name], meta);
    if (!digest.ok()) {
      cleanup();
      return digest.status();
    }
    f.digest = *digest;
  }
  absl::StatusOr<FileDigest> index = internal::checkpoint::write_file_atomically(
      (tmp / std::string(internal::checkpoint::kIndexFileName)).string(),
      internal::checkpoint::index_to_json(prepared.index));
  absl::Status synced =
      index.ok() ? internal::checkpoint::sync_directory(tmp.string()) : index.status();
  if (!synced.ok()) {
    cleanup();
    return synced;
  }
  fs::path old;
  if (replace && fs::exists(final_path, ec)) {
    old = parent / absl::StrCat(".", base, ".old-", unique_suffix());
    fs::rename(final_path, old, ec);
    if (ec) {
      cleanup();
      return fs_error(ec, absl::StrCat("cannot move the old ", path, " aside"));
    }
  }
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    const int e = errno;
    cleanup();
    return internal::checkpoint::errno_status(
        e, absl::StrCat("cannot rename ", tmp.string(), " to ", final_path.string()));
  }
  if (!old.empty()) fs::remove_all(old, ec);
  return internal::checkpoint::sync_directory(parent.string());
}

// ---- restore -------------------------------------------------------------

absl::StatusOr<CheckpointIndex> read_index(const std::string& path) {
  const std::string index_path =
      (fs::path(path) / std::string(internal::checkpoint::kIndexFileName)).string();
  absl::StatusOr<std::string> text = internal::checkpoint::read_file(index_path, kMaxIndexBytes);
  if (!text.ok()) {
    if (absl::IsNotFound(text.status())) {
      return absl::NotFoundError(
          absl::StrCat("no checkpoint at ", path, ": ", index_path, " does not exist"));
    }
    return text.status();
  }
  return internal::checkpoint::parse_index(*text, index_path);
}

// Reads one file of the checkpoint and checks it against the index.
absl::StatusOr<internal::checkpoint::SafetensorsContents> read_checked(
    const std::string& dir, const internal::checkpoint::FileEntry& f) {
  const std::string file = (fs::path(dir) / f.name).string();
  std::error_code ec;
  const uint64_t size = fs::file_size(file, ec);
  if (ec) return fs_error(ec, absl::StrCat("cannot read ", file));
  if (size != f.digest.size) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": the file is ", size,
                                                   " bytes but index.json records ", f.digest.size,
                                                   " (truncated or replaced)"));
  }
  PSFLOW_ASSIGN_OR_RETURN(std::string bytes, internal::checkpoint::read_file(file, f.digest.size));
  if (bytes.size() != f.digest.size) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": read ", bytes.size(),
                                                   " bytes but index.json records ", f.digest.size,
                                                   " (truncated)"));
  }
  const uint32_t crc = internal::checkpoint::crc32_of(bytes);
  if (crc != f.digest.crc32) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": CRC32 is ", crc,
                                                   " but index.json records ", f.digest.crc32,
                                                   " (the file is corrupt)"));
  }
  return internal::checkpoint::decode_safetensors(std::move(bytes), file);
}

// The tensor `key` of `file`, which must have `dtype` and `shape`.
absl::StatusOr<Tensor> part_tensor(
    const std::map<std::string, internal::checkpoint::SafetensorsContents>& contents,
    const std::string& dir, const std::string& file, const std::string& key, DType dtype,
    const Shape& shape, std::string_view what) {
  if (!contents.contains(file)) {
    return absl::InvalidArgumentError(absl::StrCat(dir, ": ", av(what), " names file '", file,
                                                   "', which index.json does not list"));
  }
  const std::string path = (fs::path(dir) / file).string();
  const internal::checkpoint::SafetensorsContents& c = contents.at(file);
  auto it = c.tensors.find(key);
  if (it == c.tensors.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no tensor '", key, "' (index.json's ", av(what), " names it)"));
  }
  if (it->second.dtype() != dtype || it->second.shape() != shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ": tensor '", key, "' is ", describe(it->second.dtype(), it->second.shape()),
        " but index.json's ", av(what), " is ", describe(dtype, shape)));
  }
  return it->second;
}

// Every saved variable's parts as the checkpoint's files hold them, after
// checking every file (size, CRC32, safetensors structure) and that each
// part names tensors of the dtype and shape index.json gives.
using SavedParts = std::map<std::string, std::vector<internal::checkpoint::SavedPart>>;
using Contents = std::map<std::string, internal::checkpoint::SafetensorsContents>;
using SavedTables = std::map<std::string, std::vector<internal::DynamicTable::Rows>>;

// Every file: size, checksum, structure.
absl::StatusOr<Contents> read_contents(const std::string& path, const CheckpointIndex& index) {
  Contents contents;
  for (const internal::checkpoint::FileEntry& f : index.files) {
    PSFLOW_ASSIGN_OR_RETURN(contents[f.name], read_checked(path, f));
  }
  return contents;
}

// Every saved table's shards as the files hold them, each checked as a
// shard's rows (tensors of the dtype and shape the index gives, distinct
// keys, last-seen steps within the clock). A key saved in two shards is
// found when the rows are regrouped for a restore (both land on one task).
absl::StatusOr<SavedTables> read_saved_tables(const std::string& path, const CheckpointIndex& index,
                                              const Contents& contents) {
  const std::string index_path =
      (fs::path(path) / std::string(internal::checkpoint::kIndexFileName)).string();
  SavedTables out;
  for (const internal::checkpoint::TableEntry& t : index.tables) {
    if (absl::Status s = internal::DynamicTable::validate_options(t.options); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(index_path, ": table '", t.name, "': ", s.message()));
    }
    // Capacity applies to the shards restored into, not to the saved ones.
    DynamicEmbeddingOptions unbounded = t.options;
    unbounded.capacity_per_shard = 0;
    const int64_t dim = t.options.dim;
    std::vector<internal::DynamicTable::Rows>& shards = out[t.name];
    for (const internal::checkpoint::TableShardEntry& e : t.shards) {
      const std::string what = absl::StrCat("table '", t.name, "' shard ", e.task);
      internal::DynamicTable::Rows rows;
      rows.clock = e.clock;
      rows.applies = e.applies;
      PSFLOW_ASSIGN_OR_RETURN(rows.keys, part_tensor(contents, path, e.file, e.keys, DType::kInt64,
                                                     {e.rows}, what + " keys"));
      PSFLOW_ASSIGN_OR_RETURN(
          rows.last_seen, part_tensor(contents, path, e.file, e.last_seen, DType::kInt64, {e.rows},
                                      what + " last_seen"));
      PSFLOW_ASSIGN_OR_RETURN(
          rows.values, part_tensor(contents, path, e.file, e.values, t.options.dtype, {e.rows, dim},
                                   what + " values"));
      for (std::string_view slot : internal::optimizer_slot_names(t.options.optimizer.kind)) {
        auto it = e.slots.find(slot);
        PSFLOW_ASSIGN_OR_RETURN(
            Tensor tensor,
            part_tensor(contents, path, e.file, it->second, t.options.dtype, {e.rows, dim},
                        absl::StrCat(what, " slot '", av(slot), "'")));
        rows.slots.push_back(std::move(tensor));
      }
      if (absl::Status s = internal::DynamicTable::validate_import(unbounded, rows); !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, "/", e.file, ": ", what, ": ", s.message()));
      }
      shards.push_back(std::move(rows));
    }
  }
  return out;
}

absl::StatusOr<SavedParts> read_saved_parts(const std::string& path, const CheckpointIndex& index,
                                            const Contents& contents) {
  const std::string index_path =
      (fs::path(path) / std::string(internal::checkpoint::kIndexFileName)).string();
  auto index_error = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(index_path, ": ", what));
  };
  // Every part of every saved variable names tensors that exist as described.
  SavedParts saved;
  for (const VariableEntry& v : index.variables) {
    std::vector<internal::checkpoint::SavedPart>& parts = saved[v.name];
    for (size_t j = 0; j < v.parts.size(); ++j) {
      const PartEntry& p = v.parts[j];
      const std::string what = absl::StrCat("variable '", v.name, "' part ", j);
      internal::checkpoint::SavedPart s;
      s.offset = p.offset;
      PSFLOW_ASSIGN_OR_RETURN(s.state.value,
                              part_tensor(contents, path, p.file, p.key, v.dtype, p.shape, what));
      s.state.slots.optimizer = p.optimizer;
      s.state.slots.steps = p.steps;
      for (const auto& [slot, key] : p.slots) {
        PSFLOW_ASSIGN_OR_RETURN(Tensor t,
                                part_tensor(contents, path, p.file, key, v.dtype, p.shape,
                                            absl::StrCat(what, " slot '", av(slot), "'")));
        s.state.slots.slots.emplace(slot, std::move(t));
      }
      if (absl::Status st = validate_optimizer_slots(s.state.slots, v.dtype, p.shape, p.key);
          !st.ok()) {
        return index_error(absl::StrCat(what, ": ", st.message()));
      }
      parts.push_back(std::move(s));
    }
  }
  return saved;
}

absl::Status restore_checkpoint(const Checkpoint& ckpt, const std::string& path) {
  PSFLOW_ASSIGN_OR_RETURN(CheckpointIndex index, read_index(path));
  const std::string index_path =
      (fs::path(path) / std::string(internal::checkpoint::kIndexFileName)).string();
  auto index_error = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(index_path, ": ", what));
  };
  const Optimizer* optimizer = ckpt.optimizer().has_value() ? &*ckpt.optimizer() : nullptr;
  const std::string_view kind = optimizer ? optimizer_name(optimizer->config().kind) : "";
  if (optimizer != nullptr) {
    if (!index.iterations.has_value()) {
      return index_error(
          "the checkpoint holds no optimizer iterations (it was saved without an optimizer), "
          "but this Checkpoint tracks one");
    }
    if (index.optimizer.has_value() && index.optimizer->kind != optimizer->config().kind) {
      return index_error(absl::StrCat(
          "the checkpoint was saved with the ", av(optimizer_name(index.optimizer->kind)),
          " optimizer, but this Checkpoint tracks a ", av(kind), " optimizer"));
    }
  }
  // The tracked variables against the index.
  std::vector<const VariableEntry*> entries;
  for (const auto& [name, v] : ckpt.variables()) {
    const VariableEntry* e = index.find_variable(name);
    if (e == nullptr) {
      std::vector<std::string> held;
      for (const VariableEntry& s : index.variables) held.push_back(absl::StrCat("'", s.name, "'"));
      return absl::NotFoundError(
          absl::StrCat(index_path, ": no variable '", name, "' in the checkpoint (it holds ",
                       held.empty() ? "none" : absl::StrJoin(held, ", "), ")"));
    }
    if (e->dtype != v.dtype() || e->shape != v.shape()) {
      return index_error(absl::StrCat("variable '", name, "' is ", describe(e->dtype, e->shape),
                                      " in the checkpoint but ", describe(v.dtype(), v.shape()),
                                      " here"));
    }
    if (optimizer != nullptr) {
      for (const PartEntry& p : e->parts) {
        if (!p.optimizer.empty() && p.optimizer != kind) {
          return index_error(absl::StrCat("variable '", name, "' has ", p.optimizer,
                                          " slots in the checkpoint, but this Checkpoint "
                                          "tracks a ",
                                          av(kind), " optimizer"));
        }
      }
    }
    entries.push_back(e);
  }
  // The tracked tables against the index.
  for (const auto& [name, table] : ckpt.tables()) {
    const internal::checkpoint::TableEntry* t = index.find_table(name);
    if (t == nullptr) {
      std::vector<std::string> held;
      for (const auto& s : index.tables) held.push_back(absl::StrCat("'", s.name, "'"));
      return absl::NotFoundError(
          absl::StrCat(index_path, ": no dynamic table '", name, "' in the checkpoint (it holds ",
                       held.empty() ? "none" : absl::StrJoin(held, ", "), ")"));
    }
    if (!(t->options == table.options())) {
      return index_error(absl::StrCat(
          "dynamic table '", name, "' was saved with other options (dim ", t->options.dim,
          ", seed ", t->options.seed, ", optimizer ", av(optimizer_name(t->options.optimizer.kind)),
          ") than this one's (dim ", table.options().dim, ", seed ", table.options().seed,
          ", optimizer ", av(optimizer_name(table.options().optimizer.kind)),
          "); define the table as it was saved"));
    }
  }
  PSFLOW_ASSIGN_OR_RETURN(Contents contents, read_contents(path, index));
  PSFLOW_ASSIGN_OR_RETURN(SavedParts saved, read_saved_parts(path, index, contents));
  PSFLOW_ASSIGN_OR_RETURN(SavedTables saved_tables, read_saved_tables(path, index, contents));
  // Where each table's saved rows go among its current ps tasks, checked
  // as each task will check them; the pages are cut from the files' bytes
  // while they are sent (no resharded copy of the table).
  std::vector<std::pair<DynamicEmbedding, internal::TableReshard>> tables;
  for (const auto& [name, table] : ckpt.tables()) {
    absl::StatusOr<internal::TableReshard> plan =
        internal::TableReshard::plan(saved_tables.at(name), table.num_shards(), table.options());
    if (!plan.ok()) {
      return index_error(absl::StrCat("dynamic table '", name, "' ", plan.status().message()));
    }
    tables.emplace_back(table, *std::move(plan));
  }
  contents.clear();
  // Each current part's state, resharded where the layouts differ.
  const OptimizerConfig* fill = index.optimizer.has_value() ? &*index.optimizer
                                : optimizer != nullptr      ? &optimizer->config()
                                                            : nullptr;
  std::vector<ShardedVariable> variables;
  std::vector<std::vector<ShardSnapshot>> states;
  size_t e = 0;
  for (const auto& [name, v] : ckpt.variables()) {
    std::vector<internal::checkpoint::TargetPart> targets;
    for (size_t j = 0; j < v.num_parts(); ++j) {
      targets.push_back({v.offsets()[j], v.variables()[j].shape()});
    }
    absl::StatusOr<std::vector<ShardSnapshot>> parts = internal::checkpoint::reshard(
        name, v.dtype(), v.shape(), saved.at(entries[e++]->name), targets, fill);
    if (!parts.ok()) return index_error(parts.status().message());
    for (size_t j = 0; j < parts->size(); ++j) {
      const Variable& part = v.variables()[j];
      absl::Status st =
          validate_optimizer_slots((*parts)[j].slots, part.dtype(), part.shape(), part.name());
      if (!st.ok()) return index_error(st.message());
    }
    variables.push_back(v);
    states.push_back(*std::move(parts));
  }
  if (optimizer != nullptr) {
    ShardSnapshot it;
    it.value = Tensor::scalar<int64_t>(*index.iterations);
    variables.push_back(optimizer->iterations());
    states.push_back({std::move(it)});
  }
  if (!variables.empty()) {
    PSFLOW_RETURN_IF_ERROR(internal::restore_variables(variables, states));
  }
  for (const auto& [table, plan] : tables) {
    PSFLOW_RETURN_IF_ERROR(internal::import_table_pages(
        table, plan.totals(), internal::checkpoint_table_page_rows(),
        [&plan = plan](int task, int64_t offset,
                       int64_t n) -> absl::StatusOr<internal::DynamicTable::Rows> {
          return plan.slice(task, offset, n);
        }));
  }
  return absl::OkStatus();
}

}  // namespace

namespace internal::checkpoint {

absl::StatusOr<PreparedCheckpoint> prepare_checkpoint(const Checkpoint& checkpoint) {
  return prepare(checkpoint);
}

absl::Status write_checkpoint_directory(PreparedCheckpoint prepared, const std::string& path,
                                        bool replace) {
  return write_directory(std::move(prepared), path, replace);
}

absl::StatusOr<CheckpointIndex> read_checkpoint_index(const std::string& path) {
  return read_index(path);
}

absl::Status verify_checkpoint(const std::string& path) {
  PSFLOW_ASSIGN_OR_RETURN(CheckpointIndex index, read_index(path));
  PSFLOW_ASSIGN_OR_RETURN(Contents contents, read_contents(path, index));
  PSFLOW_RETURN_IF_ERROR(read_saved_parts(path, index, contents).status());
  return read_saved_tables(path, index, contents).status();
}

bool is_damage(const absl::Status& status) {
  return absl::IsInvalidArgument(status) || absl::IsNotFound(status) || absl::IsDataLoss(status) ||
         absl::IsOutOfRange(status);
}

}  // namespace internal::checkpoint

// ---- Checkpoint ----------------------------------------------------------

absl::StatusOr<Checkpoint> Checkpoint::create(std::map<std::string, ShardedVariable> variables,
                                              std::optional<Optimizer> optimizer) {
  for (const auto& [name, v] : variables) {
    if (name.empty() || !internal::validate_key(name).ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "checkpoint variable names must be non-empty UTF-8 strings; got '", name, "'"));
    }
    if (!v.valid()) {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint variable '", name,
                       "' is an empty ShardedVariable handle; pass the result of create_variable"));
    }
  }
  return Checkpoint(std::move(variables), std::move(optimizer), {});
}

absl::StatusOr<Checkpoint> Checkpoint::create(std::map<std::string, ShardedVariable> variables,
                                              std::optional<Optimizer> optimizer,
                                              std::map<std::string, DynamicEmbedding> tables) {
  PSFLOW_ASSIGN_OR_RETURN(Checkpoint out, create(std::move(variables), std::move(optimizer)));
  for (const auto& [name, t] : tables) {
    if (name.empty() || !internal::validate_key(name).ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint table names must be non-empty UTF-8 strings; got '", name, "'"));
    }
    if (!t.valid()) {
      return absl::InvalidArgumentError(
          absl::StrCat("checkpoint table '", name,
                       "' is an empty DynamicEmbedding handle; pass the result of get_variable"));
    }
  }
  out.tables_ = std::move(tables);
  return out;
}

absl::Status Checkpoint::save(const std::string& path) const {
  PSFLOW_ASSIGN_OR_RETURN(Prepared prepared, prepare(*this));
  return write_directory(std::move(prepared), path, /*replace=*/false);
}

absl::Status Checkpoint::restore(const std::string& path) const {
  return restore_checkpoint(*this, path);
}

}  // namespace psflow

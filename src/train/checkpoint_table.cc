#include "train/checkpoint_table.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "checkpoint/file_io.h"
#include "checkpoint/index.h"
#include "checkpoint/safetensors.h"
#include "embedding/key_hash.h"
#include "psflow/status_macros.h"

namespace psflow::internal {
namespace {

namespace fs = std::filesystem;

// index.json of a checkpoint is small; this bounds a corrupt one.
constexpr uint64_t kMaxIndexBytes = uint64_t{256} << 20;

// The tensor `key` of `contents`, of `dtype` and `shape` as index.json says.
absl::StatusOr<Tensor> shard_tensor(const checkpoint::SafetensorsContents& contents,
                                    const std::string& file, const std::string& key, DType dtype,
                                    const Shape& shape) {
  auto it = contents.tensors.find(key);
  if (it == contents.tensors.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": holds no tensor '", key, "' that index.json names"));
  }
  if (it->second.dtype() != dtype || it->second.shape() != shape) {
    return absl::InvalidArgumentError(absl::StrCat(file, ": tensor '", key,
                                                   "' is not of the dtype and shape index.json "
                                                   "gives; the checkpoint is corrupt"));
  }
  return it->second;
}

}  // namespace

absl::StatusOr<CheckpointTable> CheckpointTable::read(const std::string& checkpoint_dir,
                                                      std::string_view table_name) {
  const std::string name(table_name);
  const std::string index_path =
      (fs::path(checkpoint_dir) / std::string(checkpoint::kIndexFileName)).string();
  PSFLOW_ASSIGN_OR_RETURN(std::string text, checkpoint::read_file(index_path, kMaxIndexBytes));
  PSFLOW_ASSIGN_OR_RETURN(checkpoint::CheckpointIndex index,
                          checkpoint::parse_index(text, index_path));
  const checkpoint::TableEntry* table = index.find_table(name);
  if (table == nullptr) {
    std::vector<std::string> held;
    for (const checkpoint::TableEntry& t : index.tables)
      held.push_back(absl::StrCat("'", t.name, "'"));
    return absl::NotFoundError(
        absl::StrCat(checkpoint_dir, " holds no embedding table '", name,
                     "' (its tables: ", held.empty() ? "none" : absl::StrJoin(held, ", "),
                     "); pass a checkpoint of a run of the model that defines it"));
  }
  if (table->options.dtype != DType::kFloat32) {
    return absl::InvalidArgumentError(absl::StrCat(index_path, ": table '", name,
                                                   "' is not float32; only float32 tables are "
                                                   "evaluated"));
  }
  CheckpointTable out;
  out.options_ = table->options;
  const int64_t dim = table->options.dim;
  // Shards share files (one per ps task): each file is read once.
  std::map<std::string, checkpoint::SafetensorsContents> files;
  for (const checkpoint::TableShardEntry& shard : table->shards) {
    const std::string path = (fs::path(checkpoint_dir) / shard.file).string();
    if (!files.contains(shard.file)) {
      const checkpoint::FileEntry* entry = index.find_file(shard.file);
      if (entry == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(index_path, ": table '", name, "' names the unlisted file ", shard.file));
      }
      PSFLOW_ASSIGN_OR_RETURN(std::string bytes, checkpoint::read_file(path, entry->digest.size));
      if (bytes.size() != entry->digest.size ||
          checkpoint::crc32_of(bytes) != entry->digest.crc32) {
        return absl::DataLossError(
            absl::StrCat(path,
                         ": its size or CRC32 is not the one index.json records; the checkpoint is "
                         "corrupt (or was overwritten while being read)"));
      }
      PSFLOW_ASSIGN_OR_RETURN(files[shard.file],
                              checkpoint::decode_safetensors(std::move(bytes), path));
    }
    const checkpoint::SafetensorsContents& contents = files.at(shard.file);
    PSFLOW_ASSIGN_OR_RETURN(Tensor keys,
                            shard_tensor(contents, path, shard.keys, DType::kInt64, {shard.rows}));
    PSFLOW_ASSIGN_OR_RETURN(Tensor values, shard_tensor(contents, path, shard.values,
                                                        DType::kFloat32, {shard.rows, dim}));
    const absl::Span<const int64_t> k = keys.flat<int64_t>();
    const absl::Span<const float> v = values.flat<float>();
    for (int64_t i = 0; i < shard.rows; ++i) {
      const auto [it, added] = out.row_of_.emplace(k[i], out.rows());
      if (!added) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": table '", name, "' holds key ",
                                                       k[i], " twice; the checkpoint is corrupt"));
      }
      out.values_.insert(out.values_.end(), v.begin() + i * dim, v.begin() + (i + 1) * dim);
    }
  }
  return out;
}

absl::StatusOr<Tensor> CheckpointTable::lookup(const Tensor& keys) const {
  if (keys.dtype() != DType::kInt64 || keys.rank() != 1) {
    return absl::InvalidArgumentError("CheckpointTable::lookup: keys must be int64 [n]");
  }
  const int64_t n = keys.dim(0);
  const int64_t dim = options_.dim;
  PSFLOW_ASSIGN_OR_RETURN(Tensor rows, Tensor::create(DType::kFloat32, {n, dim}));
  const absl::Span<const int64_t> k = keys.flat<int64_t>();
  float* out = rows.mutable_flat<float>().data();
  // admit_after counts are not saved: an absent key has not been admitted.
  const bool counted = options_.admit_after > 0;
  for (int64_t i = 0; i < n; ++i) {
    float* row = out + i * dim;
    if (auto it = row_of_.find(k[i]); it != row_of_.end()) {
      std::copy_n(values_.begin() + it->second * dim, dim, row);
    } else if (counted || admission_draw(options_.seed, k[i]) >= options_.admit_probability) {
      std::fill_n(row, dim, 0.0f);
    } else {
      initial_row(options_, k[i], row);
    }
  }
  return rows;
}

}  // namespace psflow::internal

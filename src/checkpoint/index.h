// index.json: the description of one checkpoint directory.
//
//   {"format": "psflow-checkpoint", "format_version": 1,
//    "iterations": 12,                      // absent without an optimizer
//    "optimizer": {"kind": "adam", "beta_1": 0.9, ...},  // or absent
//    "files": [{"name": "ps-0.safetensors", "job": "ps", "task": 0,
//               "size": 4242, "crc32": 123456789}, ...],
//    "variables": [{"name": "w", "dtype": "float32", "shape": [11, 4],
//       "parts": [{"job": "ps", "task": 0, "stored_name": "emb/part_0",
//                  "offset": 0, "shape": [4, 4], "file": "ps-0.safetensors",
//                  "key": "w/part_0", "optimizer": "adam", "steps": 3,
//                  "slots": {"m": "w/part_0/m", "v": "w/part_0/v"}}, ...]}],
//    "tables": [{"name": "user_ids", "admission_counts": "reset",
//       "options": {"dim": 16, "dtype": "float32", "seed": 7,
//                   "initializer": "uniform", "init_scale": 0.05,
//                   "optimizer": {...}, "capacity_per_shard": 0,
//                   "ttl_steps": 0, "admit_after": 0,
//                   "sketch_width": 1048576, "admit_probability": 1.0},
//       "shards": [{"task": 0, "file": "ps-0.safetensors", "rows": 3,
//                   "clock": 12, "applies": 4,
//                   "keys": "table/user_ids/shard_0/keys", "values": ...,
//                   "last_seen": ..., "slots": {"accumulator": ...}}, ...]}]}
//
// Parts are listed in row order; part i holds rows [offset, offset +
// shape[0]) of the full variable (a scalar has one part). "optimizer" and
// "steps" of a part are the optimizer that made its slots ("" for none)
// and how many updates it applied to that part (Adam's bias correction).
#ifndef PSFLOW_CHECKPOINT_INDEX_H_
#define PSFLOW_CHECKPOINT_INDEX_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/file_io.h"
#include "psflow/dynamic_embedding_options.h"
#include "psflow/optimizer_config.h"
#include "psflow/tensor.h"

namespace psflow::internal::checkpoint {

inline constexpr std::string_view kIndexFileName = "index.json";
inline constexpr std::string_view kFormatName = "psflow-checkpoint";
inline constexpr int kFormatVersion = 1;

// Thread-safety: a value type (as VariableEntry and FileEntry).
struct PartEntry {
  std::string job;
  int task = 0;
  std::string stored_name;
  int64_t offset = 0;
  Shape shape;
  std::string file;
  std::string key;
  std::string optimizer;
  int64_t steps = 0;
  // Slot name -> tensor key in `file`.
  std::map<std::string, std::string, std::less<>> slots;
};

struct VariableEntry {
  std::string name;
  DType dtype = DType::kInvalid;
  Shape shape;
  std::vector<PartEntry> parts;
};

// One ps task's shard of a dynamic embedding table: its rows' tensors
// (keys int64 [rows], values and each slot float32 [rows, dim], last_seen
// int64 [rows]) in `file`, and the shard's clock and optimizer step count.
struct TableShardEntry {
  int task = 0;
  std::string file;
  int64_t rows = 0;
  int64_t clock = 0;
  int64_t applies = 0;
  std::string keys;
  std::string values;
  std::string last_seen;
  // Slot name -> tensor key in `file`: exactly the table optimizer's slots.
  std::map<std::string, std::string, std::less<>> slots;
};

// A dynamic embedding table: its definition and its shards (one per ps
// task at save time, in task order).
struct TableEntry {
  std::string name;
  DynamicEmbeddingOptions options;
  std::vector<TableShardEntry> shards;
};

struct FileEntry {
  std::string name;
  std::string job;
  int task = 0;
  FileDigest digest;
};

// Thread-safety: a value type.
struct CheckpointIndex {
  std::optional<int64_t> iterations;
  std::optional<OptimizerConfig> optimizer;
  std::vector<FileEntry> files;
  std::vector<VariableEntry> variables;
  // Absent from checkpoints without tables (and from older ones).
  std::vector<TableEntry> tables;

  // nullptr when absent.
  [[nodiscard]] const VariableEntry* find_variable(std::string_view name) const;
  [[nodiscard]] const TableEntry* find_table(std::string_view name) const;
  [[nodiscard]] const FileEntry* find_file(std::string_view name) const;
};

[[nodiscard]] std::string index_to_json(const CheckpointIndex& index);

// Parses and checks an index from an untrusted file: every field's type
// and range, known dtypes and optimizers, plain file names listed once,
// unique variable names, parts that tile axis 0 in order and match the
// full shape beyond it, slots that are exactly their optimizer's, and
// files and keys that parts name. INVALID_ARGUMENT "<file>: <where>:
// <problem>", e.g. "/ckpt/ckpt-3/index.json: variables[1] ('w').parts[0]:
// offset 2 leaves rows [0, 2) uncovered".
[[nodiscard]] absl::StatusOr<CheckpointIndex> parse_index(std::string_view text,
                                                          std::string_view file);

}  // namespace psflow::internal::checkpoint

#endif  // PSFLOW_CHECKPOINT_INDEX_H_

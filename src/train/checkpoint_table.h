// A dynamic embedding table read from a checkpoint's files into this
// process (internal), for `psflow eval`, which never talks to the ps
// tasks: the rows the checkpoint holds, and for every other key the row
// the table would create for it (embedding/key_hash.h), so that a lookup
// answers what the table restored on the ps would.
#ifndef PSFLOW_TRAIN_CHECKPOINT_TABLE_H_
#define PSFLOW_TRAIN_CHECKPOINT_TABLE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "psflow/dynamic_embedding_options.h"
#include "psflow/tensor.h"

namespace psflow::internal {

// Thread-safety: immutable after read(); lookup may run concurrently.
class CheckpointTable {
 public:
  // Reads table `name` of the checkpoint directory `checkpoint_dir`
  // (index.json and its ps-<i>.safetensors files, every shard). NOT_FOUND
  // names the tables the checkpoint holds when `name` is not among them;
  // INVALID_ARGUMENT names the file of a malformed shard.
  [[nodiscard]] static absl::StatusOr<CheckpointTable> read(const std::string& checkpoint_dir,
                                                            std::string_view name);

  // float32 [n, dim] rows of int64 [n] keys. A key the checkpoint does
  // not hold reads as the table's initial row for it (as a lookup on the
  // ps creates it), or as zeros when the table has an admission rule that
  // does not admit it: admit_probability is decided by the key's draw;
  // admit_after counts are not saved (docs/embeddings.md), so such keys
  // read as not admitted yet.
  [[nodiscard]] absl::StatusOr<Tensor> lookup(const Tensor& keys) const;

  [[nodiscard]] const DynamicEmbeddingOptions& options() const { return options_; }
  [[nodiscard]] int64_t rows() const { return static_cast<int64_t>(row_of_.size()); }

 private:
  DynamicEmbeddingOptions options_;
  absl::flat_hash_map<int64_t, int64_t> row_of_;  // key -> row of values_
  std::vector<float> values_;                     // rows() * dim
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_CHECKPOINT_TABLE_H_

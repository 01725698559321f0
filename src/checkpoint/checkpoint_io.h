// The steps of Checkpoint::save and restore that CheckpointManager reuses:
// reading every part (prepare), writing a checkpoint directory, reading an
// index.
#ifndef PSFLOW_CHECKPOINT_CHECKPOINT_IO_H_
#define PSFLOW_CHECKPOINT_CHECKPOINT_IO_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "checkpoint/index.h"
#include "checkpoint/safetensors.h"
#include "psflow/checkpoint.h"

namespace psflow::internal::checkpoint {

// Everything a checkpoint directory holds, before it is written: the index
// (file digests still unset) and each file's tensors.
// Thread-safety: a value type.
struct PreparedCheckpoint {
  CheckpointIndex index;
  std::map<std::string, std::vector<SafetensorsEntry>> files;
};

// Snapshots every tracked part (and the optimizer's iterations), one
// request per task, all tasks in parallel.
[[nodiscard]] absl::StatusOr<PreparedCheckpoint> prepare_checkpoint(const Checkpoint& checkpoint);

// Writes directory `path` under a temporary sibling name, then renames it
// into place (files themselves through temp names, fsynced). Without
// `replace`, an existing `path` is ALREADY_EXISTS; with it, the old
// directory is moved aside and deleted after the rename.
[[nodiscard]] absl::Status write_checkpoint_directory(PreparedCheckpoint prepared,
                                                      const std::string& path, bool replace);

// The parsed and checked index.json of checkpoint `path` (NOT_FOUND when
// it has none).
[[nodiscard]] absl::StatusOr<CheckpointIndex> read_checkpoint_index(const std::string& path);

// Whether checkpoint `path` is intact, whatever it will be restored into:
// its index parses, every file has the size and CRC32 the index records
// and is well-formed safetensors, and every part and slot the index names
// is a tensor of the dtype and shape it gives. The error names the file
// and the problem (is_damage() tells damage from a failure to read).
[[nodiscard]] absl::Status verify_checkpoint(const std::string& path);

// Whether an error of verify_checkpoint says the checkpoint itself is damaged or incomplete
// (INVALID_ARGUMENT, NOT_FOUND, DATA_LOSS, OUT_OF_RANGE), rather than that it could not be read now
// (PERMISSION_DENIED, an I/O error), which reading again may cure.
[[nodiscard]] bool is_damage(const absl::Status& status);

}  // namespace psflow::internal::checkpoint

#endif  // PSFLOW_CHECKPOINT_CHECKPOINT_IO_H_

// Which checkpoint a rerun of `psflow train` resumes from (internal).
//
// CheckpointManager::restore_or_initialize keeps TF's meaning (restore the
// latest checkpoint or fail), because a library caller decides itself what
// a damaged checkpoint means. A training run cannot ask anyone: a
// preempted job restarted by its scheduler must go on. So the run falls
// back, here, past damaged checkpoints to the newest intact one, and lets
// the user pick one with --checkpoint.
//
// Nothing is deleted or overwritten on the way. A checkpoint the run does
// not resume from and that is newer than the one it resumes from (a
// damaged one, or a newer one passed over for --checkpoint) is renamed
// aside, "ckpt-<N>" to "ckpt-<N>.corrupt" or "ckpt-<N>.superseded" (then
// ".corrupt-2", ...), and a line says so: it stays on disk for inspection,
// is no longer one of the manager's checkpoints (so max_to_keep counts
// only the ones training can use and never deletes it), and the run's own
// new checkpoint of step N does not replace it. The sidecar evaluator
// skips it too.
#ifndef PSFLOW_TRAIN_RESUME_CHECKPOINT_H_
#define PSFLOW_TRAIN_RESUME_CHECKPOINT_H_

#include <cstdio>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "psflow/checkpoint.h"

namespace psflow::internal {

// Restores into `manager`'s checkpoint the checkpoint to resume from and
// returns its path, or nullopt when there is none (the variables keep
// their initial values). Lines about skipped and renamed checkpoints go
// to `out` (may be null).
//
// `requested` empty: the newest intact checkpoint of manager.directory(),
// checked with verify_checkpoint first; each damaged one newer than it is
// skipped with a line naming its path and the error, and renamed aside. A
// checkpoint that cannot be read now (permission, I/O) is an error, not
// damage. A checkpoint that is intact but does not fit the model (other
// --model or sizes) stops the run with restore's error: that is a wrong
// run directory, not damage. With no intact checkpoint left, training
// starts from the initial values, saying so.
//
// `requested` set (--checkpoint): a name in manager.directory() ("ckpt-200")
// or a path to a checkpoint directory. NOT_FOUND when it does not exist,
// INVALID_ARGUMENT when it is damaged; both name it, the error, and list
// the checkpoints available. The run's checkpoints newer than it are
// renamed aside.
[[nodiscard]] absl::StatusOr<std::optional<std::string>> restore_resume_checkpoint(
    CheckpointManager& manager, const std::string& requested, std::FILE* out);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_RESUME_CHECKPOINT_H_

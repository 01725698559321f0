// Surviving the loss of a parameter server, for programs that drive
// ClusterCoordinator themselves (`psflow train --ps-recovery` is built on
// it).
//
// TensorFlow treats a lost ps as fatal: the coordinator program must be
// restarted and restore its last checkpoint. PsRecovery does that restore in
// the running program instead. When a training step fails, recover(error)
// tells a ps fault apart from any other error by asking every ps task for
// its incarnation (a restarted task has a new one and has lost its
// variables), waits for lost tasks to come back (the local cluster,
// Kubernetes or Slurm restarts them), and restores *every* ps task from the
// latest checkpoint, not only the restarted one: the survivors hold values
// and optimizer slots newer than the checkpoint, and the optimizer's
// `iterations` lives on one task, so restoring the lost task alone would mix
// model states that never existed together. Afterwards the model is exactly
// as at that checkpoint; the steps since it are trained again.
//
//   CheckpointManager manager = *CheckpointManager::create(ckpt, "/ckpts", 3);
//   std::optional<std::string> resumed = *manager.restore_or_initialize();
//   PsRecovery recovery = *PsRecovery::create(strategy->cluster_spec(), manager);
//   int64_t step = resumed ? *load_checkpoint_iterations(*resumed) : 0;
//   while (step < total) {
//     absl::Status s = run_steps(coordinator, step, step + 100);  // schedule + join
//     if (s.ok()) { step += 100; (void)*manager.save(); continue; }
//     absl::StatusOr<PsRecovery::Restored> r = recovery.recover(s);
//     if (!r.ok()) return r.status();  // not a ps fault, or the ps stayed down
//     step = r->iterations.value_or(0);  // train again from the checkpoint
//   }
//
// The coordinator needs nothing special: the failed join() has reported
// the error, so it is usable again. Every update since the checkpoint, on
// every ps, is rolled back; workers and their per-worker datasets are left
// as they are (iterators do not rewind: the steps trained again read the
// next batches).
#ifndef PSFLOW_PS_RECOVERY_H_
#define PSFLOW_PS_RECOVERY_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "psflow/checkpoint.h"
#include "psflow/cluster_spec.h"

namespace psflow {

struct PsRecoveryOptions {
  // How long recover() waits for every ps task to answer again, from the
  // moment it is called; also how long create() waits for ps tasks still
  // starting. In (0, 24 h].
  absl::Duration timeout = absl::Minutes(5);
  // How many ps faults one PsRecovery recovers from; the next one is
  // returned as UNAVAILABLE. >= 0.
  int max_recoveries = 3;
  // Where recover() prints which tasks it waits for and what it restored,
  // one line each; nullptr: silent.
  std::FILE* out = nullptr;
};

// Thread-safety: not thread-safe; use from the thread that runs the
// training loop. The CheckpointManager it holds is shared with the
// caller's copies (saves from those are what recover() goes back to).
class PsRecovery {
 public:
  // What recover() did.
  struct Restored {
    // The ps tasks that restarted ("/job:ps/replica:0/task:1", ...).
    std::vector<std::string> restarted;
    // When none restarted: the tasks the error said were unreachable (a
    // link cut for longer than the channels' keepalive) that came back as
    // the same process.
    std::vector<std::string> unreachable;
    // The checkpoint every ps task was restored from.
    std::string checkpoint;
    // The optimizer iterations that checkpoint holds (nullopt when it
    // tracks no optimizer): the step to train again from.
    std::optional<int64_t> iterations;
  };

  // Records the incarnation of every ps task of `spec`, waiting up to
  // options.timeout for tasks still starting (DEADLINE_EXCEEDED names those
  // that never answered). When `checkpoints` holds no checkpoint yet, saves
  // one now, so that a recovery always has one to go back to.
  // INVALID_ARGUMENT names an option out of range; FAILED_PRECONDITION a
  // cluster without ps tasks.
  [[nodiscard]] static absl::StatusOr<PsRecovery> create(const ClusterSpec& spec,
                                                         CheckpointManager checkpoints,
                                                         PsRecoveryOptions options = {});

  PsRecovery(PsRecovery&&) noexcept;
  PsRecovery& operator=(PsRecovery&&) noexcept;
  ~PsRecovery();

  // Call with the error that stopped training (from join(), schedule(),
  // fetch() or a variable operation). Waits until every ps task answers,
  // then:
  // * some task restarted since create() or the last recovery: every ps
  //   task is restored from the latest checkpoint and the result says which
  //   tasks restarted and what was restored;
  // * none restarted, but `error` is UNAVAILABLE or DEADLINE_EXCEEDED naming
  //   a ps task (its link was cut, or it was paused, past the keepalive): it
  //   is back with its variables, yet the failed steps may have updated
  //   some tasks and not others, so every ps task is restored the same way
  //   (Restored::unreachable names them);
  // * otherwise the error was not a ps fault and is returned unchanged.
  // DEADLINE_EXCEEDED, naming the tasks still down and quoting `error`, when
  // options.timeout passes first; UNAVAILABLE once max_recoveries are used
  // up; errors of Checkpoint::restore as they are. INVALID_ARGUMENT for an
  // OK `error`.
  [[nodiscard]] absl::StatusOr<Restored> recover(const absl::Status& error);

  // Recoveries done so far.
  [[nodiscard]] int recoveries() const;
  [[nodiscard]] int num_ps_tasks() const;

 private:
  struct State;
  explicit PsRecovery(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace psflow

#endif  // PSFLOW_PS_RECOVERY_H_

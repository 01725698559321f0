// What a run of `psflow train` is asked to do, whatever the model
// (internal).
#ifndef PSFLOW_TRAIN_TRAIN_OPTIONS_H_
#define PSFLOW_TRAIN_TRAIN_OPTIONS_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "base/stop_request.h"

namespace psflow::internal {

class StepObserver;  // train/step_observer.h

inline constexpr char kParameterServerStrategy[] = "parameter_server";
inline constexpr char kMirroredStrategy[] = "mirrored";

// How a model reads data_dir and partitioner is its own (train/model.h).
// Thread-safety: a value type.
struct TrainOptions {
  std::string model = "mlp";  // a name train/model_registry.h knows
  // "parameter_server" (ps and worker tasks) or "mirrored" (replicas as
  // threads of this process, gradients all-reduced every step).
  std::string strategy = kParameterServerStrategy;
  int replicas = 2;  // mirrored only
  int epochs = 5;
  // Keras's default; with 2 workers it reaches 0.88 test accuracy on the
  // mlp in 5 epochs (64 gives about 0.87, in two thirds of the time).
  int64_t batch_size = 32;
  std::string optimizer = "adam";
  double learning_rate = 1e-3;
  // "cosine" (Keras's CosineDecay to 10% over the whole run) or "constant".
  std::string lr_schedule = "cosine";
  // Training steps per scheduled closure (TF's steps_per_execution, whose
  // Keras default is 1). 10 by default: each step still pulls and pushes
  // its own parameters and gradients, but the coordinator's dispatch and
  // the closure's round trip are paid once per 10 steps (docs/benchmarks.md:
  // "With 10 steps per closure" and the step profile "After").
  int64_t steps_per_execution = 10;
  // Overlap pushes and reads with computation within a closure's steps
  // (train/overlapped_steps.h; the classifiers only).
  bool overlap = false;
  uint64_t seed = 0;
  std::string data_dir;  // Empty: the model's default data.
  std::string run_dir;   // Where summary.json goes; created if missing.
  // What a reader that has the choice does with a bad line: "error" or
  // "skip" (dlrm's Criteo reader; data/criteo_reader.h).
  std::string bad_lines = "error";
  // The checkpoint to resume from (--checkpoint): a name in
  // <run_dir>/checkpoints or a path; empty: the newest intact one
  // (train/resume_checkpoint.h).
  std::string checkpoint;
  // Spec string of the variable partitioner (train/partitioner_flag.h):
  // "auto" (the model's choice: TF's tutorial MinSizePartitioner(256 KiB,
  // max_shards=num_ps) for most), "none", "fixed:<shards>",
  // "min_size:<bytes>[:<max_shards>]", "max_size:<bytes>[:<max_shards>]".
  std::string partitioner = "auto";
  // Where the strategy puts each variable and shard: "fewest_bytes" or
  // "round_robin" (VariablePlacement).
  std::string placement = "fewest_bytes";
  // How pulled parameters and pushed gradients travel: "float32" or
  // "bfloat16" (WireDType; the ps keeps float32 either way).
  std::string wire_dtype = "float32";
  // What the loss of a ps task does: false stops training with UNAVAILABLE
  // naming the task (TF's behaviour); true waits up to
  // ps_recovery_timeout_seconds for it to come back, restores every ps to
  // the latest checkpoint (saved every epoch, and once before the first)
  // and trains on from there, reporting the steps rolled back; at most
  // max_ps_recoveries times per run. Needs run_dir. See psflow/ps_recovery.h.
  bool ps_recovery = false;
  double ps_recovery_timeout_seconds = 300;
  int max_ps_recoveries = 10;
  // Asked to stop early (a signal; null: never): a request cancels the
  // closures in flight, saves a last checkpoint when it is consistent and
  // ends the run with the request's reason (EpochLoop::run). Training says
  // what it does through it (StopRequest::set_activity). Must outlive the
  // run.
  StopRequest* stop = nullptr;
  // Progress output; null for none.
  std::FILE* out = stdout;
  // Redraw one progress line in place (a terminal) rather than printing
  // a line every tenth of an epoch (logs, CI).
  bool interactive_progress = false;
  // Told of the steps as they complete, besides the trainer's own observer
  // (per-step TensorBoard scalars); null for none. Must outlive the run.
  StepObserver* step_observer = nullptr;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_TRAIN_OPTIONS_H_

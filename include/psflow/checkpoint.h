// Checkpoints of parameter-server state (TF's tf.train.Checkpoint and
// tf.train.CheckpointManager): every variable's parts, their optimizer
// slots and per-part step counts, and the optimizer's `iterations`, saved
// while training runs and restored into the same or another cluster.
//
//   Checkpoint ckpt = *Checkpoint::create({{"dense/kernel", w}, {"dense/bias", b}}, optimizer);
//   CheckpointManager manager = *CheckpointManager::create(ckpt, "/ckpts", 3);
//   std::optional<std::string> restored = *manager.restore_or_initialize();
//   ... train ...
//   std::string path = *manager.save();  // "/ckpts/ckpt-<iterations>"
//
// On disk a checkpoint is a directory holding one safetensors file per
// task that stores parts ("ps-0.safetensors", ...; "chief-0.safetensors"
// for variables made outside any strategy scope) and an index.json that
// names, per variable, its full name, dtype and shape, and per part its
// task, row offset, shape, file and tensor key, its slots' keys, its
// optimizer and step count; plus the iterations value, the optimizer's
// hyper-parameters, a format version and each file's size and CRC32
// (src/checkpoint/index.h has the schema). Python reads it with the
// safetensors package, or with struct + json alone. The directory appears
// only when complete (it is written under a temporary name and renamed), so
// a crash never leaves a checkpoint that looks valid but is not.
//
// Resharding: as TF restores a checkpoint into a different number of
// shards (a ShardedVariable saves its full value, which restore splits
// anew), restore() accepts variables whose parts differ from the saved
// ones (another partitioner, another number of ps tasks, or sharded versus
// not): each current part receives its rows, reassembled from the saved
// parts by row offset, and so do its optimizer slots (slots have their
// variable's shape). A part's restored step count (Adam's bias correction)
// is the largest among the saved parts that held its rows; rows whose saved
// part had no optimizer state get the slots' initial values.
//
// Dynamic embedding tables (DynamicEmbedding) are saved in the same
// checkpoint: per ps task its keys, values, optimizer slots and last-seen
// steps, and the table's definition in index.json. A restore sends every
// saved row to the ps task its key hashes to now, so it works into another
// number of ps tasks; the admission counts of keys without a row are not
// saved (restored tables count sightings afresh). docs/embeddings.md,
// "Checkpoints".
#ifndef PSFLOW_CHECKPOINT_H_
#define PSFLOW_CHECKPOINT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/dynamic_embedding.h"
#include "psflow/optimizer.h"
#include "psflow/variable.h"

namespace psflow {

class CheckpointManager;

// What a checkpoint holds: variables under names of the caller's choosing
// (the names, not the variables' stored names, match a saved variable to a
// current one, so a restarted coordinator whose variables got other stored
// names still restores them), and optionally an optimizer, whose
// `iterations` is saved. Optimizer slots are saved with the variables'
// parts whether or not an optimizer is tracked.
// Thread-safety: immutable; save and restore may run concurrently (a
// restore racing training or another restore leaves each part in one of
// the states written).
class Checkpoint {
 public:
  // INVALID_ARGUMENT for an empty or non-UTF-8 name, or an empty
  // (default-constructed) variable.
  [[nodiscard]] static absl::StatusOr<Checkpoint> create(
      std::map<std::string, ShardedVariable> variables,
      std::optional<Optimizer> optimizer = std::nullopt);
  // With dynamic embedding tables, also under names of the caller's
  // choosing (a namespace apart from the variables'); pass
  // strategy->dynamic_embeddings() for every table of a strategy.
  // INVALID_ARGUMENT for an empty or non-UTF-8 name or an empty handle.
  [[nodiscard]] static absl::StatusOr<Checkpoint> create(
      std::map<std::string, ShardedVariable> variables, std::optional<Optimizer> optimizer,
      std::map<std::string, DynamicEmbedding> tables);

  [[nodiscard]] const std::map<std::string, ShardedVariable>& variables() const {
    return variables_;
  }
  [[nodiscard]] const std::optional<Optimizer>& optimizer() const { return optimizer_; }
  [[nodiscard]] const std::map<std::string, DynamicEmbedding>& tables() const { return tables_; }

  // TF's checkpoint.write(path): reads every part's value, slots and step
  // count (one request per task, all tasks in parallel), then writes the
  // directory `path`, which must not exist (ALREADY_EXISTS). Its parent
  // is created if needed. Each part is read atomically on its task; the
  // parts are not one atomic cut of the whole model (training may continue
  // meanwhile, as in TF). INVALID_ARGUMENT for string variables (safetensors
  // has no string dtype). Each table shard is copied on its task under the
  // shard's lock: the rows after a prefix of the updates that task applied.
  [[nodiscard]] absl::Status save(const std::string& path) const;

  // TF's checkpoint.restore(path): reads and checks the whole checkpoint
  // first (index, every file's size and CRC32, the safetensors structure,
  // and for every tracked variable its presence, dtype, full shape, parts,
  // slots and optimizer) and changes nothing unless all of it is sound: the
  // error (INVALID_ARGUMENT, NOT_FOUND for a missing file or variable) names
  // the file and the mismatch. Then every current part is written with
  // RESTORE, one request per task in parallel; each task validates its
  // request before applying it, so only a task failing in the middle of
  // this last step (UNAVAILABLE) can leave some tasks restored and others
  // not. Restores into another part layout (see the top of this file).
  // Saved variables that are not tracked are ignored. With a tracked
  // optimizer, the checkpoint must hold iterations and, if it names an
  // optimizer, the same kind. Parts that a ps no longer holds (it
  // restarted) are created again. Every tracked table must be in the
  // checkpoint with the same definition (options); its rows replace the
  // table's on every ps task (rows the checkpoint does not hold are gone),
  // after the checks above and of every saved row (dtype and shape of its
  // tensors, row counts, duplicate keys).
  [[nodiscard]] absl::Status restore(const std::string& path) const;

 private:
  friend class CheckpointManager;
  Checkpoint(std::map<std::string, ShardedVariable> variables, std::optional<Optimizer> optimizer,
             std::map<std::string, DynamicEmbedding> tables)
      : variables_(std::move(variables)),
        optimizer_(std::move(optimizer)),
        tables_(std::move(tables)) {}

  std::map<std::string, ShardedVariable> variables_;
  std::optional<Optimizer> optimizer_;
  std::map<std::string, DynamicEmbedding> tables_;
};

// TF's delayed restore (restore-on-create): a checkpoint restored before
// the variables it holds exist. While the guard lives, every variable
// created on this thread (create_variable in or outside a strategy scope,
// strategy->create_variable) whose requested name (VariableOptions::name)
// is the name of a variable saved in the checkpoint gets the saved value,
// optimizer slots and step counts before create_variable returns it, as
// TF restores a variable when it joins the checkpointed object graph.
// Sharded or not, and into another part layout (another partitioner or
// number of ps tasks: see resharding above). Each saved variable is
// restored once, into the first variable created under its name.
//
//   auto restoring = *RestoreOnCreate::start("/ckpts/ckpt-200");
//   {
//     StrategyScope scope = strategy->scope();
//     ShardedVariable w = *create_variable(initial, {.name = "dense/kernel"});
//   }  // w holds the saved "dense/kernel", resharded for this strategy
//   PSFLOW_RETURN_IF_ERROR(restoring->assert_consumed());
//
// Each restore checks the whole checkpoint as Checkpoint::restore does,
// so a large checkpoint costs a read per variable restored.
// Thread-safety: a thread-local guard: use it on the thread that made it,
// which is the only one whose creations it sees; not movable.
class RestoreOnCreate {
 public:
  // Reads and checks checkpoint `path` (index, every file's size and CRC32,
  // its tensors) and installs the guard; restores nothing yet. Errors as
  // Checkpoint::restore's reading phase (NOT_FOUND for no checkpoint).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<RestoreOnCreate>> start(std::string path);

  ~RestoreOnCreate();
  RestoreOnCreate(const RestoreOnCreate&) = delete;
  RestoreOnCreate& operator=(const RestoreOnCreate&) = delete;

  // The saved variables restored so far, and those still waiting for a
  // variable of their name, sorted.
  [[nodiscard]] std::vector<std::string> restored() const;
  [[nodiscard]] std::vector<std::string> pending() const;
  // TF's status.assert_consumed(): OK once every saved variable has been
  // restored, else FAILED_PRECONDITION naming those that have not.
  [[nodiscard]] absl::Status assert_consumed() const;

 private:
  struct State;
  explicit RestoreOnCreate(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// TF's tf.train.CheckpointManager: numbered checkpoints "ckpt-<N>" in one
// directory, the newest `max_to_keep` kept. N is the optimizer's
// iterations at the time of the save when the checkpoint tracks an
// optimizer (saving twice at the same step replaces that checkpoint), else
// one more than the largest N in the directory (starting at 1).
// Each save first removes what earlier crashed saves left behind (hidden
// ".ckpt-<N>.tmp-..." directories, never mistaken for checkpoints).
// Thread-safety: all methods are thread-safe; saves are serialised. Two
// managers (or processes) must not share a directory.
class CheckpointManager {
 public:
  // Creates `directory` if needed. max_to_keep: nullopt keeps every
  // checkpoint; otherwise it must be >= 1 (INVALID_ARGUMENT, TF's rule).
  [[nodiscard]] static absl::StatusOr<CheckpointManager> create(Checkpoint checkpoint,
                                                                std::string directory,
                                                                std::optional<int> max_to_keep);

  // Saves "<directory>/ckpt-<N>", then deletes the oldest checkpoints
  // beyond max_to_keep. Returns the new checkpoint's path.
  [[nodiscard]] absl::StatusOr<std::string> save();
  // The complete checkpoint with the largest N; nullopt when there is none
  // (or the directory cannot be read: psflow::latest_checkpoint says why).
  [[nodiscard]] std::optional<std::string> latest_checkpoint() const;
  // TF's manager.checkpoints: the complete checkpoints, oldest first.
  [[nodiscard]] std::vector<std::string> checkpoints() const;
  // Restores the latest checkpoint and returns its path, or returns nullopt
  // when there is none (the variables keep their initial values: TF's
  // restore_or_initialize without an init_fn). Errors of restore() and of
  // reading the directory are returned as they are: a damaged latest
  // checkpoint is an error here, as in TF, and nothing falls back to an
  // older one (the caller decides; `psflow train` does fall back, renaming
  // the damaged one aside: docs/fault_tolerance.md, "Damaged checkpoints").
  [[nodiscard]] absl::StatusOr<std::optional<std::string>> restore_or_initialize();

  [[nodiscard]] const std::string& directory() const;
  [[nodiscard]] const Checkpoint& checkpoint() const;

 private:
  struct State;
  explicit CheckpointManager(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

// TF's tf.train.latest_checkpoint(directory): the path of the complete
// "ckpt-<N>" with the largest N, or nullopt when there is none (also when
// the directory does not exist).
[[nodiscard]] absl::StatusOr<std::optional<std::string>> latest_checkpoint(
    const std::string& directory);

// The optimizer iterations a checkpoint saved, read from its index alone
// (so that a restarted coordinator can compute its initial epoch before
// restoring). NOT_FOUND when the checkpoint holds no iterations (it
// tracked no optimizer); INVALID_ARGUMENT for a malformed index.
[[nodiscard]] absl::StatusOr<int64_t> load_checkpoint_iterations(const std::string& path);

}  // namespace psflow

#endif  // PSFLOW_CHECKPOINT_H_

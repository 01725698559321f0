// Per-worker datasets (TF's coordinator.create_per_worker_dataset): every
// worker builds its own copy of the input pipeline from a registered
// dataset function, and a scheduled function reads the next element of the
// copy on the worker it runs on.
//
//   PSFLOW_DATASET_FUNCTION(train_data, ctx, args) {
//     return psflow::Dataset::range(1000)
//         .shard(ctx.num_workers, ctx.worker_index)   // or shuffle + repeat
//         .batch(args.int_value());
//   }
//   PSFLOW_FUNCTION(step, ctx, args) {
//     PSFLOW_ASSIGN_OR_RETURN(Structure batch, ctx.next(args));  // this worker's
//     ...
//   }
//   PerWorkerDataset ds = *coordinator->create_per_worker_dataset("train_data", 32);
//   PerWorkerIterator it = ds.iter();
//   coordinator->schedule("step", it.handle());
//
// A worker builds its copy the first time a closure reads from it, so a
// worker that restarts (or joins late) rebuilds it and starts its pass
// afresh, as TF rebuilds per-worker resources on a recovered worker.
//
// Release: once every copy of a PerWorkerIterator made by a coordinator's
// dataset is gone and no closure using it is queued or running, the
// coordinator tells the workers to drop their iterators, in batches (as
// TFF's executor protocol disposes values): when a batch fills, at every
// join(), and when the coordinator is destroyed. So a job that makes a
// fresh iterator each epoch holds one per worker, not one per epoch.
#ifndef PSFLOW_PER_WORKER_H_
#define PSFLOW_PER_WORKER_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/dataset.h"
#include "psflow/named_registry.h"
#include "psflow/structure.h"

namespace psflow {

namespace internal {
class PerWorkerLease;   // Shared by a handle's copies (runtime).
class PerWorkerIssuer;  // The coordinator's registry of handles (runtime).
struct PerWorkerAccess;
}  // namespace internal

// What a dataset function knows about the worker it runs on (the worker
// part of TF's InputContext), so that it can shard its input.
// Thread-safety: a value type.
struct DatasetContext {
  int worker_index = 0;
  int num_workers = 1;
  // How often the coordinator had seen this worker come back after losing
  // it when the dataset was built (0 in a fault-free run).
  int64_t worker_recoveries = 0;
  // 0 in the first process serving this worker index; a value unique to
  // the process when it replaced an earlier one (a restart). A seeded
  // shuffle mixes it into its seed (worker_seed), so that a restarted worker does not
  // replay its order from the same start (which, under frequent
  // preemption, over-trains on the first examples of that order), while
  // fault-free runs stay reproducible.
  uint64_t restart_salt = 0;

  // A shuffle seed for this worker from a run's `seed`: different per
  // worker (so workers see different orders, TF's advice: shuffle and
  // repeat per worker rather than shard), reproducible for a given seed,
  // and new after a restart (restart_salt).
  [[nodiscard]] uint64_t worker_seed(uint64_t seed) const {
    return seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(worker_index) + 1 +
           restart_salt * 0xD1B54A32D192ED03ull;
  }
};

using DatasetFunction =
    std::function<absl::StatusOr<Dataset>(const DatasetContext& ctx, const Structure& args)>;

// Dataset functions by name, filled at static initialisation in every
// process of the binary (as FunctionRegistry); lookup() gives a copy of the
// function.
// Thread-safety: thread-safe; entries are never removed.
class DatasetRegistry : public NamedRegistry<DatasetRegistry, DatasetFunction> {
 public:
  // INVALID_ARGUMENT for an empty name or function; ALREADY_EXISTS.
  [[nodiscard]] absl::Status register_dataset(std::string name, DatasetFunction fn) {
    return register_function(std::move(name), std::move(fn));
  }
  // The function registered under `name` (NOT_FOUND with close names
  // otherwise), as every worker runs it: a variable it creates is refused
  // (INVALID_ARGUMENT "Creating variables in `dataset_fn` is not allowed",
  // TF's ValueError), since it would live on that worker only. So the
  // per-worker dataset fails to build on the worker, and no closure reads
  // from it. (TF traces dataset_fn on the coordinator and refuses at
  // create_per_worker_dataset; psflow's dataset functions run on workers
  // only, so the refusal comes when a worker builds its copy.)
  [[nodiscard]] absl::StatusOr<DatasetFunction> lookup(std::string_view name) const;
};

// Registers at static initialisation; aborts on a duplicate name.
using DatasetRegistrar = NamedRegistrar<DatasetRegistry>;

// One iterator per worker over its copy of a per-worker dataset. A handle:
// pass handle() (or the iterator, which converts) in schedule() arguments;
// the function reads with WorkerContext::next / get_next. Copies share the
// iterators; the workers drop theirs after the last copy goes (see above),
// so keep a PerWorkerIterator, not only its handle() Structure, while
// scheduling with it: a closure given a released iterator fails with
// FAILED_PRECONDITION.
// Thread-safety: a value type.
class PerWorkerIterator {
 public:
  PerWorkerIterator() = default;
  // {"psflow_per_worker_iterator": id, "dataset_fn": name, "args": args}.
  [[nodiscard]] const Structure& handle() const { return handle_; }
  operator Structure() const { return handle_; }  // NOLINT: for schedule() args
  // Whether `s` is such a handle (whether or not well formed).
  [[nodiscard]] static bool is_handle(const Structure& s);

 private:
  friend class PerWorkerDataset;
  PerWorkerIterator(Structure handle, std::shared_ptr<const internal::PerWorkerLease> lease)
      : handle_(std::move(handle)), lease_(std::move(lease)) {}
  Structure handle_;
  // Null for an iterator of an unbound dataset (PerWorkerDataset::create).
  std::shared_ptr<const internal::PerWorkerLease> lease_;
};

// TF's PerWorkerDataset. Thread-safety: a value type.
class PerWorkerDataset {
 public:
  // Checks that `dataset_fn` is registered in this binary (NOT_FOUND with
  // close names otherwise). A dataset made here is bound to no coordinator:
  // its iterators are never released on the workers; make datasets with
  // ClusterCoordinator::create_per_worker_dataset.
  [[nodiscard]] static absl::StatusOr<PerWorkerDataset> create(std::string dataset_fn,
                                                               Structure args = {});
  // A fresh iterator on every worker (TF's iter(per_worker_dataset)).
  [[nodiscard]] PerWorkerIterator iter() const;
  [[nodiscard]] const std::string& dataset_fn() const { return dataset_fn_; }

 private:
  friend struct internal::PerWorkerAccess;
  PerWorkerDataset(std::string dataset_fn, Structure args)
      : dataset_fn_(std::move(dataset_fn)), args_(std::move(args)) {}
  std::string dataset_fn_;
  Structure args_;
  // Issues the iterators' ids and leases; expired or null when unbound.
  std::weak_ptr<internal::PerWorkerIssuer> issuer_;
};

}  // namespace psflow

// Registers any callable under a string name.
#define PSFLOW_REGISTER_DATASET(name, fn) PSFLOW_NAMED_REGISTER_(Dataset, name, fn)

// Defines and registers a dataset function named after the identifier.
#define PSFLOW_DATASET_FUNCTION(name, ctx, args) PSFLOW_NAMED_FUNCTION_(Dataset, name, ctx, args)

#endif  // PSFLOW_PER_WORKER_H_

// What a registered function sees of the worker that runs it.
#ifndef PSFLOW_WORKER_CONTEXT_H_
#define PSFLOW_WORKER_CONTEXT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <typeinfo>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "psflow/dynamic_embedding.h"
#include "psflow/optimizer.h"
#include "psflow/per_worker_resource.h"
#include "psflow/structure.h"
#include "psflow/variable.h"
#include "psflow/variable_handle.h"

namespace psflow {

namespace internal {
class UpdateKeys;  // The keys of this call's variable updates (runtime).
}  // namespace internal

// Objects that live as long as one worker and are shared by every function
// it runs, found by name: per-worker state (the seed example's counters
// today; per-worker iterators and caches later). A worker restart loses
// them, as TF loses per-worker resources, so anything that must survive
// belongs in variables on the parameter servers.
//
// Thread-safety: thread-safe; the stored objects are not synchronised by it
// (a worker runs one closure at a time, so its functions do not race on
// them unless they start threads of their own).
class WorkerResources {
 public:
  WorkerResources();
  ~WorkerResources();
  WorkerResources(const WorkerResources&) = delete;
  WorkerResources& operator=(const WorkerResources&) = delete;

  // The object stored under `key`, created as T() on first use. The
  // reference stays valid until erase(key), clear() or destruction. Asking for an
  // existing key with another type is a programming error and aborts,
  // naming the key and both types.
  template <typename T>
  [[nodiscard]] T& get_or_create(std::string_view key) {
    return *get_or_create_shared<T>(key);
  }
  // As get_or_create, sharing ownership: the object stays valid for the
  // caller after erase() or clear() (the runtime's per-worker iterators and
  // resources, which the coordinator may release while a call uses them).
  template <typename T>
  [[nodiscard]] std::shared_ptr<T> get_or_create_shared(std::string_view key) {
    return std::static_pointer_cast<T>(find_or_insert(
        key, typeid(T), [] { return std::shared_ptr<void>(std::make_shared<T>()); }));
  }

  // Drops the object stored under `key`; whether there was one.
  bool erase(std::string_view key);
  // Drops every object (what a worker restart does).
  void clear();
  [[nodiscard]] size_t size() const;
  // How many keys start with `prefix`.
  [[nodiscard]] size_t count_with_prefix(std::string_view prefix) const;

 private:
  std::shared_ptr<void> find_or_insert(std::string_view key, const std::type_info& type,
                                       absl::FunctionRef<std::shared_ptr<void>()> make);

  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Passed to every registered function for the duration of one call.
//
// The worker runtime (in-process worker, gRPC ExecutorService) is the only
// constructor caller, so what it passes can grow without changing any
// function.
//
// Thread-safety: is_cancelled() may be called from any thread; the context
// itself must not outlive the call it was made for.
class WorkerContext {
 public:
  // `resources` and `cancelled` (and `variables`, when given) must outlive
  // the context. `variables` reaches the ps tasks of the worker's cluster;
  // null where the worker has none (variable() is then FAILED_PRECONDITION).
  WorkerContext(int worker_index, uint64_t closure_id, WorkerResources& resources,
                const std::atomic<bool>& cancelled, int num_workers = 1,
                const VariableClientLookup* variables = nullptr)
      : worker_index_(worker_index),
        num_workers_(num_workers),
        closure_id_(closure_id),
        resources_(&resources),
        cancelled_(&cancelled),
        variables_(variables) {}

  // Index of the worker task running the call, 0..num_workers-1: TF's
  // coordinator.experimental_get_current_worker_index(), e.g. for sharding
  // input by worker.
  [[nodiscard]] int worker_index() const { return worker_index_; }
  // How many worker tasks the cluster has.
  [[nodiscard]] int num_workers() const { return num_workers_; }
  // How often the coordinator has seen this worker come back after losing
  // it (0 in a fault-free run; in-process workers: always 0). A restarted
  // worker rebuilds its per-worker datasets, which see it too
  // (DatasetContext::worker_recoveries).
  [[nodiscard]] int64_t worker_recoveries() const { return worker_recoveries_; }
  void set_worker_recoveries(int64_t n) { worker_recoveries_ = n; }
  // 0 while this worker process is the first the coordinator talked to at
  // this worker index; once it is known to have replaced an earlier one
  // (a restart), a value unique to this process. Per-worker datasets see it
  // as DatasetContext::restart_salt.
  [[nodiscard]] uint64_t restart_salt() const { return restart_salt_; }
  void set_restart_salt(uint64_t salt) { restart_salt_ = salt; }
  // The coordinator session this call runs for (0: none, as in a worker
  // driven without a coordinator). With one, updates made through the
  // variables and optimizers of variable() and bind() carry this call's
  // update keys: each ps applies them once however often the closure is
  // retried. Set by the worker runtime before the call.
  void set_update_session(uint64_t session);
  // Identifies the scheduled closure within its coordinator's lifetime; the
  // same across retries of that closure on other workers, so that updates
  // it sends can be deduplicated.
  [[nodiscard]] uint64_t closure_id() const { return closure_id_; }
  // True once the coordinator gave up on this call (another closure failed,
  // or the coordinator is shutting down). Long functions should poll it and
  // return absl::CancelledError early; the result is then discarded.
  [[nodiscard]] bool is_cancelled() const { return cancelled_->load(std::memory_order_relaxed); }
  [[nodiscard]] WorkerResources& resources() const { return *resources_; }

  // The variable that `handle` (VariableHandle::to_structure(), as the
  // coordinator passes it in the arguments) describes, reached from this
  // worker. INVALID_ARGUMENT for a malformed handle, FAILED_PRECONDITION
  // when this worker has no parameter servers, NOT_FOUND for a variable
  // made outside strategy.scope() (it lives on the coordinator).
  // The variable's updates carry this call's update keys (see bind).
  [[nodiscard]] absl::StatusOr<ShardedVariable> variable(const Structure& handle) const;
  // Variables and optimizers a function keeps between calls (in
  // resources()) are bound to no call: bind() gives a copy whose updates
  // carry this call's update keys, so that a retried closure's updates
  // apply once. Use the copy for this call only. Updates made through an
  // unbound handle apply each time they are sent (TF's at-least-once).
  [[nodiscard]] ShardedVariable bind(const ShardedVariable& variable) const;
  [[nodiscard]] Optimizer bind(const Optimizer& optimizer) const;
  // A dynamic table's lookups and updates (docs/embeddings.md) likewise.
  [[nodiscard]] DynamicEmbedding bind(const DynamicEmbedding& table) const;
  // The next element of this worker's copy of a per-worker dataset
  // (`iterator` is PerWorkerIterator::handle(), as the coordinator passed
  // it); nullopt at the end of the data. The copy is built from the
  // registered dataset function the first time this worker reads from it.
  [[nodiscard]] absl::StatusOr<std::optional<Structure>> get_next(const Structure& iterator) const;
  // As get_next, but the end of the data is OUT_OF_RANGE (TF's
  // StopIteration inside a scheduled function).
  [[nodiscard]] absl::StatusOr<Structure> next(const Structure& iterator) const;

  // This worker's copy of a per-worker resource (`handle` is
  // PerWorkerResource::handle(), as the coordinator passed it), built by its
  // registered resource function the first time a closure on this worker
  // asks for it; concurrent first uses build it once. Errors:
  // INVALID_ARGUMENT for a malformed handle; NOT_FOUND when the resource
  // function is not registered in this binary; the resource function's own
  // error, naming it and this worker (not remembered: the next use tries
  // again).
  [[nodiscard]] absl::StatusOr<WorkerResource> resource(const Structure& handle) const;
  // The same, typed: FAILED_PRECONDITION naming both types when the
  // resource holds another type than T.
  template <typename T>
  [[nodiscard]] absl::StatusOr<std::shared_ptr<T>> resource(const Structure& handle) const {
    absl::StatusOr<WorkerResource> r = resource(handle);
    if (!r.ok()) return r.status();
    std::shared_ptr<T> typed = r->template get<T>();
    if (typed == nullptr) return resource_type_error(handle, r->type(), typeid(T));
    return typed;
  }

  // The lookup itself, for code that rebuilds many handles; null when the
  // worker has no parameter servers.
  [[nodiscard]] const VariableClientLookup* variable_clients() const { return variables_; }

  // For the worker runtime: the first error of this call in building a
  // per-worker dataset or resource it asked for (or in finding one
  // released); OK when none. A failed call with such an error is reported
  // as a closure input error (TF's ClosureInputError), not as the step's.
  [[nodiscard]] const absl::Status& per_worker_input_error() const { return input_error_; }

 private:
  // Remembers `error` as the call's input error (the first one) and
  // returns it.
  absl::Status record_input_error(absl::Status error) const;
  // The object under `key` for the handle `id`, shared with the worker's
  // registry; FAILED_PRECONDITION (an input error) when the coordinator
  // released the handle.
  template <typename T>
  absl::StatusOr<std::shared_ptr<T>> per_worker_object(const std::string& key, std::string_view id,
                                                       std::string_view what,
                                                       std::string_view fn) const;

  [[nodiscard]] absl::Status resource_type_error(const Structure& handle,
                                                 const std::type_info& held,
                                                 const std::type_info& wanted) const;

  int worker_index_;
  int num_workers_;
  int64_t worker_recoveries_ = 0;
  uint64_t restart_salt_ = 0;
  uint64_t closure_id_;
  WorkerResources* resources_;
  const std::atomic<bool>* cancelled_;
  const VariableClientLookup* variables_;
  std::shared_ptr<internal::UpdateKeys> update_keys_;
  // Set by the const accessors that build per-worker objects.
  mutable absl::Status input_error_;
};

}  // namespace psflow

#endif  // PSFLOW_WORKER_CONTEXT_H_

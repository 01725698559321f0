// RemoteExecutor: a local proxy for the values a worker task holds, as
// TFF's tff.framework.RemoteExecutor. It speaks the executor protocol of the
// worker's ExecutorService (proto/psflow/v1/task.proto):
//
//   auto ex = RemoteExecutor::create("127.0.0.1:4567").value();
//   RemoteExecutorValue fn = ex->create_function("testing/add").value();
//   RemoteExecutorValue args = ex->create_value(Structure::tuple({1, 2})).value();
//   RemoteExecutorValue sum = ex->create_call(fn, args).value();   // returns at once
//   Structure three = sum.compute().value();                       // waits for the call
//
// Every create_* returns as soon as the worker has the value's id: a call
// runs later on the worker's function thread (one at a time, in arrival
// order), and its error, if any, surfaces at compute() with the function's
// own status code (as TFF: errors are deferred to the first compute).
// Functions are named: the worker runs what its binary registered
// (psflow/function_registry.h).
//
// call_function() fuses create_function + create_value + create_call +
// compute into one round trip, for a call whose result is all one wants:
//
//   Structure three = ex->call_function("testing/add", Structure::tuple({1, 2})).value();
//
// The ClusterCoordinator is built on it: each worker's transport
// (src/coordinator/grpc_worker_connection.h) is a RemoteExecutor, and each
// closure it runs is one such call, sent asynchronously with the
// coordinator's exactly-once and same-worker-chaining fields.
#ifndef PSFLOW_REMOTE_EXECUTOR_H_
#define PSFLOW_REMOTE_EXECUTOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "psflow/structure.h"

namespace psflow {

namespace internal {
class ExecutorConnection;  // One worker's executor channel (runtime).
}  // namespace internal

struct RemoteExecutorOptions {
  // Ids of destroyed handles are sent to the worker in Dispose requests of
  // this many (TFF's default, 20): smaller means more requests but memory
  // released sooner on the worker. close() sends the rest. At least 1.
  int dispose_batch_size = 20;
  // Send tuples, lists and dicts element by element (each element its own
  // value, then one struct of them) and receive them likewise (one
  // selection and compute per element), so that no single message holds a
  // whole struct: for structs larger than max_message_bytes, as TFF's
  // stream_structs. A leaf (tensor, scalar) still travels in one message.
  bool stream_structs = false;
  // Deadline of each create_*, dispose and stats request, from its start.
  absl::Duration rpc_timeout = absl::Seconds(30);
  // How long compute() waits for a value (a call may run long).
  absl::Duration compute_timeout = absl::Minutes(30);
  // Largest message sent or received, in bytes. A value whose encoding is
  // larger is refused before sending (INVALID_ARGUMENT); a larger result is
  // RESOURCE_EXHAUSTED. With stream_structs, the bound is per element.
  int max_message_bytes = 1 << 30;
};

// What the worker holds (GetExecutorStats), over all of its clients.
struct RemoteExecutorStats {
  int64_t live_values = 0;     // Ids created and not disposed.
  int64_t pending_values = 0;  // Values not known yet (calls queued or running, ...).
  int64_t max_live_values = 0;
  int64_t values_created = 0;
  int64_t values_disposed = 0;
  int64_t waiting_computes = 0;  // compute() calls waiting for their value.
  // The worker's per-worker objects held now (a coordinator's per-worker
  // dataset iterators and per-worker resources).
  int64_t per_worker_iterators = 0;
  int64_t per_worker_resources = 0;
};

// Owns one value on the worker: move-only, and destroying (or assigning
// over) it queues the id for disposal (RemoteExecutorOptions::
// dispose_batch_size); the destruction that fills a batch sends it, one
// Dispose request of at most rpc_timeout whose failure is logged (as TFF,
// whose finalizer sends it). Exactly one handle owns an id. A handle keeps
// its executor's connection alive; after close() it is dead.
// Thread-safety: compute() and the const accessors may run concurrently;
// moving, assigning, release() and destruction must not race with any
// other use of the same handle.
class RemoteExecutorValue {
 public:
  // An empty handle (valid() is false), as a moved-from one.
  RemoteExecutorValue() = default;
  RemoteExecutorValue(RemoteExecutorValue&& other) noexcept;
  RemoteExecutorValue& operator=(RemoteExecutorValue&& other) noexcept;
  RemoteExecutorValue(const RemoteExecutorValue&) = delete;
  RemoteExecutorValue& operator=(const RemoteExecutorValue&) = delete;
  ~RemoteExecutorValue();

  // Whether the handle owns an id (false once moved from or released).
  [[nodiscard]] bool valid() const { return connection_ != nullptr; }
  // The worker's id of the value; empty when !valid().
  [[nodiscard]] const std::string& id() const { return id_; }

  // Waits (at most RemoteExecutorOptions::compute_timeout) until the value
  // is known on the worker and returns it: TFF's compute(). A failed call
  // returns its error, with the function's code. NOT_FOUND when the worker
  // no longer has the id (e.g. it restarted); FAILED_PRECONDITION for an
  // empty handle or once the executor is closed; INVALID_ARGUMENT for a
  // function reference, which has no value.
  [[nodiscard]] absl::StatusOr<Structure> compute() const;

  // Gives up ownership without disposing (TFF's OwnedValueId::forget()):
  // the worker keeps the value until someone disposes of the returned id.
  [[nodiscard]] std::string release();

 private:
  friend class internal::ExecutorConnection;
  RemoteExecutorValue(std::shared_ptr<internal::ExecutorConnection> connection, std::string id);
  void reset();

  std::shared_ptr<internal::ExecutorConnection> connection_;
  std::string id_;
};

// One element of create_struct: a value, optionally named. Implicit, so
// that `create_struct({a, b})` and `create_struct({{"x", a}, {"y", b}})`
// read naturally. It refers to `value`, which must outlive the call.
// Thread-safety: a value type; const methods may run concurrently.
class RemoteExecutorElement {
 public:
  RemoteExecutorElement(const RemoteExecutorValue& value)  // NOLINT: implicit on purpose
      : value_(&value) {}
  RemoteExecutorElement(std::string name, const RemoteExecutorValue& value)
      : name_(std::move(name)), value_(&value) {}

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const RemoteExecutorValue& value() const { return *value_; }

 private:
  std::string name_;
  const RemoteExecutorValue* value_;
};

// A proxy for the values of one worker task (`target`, "host:port").
//
// Errors name the worker ("/job:worker/replica:0/task:0 (host:port): ...")
// and keep the worker's codes: NOT_FOUND for an unknown function or id,
// INVALID_ARGUMENT for bad input (selection out of range, a value of
// another executor, ...), RESOURCE_EXHAUSTED when the worker holds too many
// values, UNAVAILABLE when it cannot be reached (fail fast; no retries).
//
// Thread-safety: thread-safe; every method may be called concurrently.
class RemoteExecutor {
 public:
  // Connects to the worker and checks that it answers (GetStatus), so that
  // a wrong address fails here. INVALID_ARGUMENT for bad options.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<RemoteExecutor>> create(
      std::string_view target, RemoteExecutorOptions options = {});
  // close(), ignoring its status.
  ~RemoteExecutor();
  RemoteExecutor(const RemoteExecutor&) = delete;
  RemoteExecutor& operator=(const RemoteExecutor&) = delete;

  // Embeds a concrete value (streamed element by element with
  // stream_structs).
  [[nodiscard]] absl::StatusOr<RemoteExecutorValue> create_value(const Structure& value);
  // A reference to the function registered under `name` in the worker's
  // binary (NOT_FOUND naming close names when there is none): TFF's
  // create_value of a computation.
  [[nodiscard]] absl::StatusOr<RemoteExecutorValue> create_function(std::string_view name);
  // A call of `function` (a create_function value) without an argument
  // (the function gets None), or with `argument`.
  [[nodiscard]] absl::StatusOr<RemoteExecutorValue> create_call(
      const RemoteExecutorValue& function);
  [[nodiscard]] absl::StatusOr<RemoteExecutorValue> create_call(
      const RemoteExecutorValue& function, const RemoteExecutorValue& argument);
  // Runs the function registered under `function_name` on `argument` and
  // returns its result: create_function + create_value + create_call +
  // compute in one round trip (one RunFunction request, which leaves no
  // value on the worker to dispose of); the form the ClusterCoordinator
  // sends for each closure. Waits at most compute_timeout. The argument
  // and the result each travel whole in one message (stream_structs does
  // not apply): INVALID_ARGUMENT before sending when the argument's
  // encoding exceeds max_message_bytes. The function's own error keeps its
  // code (NOT_FOUND naming close names for an unknown function); errors
  // name the worker and the function; FAILED_PRECONDITION once closed.
  [[nodiscard]] absl::StatusOr<Structure> call_function(std::string_view function_name,
                                                        const Structure& argument = {});
  // A struct of `elements`: unnamed ones make a tuple (a list with
  // `as_list`), named ones a dict (ordered by key, as every psflow dict);
  // mixing them is INVALID_ARGUMENT. The worker keeps the elements' values
  // alive as long as the struct needs them, so their handles may go.
  [[nodiscard]] absl::StatusOr<RemoteExecutorValue> create_struct(
      const std::vector<RemoteExecutorElement>& elements, bool as_list = false);
  // Element `index` of a tuple or list value; of a dict, the entry at that
  // position in key order. Out of range, or a source that is no struct, is
  // INVALID_ARGUMENT at once when the source is known, else at compute().
  [[nodiscard]] absl::StatusOr<RemoteExecutorValue> create_selection(
      const RemoteExecutorValue& source, int index);

  // Disposes of every id queued for disposal and of the values of handles
  // still alive (they turn dead: compute() is FAILED_PRECONDITION, and
  // destroying them sends nothing), in batches of dispose_batch_size; then
  // every create_* is FAILED_PRECONDITION. Returns the first error of those
  // requests. Idempotent: later calls return OK and send nothing.
  [[nodiscard]] absl::Status close();

  // The worker's value counts.
  [[nodiscard]] absl::StatusOr<RemoteExecutorStats> stats() const;
  [[nodiscard]] const std::string& target() const;
  [[nodiscard]] const RemoteExecutorOptions& options() const;

 private:
  explicit RemoteExecutor(std::shared_ptr<internal::ExecutorConnection> connection);

  std::shared_ptr<internal::ExecutorConnection> connection_;
};

}  // namespace psflow

#endif  // PSFLOW_REMOTE_EXECUTOR_H_

// The values a worker holds for the executor protocol (TFF's executor
// service): a table of ids naming concrete structures, function references,
// calls, structs and selections, resolved as a dataflow graph.
#ifndef PSFLOW_WORKER_VALUE_GRAPH_H_
#define PSFLOW_WORKER_VALUE_GRAPH_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "psflow/structure.h"

namespace psflow::internal {

struct ValueGraphOptions {
  // The most ids alive at once, and separately the most values not yet
  // known (pending calls, and structs / selections waiting for them, also
  // once disposed): creating more is RESOURCE_EXHAUSTED naming the bound.
  size_t max_live_values = 100000;
  // The most bytes (encoded) of the concrete values clients sent
  // (create_value) and have not disposed: beyond it create_value is
  // RESOURCE_EXHAUSTED naming the bound (ServerOptions::max_value_bytes).
  size_t max_value_bytes = size_t{16} << 30;
  // Largest encoding create_struct builds, its elements counted each time
  // they appear (sharing lets a few requests describe exabytes). Not a
  // memory bound (the elements are held already): above 2 GiB a struct
  // can only be computed element by element (stream_structs).
  size_t max_struct_bytes = size_t{1} << 40;
  // Starts every id ("<incarnation>-"), so that ids of an earlier process
  // are recognised in error messages.
  std::string id_prefix;
  // Draws the random part of new ids (kIdRandomBytes bytes into `out`).
  // Null: the kernel's CSPRNG (getrandom). Tests may make ids collide.
  // Called with the graph's lock held.
  std::function<void(unsigned char* out, size_t size)> random_bytes;
};

struct ValueGraphStats {
  int64_t live_values = 0;
  int64_t pending_values = 0;
  int64_t max_live_values = 0;
  int64_t values_created = 0;
  int64_t values_disposed = 0;
  int64_t waiting_computes = 0;  // Waiters not called yet.
  int64_t value_bytes = 0;       // Of the concrete values live (max_value_bytes).
};

// Values by id. An id is the prefix and 128 random bits from the kernel's
// CSPRNG, so that nobody can guess another client's ids; and every value
// belongs to the client (`owner`, rpc/peer_identity.h PeerIdentity::owner)
// that created it: to any other owner its id is NOT_FOUND with the very
// message of an id never created (no oracle), whether it computes,
// disposes, or builds calls, structs or selections on it.
//
// Every create_* validates its inputs before it changes
// anything, and returns the new id at once: a call is run later by whoever
// holds the PendingCall (run_call); a struct or selection over values not
// known yet becomes known when they do. Errors of calls flow into the
// values built from them and surface at compute(), as in TFF.
//
// Semantics, where psflow's Structure differs from TFF's Struct:
//   * a struct of unnamed elements is a tuple (or a list); of named
//     elements, a dict, whose elements are ordered by key (as TF's nest
//     orders dicts), so selection index i of it is the i-th key in sorted
//     order, as compute()'s result shows it;
//   * selection is by index only (as TFF since 2021), of a tuple, list or
//     dict;
//   * a function reference can be called, nothing else: computing it, or
//     using it as an argument, struct element or selection source, is
//     INVALID_ARGUMENT.
// A value keeps the values it was built from alive as long as it needs
// them, so disposing an input early never breaks what was built from it.
//
// Thread-safety: thread-safe; waiters run without the graph's lock held.
class ValueGraph {
 public:
  using Result = absl::StatusOr<Structure>;
  // Receives a value (or its error) once it is known.
  using Waiter = absl::AnyInvocable<void(const Result& result)>;
  // Runs one call: the registered function `function_name` with
  // `argument` (None when the call has none). `call_number` is unique per
  // graph; `cancelled` turns true when cancel_calls() is called.
  using CallRunner =
      absl::FunctionRef<Result(const std::string& function_name, const Structure& argument,
                               uint64_t call_number, const std::atomic<bool>& cancelled)>;
  struct Element {
    std::string name;  // Empty for an unnamed element.
    std::string id;
  };

  struct Node;
  // Deepest nesting create_struct builds (the codec's default max_depth):
  // deeper structs are refused.
  static constexpr int kMaxStructDepth = 64;
  // A call created by create_call and not yet run.
  struct PendingCall {
    std::string id;
    std::shared_ptr<Node> node;
  };

  explicit ValueGraph(ValueGraphOptions options = {});
  ~ValueGraph();
  ValueGraph(const ValueGraph&) = delete;
  ValueGraph& operator=(const ValueGraph&) = delete;

  // The id of a new concrete value.
  // Random bytes in an id (128 bits).
  static constexpr size_t kIdRandomBytes = 16;

  [[nodiscard]] absl::StatusOr<std::string> create_value(std::string_view owner, Structure value)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The id of a reference to a function (the caller checks the name).
  [[nodiscard]] absl::StatusOr<std::string> create_function(std::string_view owner,
                                                            std::string function_name)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A call of the function reference `function_id` with the value
  // `argument_id` (none: None). The caller must pass the result to
  // run_call() exactly once; calls run in the order they are run there.
  [[nodiscard]] absl::StatusOr<PendingCall> create_call(std::string_view owner,
                                                        std::string_view function_id,
                                                        std::optional<std::string_view> argument_id)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until the call's argument is known (at once when calls run one
  // at a time in creation order), runs it with `runner` unless the
  // argument failed, and makes its result known.
  void run_call(const PendingCall& call, CallRunner runner) ABSL_LOCKS_EXCLUDED(mu_);
  // `list` makes unnamed elements a list rather than a tuple.
  [[nodiscard]] absl::StatusOr<std::string> create_struct(std::string_view owner,
                                                          const std::vector<Element>& elements,
                                                          bool list) ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] absl::StatusOr<std::string> create_selection(std::string_view owner,
                                                             std::string_view source_id,
                                                             int64_t index)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Calls `waiter` once with the value or its error: before returning when
  // it is known, else from the thread that makes it known. NOT_FOUND for an
  // unknown id, INVALID_ARGUMENT for a function reference (the waiter is
  // then not called).
  [[nodiscard]] absl::Status compute(std::string_view owner, std::string_view id, Waiter waiter)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Releases every id in `ids` that names a value, even when others do not:
  // those (never created, already disposed, or listed twice) make the
  // result NOT_FOUND naming them. Disposing what the caller asked to be
  // disposed never hurts, while keeping a batch alive for one stale id
  // would leak the rest.
  // Ids of another owner count as never created and stay as they are.
  [[nodiscard]] absl::Status dispose(std::string_view owner, const std::vector<std::string>& ids)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Sets the cancellation flag of every call not finished yet.
  void cancel_calls() ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] ValueGraphStats stats() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  using Fired = std::vector<std::pair<Waiter, Result>>;

  absl::Status check_capacity() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The node `owner` knows as `id`; NOT_FOUND alike for an unknown id and
  // for another owner's.
  absl::StatusOr<std::shared_ptr<Node>> find(std::string_view owner, std::string_view id,
                                             std::string_view role) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status not_found(std::string_view id, std::string_view role) const;
  // Gives `node` its number and a fresh random id, owned by `owner`.
  std::string add(std::string_view owner, std::shared_ptr<Node> node)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string new_id() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Registers `node` (pending, with `inputs` set) as waiting for its
  // unresolved inputs, or resolves it at once when there are none.
  void link(const std::shared_ptr<Node>& node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void resolve(const std::shared_ptr<Node>& node, Result result, Fired* fired)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  static void fire(Fired fired);

  const ValueGraphOptions options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Node>> values_ ABSL_GUARDED_BY(mu_);
  // Calls created and not finished, by call number.
  absl::flat_hash_map<uint64_t, std::weak_ptr<Node>> running_calls_ ABSL_GUARDED_BY(mu_);
  uint64_t next_number_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t pending_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t created_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t disposed_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t waiting_ ABSL_GUARDED_BY(mu_) = 0;
  // Bytes of the kValue nodes in values_ (max_value_bytes).
  size_t value_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace psflow::internal

#endif  // PSFLOW_WORKER_VALUE_GRAPH_H_

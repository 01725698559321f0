// RemoteValue: the eventual result of a scheduled function; RemoteStructure:
// a nest whose leaves may be RemoteValues.
#ifndef PSFLOW_REMOTE_VALUE_H_
#define PSFLOW_REMOTE_VALUE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "psflow/structure.h"

namespace psflow {

namespace internal {
class RemoteValueState;
struct RemoteValueAccess;
}  // namespace internal

// TF's RemoteValueStatus. Transitions: NOT_READY -> READY; NOT_READY ->
// ABORTED -> READY and READY -> ABORTED for per-worker resources whose
// worker was lost (rebuilt later).
enum class RemoteValueStatus { kNotReady, kAborted, kReady };

[[nodiscard]] std::string_view remote_value_status_name(RemoteValueStatus status);
std::ostream& operator<<(std::ostream& os, RemoteValueStatus status);

// The value of a scheduled function, available once it has run. The value
// (or error) is held on the coordinator as soon as the closure counts as
// finished, so it survives the worker that computed it.
//
// A handle: copies share one value, and a default-constructed RemoteValue is
// empty (fetch gives FAILED_PRECONDITION). Beyond TF, a RemoteValue may be
// an argument of a later schedule(): that closure waits (without holding a
// worker) until this one has finished, and receives its value; when both
// run on the same worker process, the value does not travel again: the
// worker keeps recent results and the coordinator sends a reference
// (ClusterCoordinatorOptions::same_worker_chaining).
//
// Thread-safety: thread-safe; copies may be used from any threads.
class RemoteValue {
 public:
  RemoteValue() = default;
  // For the runtime: wraps the state a closure fills.
  explicit RemoteValue(std::shared_ptr<internal::RemoteValueState> state)
      : state_(std::move(state)) {}

  [[nodiscard]] bool valid() const { return state_ != nullptr; }

  // Waits until the function has finished, then returns its value or error.
  // The error is the function's own (e.g. INVALID_ARGUMENT), CANCELLED "The
  // corresponding function is cancelled. Please reschedule the function."
  // when it never ran because an earlier closure failed, CANCELLED "...is
  // aborted..." when ABORTED, or an input error (is_closure_input_error)
  // when a RemoteValue argument failed. Waits forever, as TF's fetch.
  [[nodiscard]] absl::StatusOr<Structure> fetch() const;
  // Same as fetch(): TF's get() returns tensors on the coordinator rather
  // than numpy arrays, a distinction C++ does not have.
  [[nodiscard]] absl::StatusOr<Structure> get() const { return fetch(); }

  // Whether fetch() would return without waiting (READY or ABORTED).
  [[nodiscard]] bool is_ready() const;
  // Waits until is_ready(). Beyond TF: wait(timeout) gives up after
  // `timeout` and returns whether the value became ready.
  void wait() const;
  [[nodiscard]] bool wait(absl::Duration timeout) const;
  // An empty RemoteValue counts as READY: fetch() returns (its error) at once.
  [[nodiscard]] RemoteValueStatus status() const;

  // The closure that produces this value (0 when empty) and its function.
  [[nodiscard]] uint64_t closure_id() const;
  [[nodiscard]] std::string function_name() const;

  // "<RemoteValue of closure 3 'worker_fn': READY>"
  [[nodiscard]] std::string debug_string() const;

 private:
  friend struct internal::RemoteValueAccess;
  std::shared_ptr<internal::RemoteValueState> state_;
};

// A Structure whose leaves may also be RemoteValues: the arguments of
// schedule() and the input of ClusterCoordinator::fetch(). Any Structure (or
// what converts to one: 3, 0.5, "s", a Tensor) and any RemoteValue converts
// implicitly:
//   coordinator->schedule("train_step",
//       RemoteStructure::tuple({batch_rv, 0.01, Structure::list({1, 2})}));
//
// Why a separate type rather than a RemoteValue leaf kind of Structure: a
// Structure is a value that travels (codec, workers, checkpoints) and must
// stay free of coordinator-local handles; a RemoteStructure never leaves
// the coordinator, and is resolved into a Structure (each RemoteValue
// replaced by its value) before anything is sent.
//
// Thread-safety: a value type; const methods may run concurrently.
class RemoteStructure {
 public:
  enum class Kind { kValue, kRemoteValue, kTuple, kList, kDict };
  using Items = std::vector<RemoteStructure>;
  using Fields = std::map<std::string, RemoteStructure, std::less<>>;

  RemoteStructure() = default;                                      // None
  RemoteStructure(Structure value) : value_(std::move(value)) {}    // NOLINT
  RemoteStructure(RemoteValue value) : value_(std::move(value)) {}  // NOLINT
  template <typename T,
            typename = std::enable_if_t<std::is_constructible_v<Structure, T&&> &&
                                        !std::is_same_v<std::decay_t<T>, Structure> &&
                                        !std::is_same_v<std::decay_t<T>, RemoteValue> &&
                                        !std::is_same_v<std::decay_t<T>, RemoteStructure>>>
  RemoteStructure(T&& value) : value_(Structure(std::forward<T>(value))) {}  // NOLINT

  [[nodiscard]] static RemoteStructure tuple(Items items);
  [[nodiscard]] static RemoteStructure list(Items items);
  [[nodiscard]] static RemoteStructure dict(Fields fields);

  [[nodiscard]] Kind kind() const;
  // Accessors abort when the kind does not match (a programming error).
  [[nodiscard]] const Structure& value() const;           // kValue
  [[nodiscard]] const RemoteValue& remote_value() const;  // kRemoteValue
  [[nodiscard]] const Items& items() const;               // kTuple, kList
  [[nodiscard]] const Fields& fields() const;             // kDict

  // Every RemoteValue leaf, in nest order (depth first, dict entries by
  // key); empty for a plain Structure.
  [[nodiscard]] std::vector<RemoteValue> remote_values() const;

  // As Structure::debug_string, RemoteValues as RemoteValue::debug_string.
  [[nodiscard]] std::string debug_string() const;

 private:
  struct Tuple {
    Items items;
  };
  struct List {
    Items items;
  };
  struct Dict {
    Fields fields;
  };
  std::variant<Structure, RemoteValue, std::shared_ptr<const Tuple>, std::shared_ptr<const List>,
               std::shared_ptr<const Dict>>
      value_;
};

// Whether `status` is the error of a closure that did not run because one
// of its RemoteValue arguments failed (TF's ClosureInputError). Its code is
// that of the original failure and its message says which input failed and
// why, flattened to the original error when inputs were chained.
[[nodiscard]] bool is_closure_input_error(const absl::Status& status);

}  // namespace psflow

#endif  // PSFLOW_REMOTE_VALUE_H_

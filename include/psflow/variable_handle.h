// VariableHandle: the serialisable description of a (possibly sharded)
// variable, so that another process can rebuild it and reach the same
// stored values.
#ifndef PSFLOW_VARIABLE_HANDLE_H_
#define PSFLOW_VARIABLE_HANDLE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/dtype.h"
#include "psflow/structure.h"
#include "psflow/tensor.h"
#include "psflow/variable_policy.h"
#include "psflow/wire_dtype.h"

namespace psflow {

namespace internal {
struct ClientFinder;                // finds one task's VariableService client (runtime)
struct VariableClientLookupAccess;  // the runtime's constructor and call
}  // namespace internal

// Where one part of a variable is stored.
// Thread-safety: a value type.
struct VariablePartHandle {
  // "ps" for variables made through a strategy, "chief" for variables made
  // outside any strategy scope (they live in the coordinator process).
  std::string job;
  int task = 0;
  // The name the task stores it under: "w", or "w/part_1" for a shard.
  std::string name;
  Shape shape;
  // First row of this part in the full variable (0 when not sharded).
  int64_t offset = 0;

  friend bool operator==(const VariablePartHandle&, const VariablePartHandle&) = default;
};

// A whole variable: its parts in row order. An unsharded variable has one
// part with the variable's own name and shape at offset 0.
// Thread-safety: a value type.
struct VariableHandle {
  std::string name;
  DType dtype = DType::kInvalid;
  Shape shape;
  std::vector<VariablePartHandle> parts;
  // VariableOptions' aggregation, synchronization and trainable, so that a
  // variable rebuilt from the handle updates from replicas as its original.
  VariableAggregation aggregation = VariableAggregation::kNone;
  VariableSynchronization synchronization = VariableSynchronization::kAuto;
  bool trainable = true;
  // VariableOptions' wire_dtype as resolved at creation.
  WireDType wire_dtype = WireDType::kFloat32;

  // INVALID_ARGUMENT naming the first problem: no parts, a bad dtype or
  // shape, parts that differ from the full shape beyond axis 0, or offsets
  // that do not tile axis 0 exactly in order.
  [[nodiscard]] absl::Status validate() const;

  // The handle as a Structure (a dict of strings, ints and tuples), so that
  // it travels inside function arguments with the structure codec:
  //   {"psflow_variable": 1, "name": "w", "dtype": "float32",
  //    "shape": (10, 4), "parts": [{"job": "ps", "task": 0,
  //    "name": "w/part_0", "shape": (5, 4), "offset": 0}, ...],
  //    "aggregation": "SUM", "synchronization": "AUTO", "trainable": true}
  // (the last three may be absent: NONE, AUTO, true), and "wire_dtype":
  // "bfloat16" when not float32 (absent means float32).
  [[nodiscard]] Structure to_structure() const;
  // Inverse of to_structure. Treats its input as untrusted: every missing or
  // mistyped field is INVALID_ARGUMENT naming it, and the result is
  // validate()d.
  [[nodiscard]] static absl::StatusOr<VariableHandle> from_structure(const Structure& s);
  // True when `s` carries the "psflow_variable" marker of to_structure
  // (whether or not the rest is well formed).
  [[nodiscard]] static bool is_handle(const Structure& s);

  friend bool operator==(const VariableHandle&, const VariableHandle&) = default;
};

// How this process reaches the tasks that store variables, to rebuild a
// variable from its handle (ShardedVariable::from_handle): on the
// coordinator ParameterServerStrategy::client_lookup(), inside a scheduled
// function WorkerContext::variable_clients(). Opaque: only the runtime makes
// non-empty ones. An empty lookup (default, or nullptr) reaches no task, and
// rebuilding through it is INVALID_ARGUMENT. A task this process cannot
// reach is NOT_FOUND, naming the task and what to do.
// Thread-safety: immutable; copies share one lookup, usable from any thread.
class VariableClientLookup {
 public:
  VariableClientLookup() = default;
  VariableClientLookup(std::nullptr_t) {}  // NOLINT(google-explicit-constructor): "no lookup"

  [[nodiscard]] explicit operator bool() const { return finder_ != nullptr; }
  // Whether both reach tasks through the same lookup (copies of one).
  friend bool operator==(const VariableClientLookup&, const VariableClientLookup&) = default;

 private:
  friend struct internal::VariableClientLookupAccess;
  explicit VariableClientLookup(std::shared_ptr<const internal::ClientFinder> finder)
      : finder_(std::move(finder)) {}

  std::shared_ptr<const internal::ClientFinder> finder_;
};

}  // namespace psflow

#endif  // PSFLOW_VARIABLE_HANDLE_H_

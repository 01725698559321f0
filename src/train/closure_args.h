// Reading the fields of a training closure's arguments, which crossed the
// network and are validated as untrusted input (internal).
#ifndef PSFLOW_TRAIN_CLOSURE_ARGS_H_
#define PSFLOW_TRAIN_CLOSURE_ARGS_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/structure.h"

namespace psflow::internal {

// Errors are INVALID_ARGUMENT "malformed <context>: <problem>".
// Thread-safety: a value type.
struct ClosureArgs {
  std::string_view context;  // e.g. "training closure arguments"

  [[nodiscard]] absl::Status malformed(std::string_view problem) const;
  // The field `key` of the dict `s`, of kind `kind` (kNone: any kind).
  [[nodiscard]] absl::StatusOr<const Structure*> field(const Structure& s, std::string_view key,
                                                       Structure::Kind kind) const;
  [[nodiscard]] absl::StatusOr<double> float_field(const Structure& s, std::string_view key) const;
  [[nodiscard]] absl::StatusOr<int64_t> int_field(const Structure& s, std::string_view key) const;
  // The integer `key`, in [lo, hi].
  [[nodiscard]] absl::StatusOr<int64_t> int_in_range(const Structure& s, std::string_view key,
                                                     int64_t lo, int64_t hi) const;
  // The list `key` of at most `max_size` integers, each in [lo, hi] (a
  // model's layer sizes).
  [[nodiscard]] absl::StatusOr<std::vector<int64_t>> int_list(const Structure& s,
                                                              std::string_view key, size_t max_size,
                                                              int64_t lo, int64_t hi) const;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_CLOSURE_ARGS_H_

// A hook on variable creation (internal), for TF's restore-on-create
// (psflow::RestoreOnCreate, in the checkpoint layer above this one): every
// variable created on a thread while a hook is installed there is handed
// to it, with the name its creator asked for, before the creator gets it.
#ifndef PSFLOW_STRATEGY_CREATION_HOOK_H_
#define PSFLOW_STRATEGY_CREATION_HOOK_H_

#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/variable.h"

namespace psflow::internal {

// (requested name, the new variable) -> OK, or the error creation fails
// with (the variable then exists with its initial value, unreturned).
using CreationHook =
    std::function<absl::Status(std::string_view requested_name, const ShardedVariable& created)>;

// Installs `hook` on this thread while it lives; the innermost one runs.
// Thread-safety: a thread-local guard; use it on the thread that made it.
class CreationHookScope {
 public:
  explicit CreationHookScope(CreationHook hook);
  ~CreationHookScope();
  CreationHookScope(const CreationHookScope&) = delete;
  CreationHookScope& operator=(const CreationHookScope&) = delete;

 private:
  CreationHook hook_;
  const CreationHook* previous_;
};

// `created`, after this thread's hook (if any) has seen it; the hook's
// error instead when it fails. `requested_name` is VariableOptions::name.
[[nodiscard]] absl::StatusOr<ShardedVariable> after_creation(
    const std::string& requested_name, absl::StatusOr<ShardedVariable> created);

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_CREATION_HOOK_H_

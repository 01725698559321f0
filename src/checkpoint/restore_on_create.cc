// RestoreOnCreate: TF's delayed restore, through the strategy layer's
// creation hook (strategy/creation_hook.h).
#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "checkpoint/checkpoint_io.h"
#include "psflow/checkpoint.h"
#include "psflow/status_macros.h"
#include "strategy/creation_hook.h"

namespace psflow {

// Thread-safety: used only on the guard's thread (the hook runs there).
struct RestoreOnCreate::State {
  std::string path;
  std::set<std::string, std::less<>> pending;
  std::set<std::string, std::less<>> restored;
  // Installed last, removed first (declared last: destroyed first).
  std::optional<internal::CreationHookScope> hook;

  absl::Status on_create(std::string_view name, const ShardedVariable& created) {
    auto it = pending.find(name);
    if (it == pending.end()) return absl::OkStatus();
    absl::StatusOr<Checkpoint> one = Checkpoint::create({{std::string(name), created}});
    absl::Status status = one.ok() ? one->restore(path) : one.status();
    if (!status.ok()) {
      return absl::Status(status.code(), absl::StrCat("variable '", created.name(),
                                                      "' was created, but restoring "
                                                      "its saved value (restore-on-create from ",
                                                      path, ") failed: ", status.message()));
    }
    restored.insert(pending.extract(it));
    return absl::OkStatus();
  }
};

RestoreOnCreate::RestoreOnCreate(std::unique_ptr<State> state) : state_(std::move(state)) {}
RestoreOnCreate::~RestoreOnCreate() = default;

absl::StatusOr<std::unique_ptr<RestoreOnCreate>> RestoreOnCreate::start(std::string path) {
  // The whole checkpoint is checked now, so that a damaged one fails here
  // rather than at the first variable it would restore.
  PSFLOW_RETURN_IF_ERROR(internal::checkpoint::verify_checkpoint(path));
  PSFLOW_ASSIGN_OR_RETURN(internal::checkpoint::CheckpointIndex index,
                          internal::checkpoint::read_checkpoint_index(path));
  auto state = std::make_unique<State>();
  state->path = std::move(path);
  for (const internal::checkpoint::VariableEntry& v : index.variables) {
    state->pending.insert(v.name);
  }
  State* raw = state.get();
  state->hook.emplace([raw](std::string_view name, const ShardedVariable& created) {
    return raw->on_create(name, created);
  });
  return std::unique_ptr<RestoreOnCreate>(new RestoreOnCreate(std::move(state)));
}

std::vector<std::string> RestoreOnCreate::restored() const {
  return {state_->restored.begin(), state_->restored.end()};
}

std::vector<std::string> RestoreOnCreate::pending() const {
  return {state_->pending.begin(), state_->pending.end()};
}

absl::Status RestoreOnCreate::assert_consumed() const {
  if (state_->pending.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "Unresolved object in checkpoint ", state_->path, ": no variable was created under the name",
      state_->pending.size() == 1 ? " '" : "s '", absl::StrJoin(state_->pending, "', '"),
      "' while restore-on-create was active"));
}

}  // namespace psflow

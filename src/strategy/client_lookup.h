// The runtime's side of the public VariableClientLookup: what a lookup
// holds, how the runtime makes one, and how it finds a task's client.
#ifndef PSFLOW_STRATEGY_CLIENT_LOOKUP_H_
#define PSFLOW_STRATEGY_CLIENT_LOOKUP_H_

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ps/client/variable_client.h"
#include "psflow/variable_handle.h"

namespace psflow::internal {

// The client of task (job, task); NOT_FOUND (or UNAVAILABLE) when this
// process cannot reach it.
using FindClient =
    std::function<absl::StatusOr<std::shared_ptr<VariableClient>>(std::string_view job, int task)>;

// Thread-safety: immutable; `find` must be safe to call from any thread.
struct ClientFinder {
  FindClient find;
};

// Thread-safety: stateless.
struct VariableClientLookupAccess {
  [[nodiscard]] static VariableClientLookup make(FindClient find) {
    if (!find) return VariableClientLookup();
    return VariableClientLookup(
        std::make_shared<const ClientFinder>(ClientFinder{std::move(find)}));
  }
  // INVALID_ARGUMENT for an empty lookup; otherwise the finder's answer.
  [[nodiscard]] static absl::StatusOr<std::shared_ptr<VariableClient>> find(
      const VariableClientLookup& lookup, std::string_view job, int task);
};

[[nodiscard]] inline VariableClientLookup make_client_lookup(FindClient find) {
  return VariableClientLookupAccess::make(std::move(find));
}
[[nodiscard]] inline absl::StatusOr<std::shared_ptr<VariableClient>> find_client(
    const VariableClientLookup& lookup, std::string_view job, int task) {
  return VariableClientLookupAccess::find(lookup, job, task);
}

// A lookup over one client per ps task, index = task. Any other job (the
// coordinator's "chief" variables) is NOT_FOUND with a message saying the
// variable must be created inside strategy.scope() to be used remotely.
[[nodiscard]] VariableClientLookup ps_client_lookup(
    std::vector<std::shared_ptr<VariableClient>> ps_clients);

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_CLIENT_LOOKUP_H_

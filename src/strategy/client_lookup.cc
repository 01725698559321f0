#include "strategy/client_lookup.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/cluster_spec.h"

namespace psflow::internal {

absl::StatusOr<std::shared_ptr<VariableClient>> VariableClientLookupAccess::find(
    const VariableClientLookup& lookup, std::string_view job, int task) {
  if (lookup.finder_ == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "no client lookup given to reach ", task_name(job, task),
        "; use strategy.client_lookup() on the coordinator or ctx.variable_clients() in a "
        "scheduled function"));
  }
  return lookup.finder_->find(job, task);
}

VariableClientLookup ps_client_lookup(std::vector<std::shared_ptr<VariableClient>> ps_clients) {
  return make_client_lookup(
      [clients = std::move(ps_clients)](
          std::string_view job, int task) -> absl::StatusOr<std::shared_ptr<VariableClient>> {
        if (job == kPsJob && task >= 0 && task < static_cast<int>(clients.size()) &&
            clients[static_cast<size_t>(task)] != nullptr) {
          return clients[static_cast<size_t>(task)];
        }
        if (job == kPsJob) {
          return absl::NotFoundError(absl::StrCat("no client for ", task_name(job, task),
                                                  "; this process knows ", clients.size(),
                                                  " ps task(s)"));
        }
        return absl::NotFoundError(absl::StrCat(
            "the variable lives on ", task_name(job, task),
            ", which other processes cannot reach; create it inside strategy.scope() so that it is "
            "placed on a ps task"));
      });
}

}  // namespace psflow::internal

#include "server/task_plan.h"

#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/strings.h"
#include "psflow/status_macros.h"

namespace psflow::internal {

absl::StatusOr<TaskPlan> plan_task(const ClusterSpec& spec, std::string_view job, int index,
                                   const ServerOptions& options, const HostLookup& lookup) {
  if (job != kPsJob && job != kWorkerJob) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a psflow server runs a 'ps' or 'worker' task, not job '", av(job),
        "'. The chief is the coordinator (psflow train); set the task type to ps or worker"));
  }
  absl::StatusOr<std::string> address = spec.task_address(job, index);
  if (!address.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot serve ", task_name(job, index), ": ",
                                                   address.status().message(),
                                                   ". The cluster spec is ", spec.to_json()));
  }
  TaskPlan plan;
  plan.job = std::string(job);
  plan.index = index;
  PSFLOW_ASSIGN_OR_RETURN(plan.address, parse_host_port(*address));
  if (options.max_message_bytes <= 0) {
    return absl::InvalidArgumentError("ServerOptions::max_message_bytes must be positive");
  }
  for (const auto& [name, value] :
       {std::pair<std::string_view, absl::Duration>{"handshake_timeout", options.handshake_timeout},
        {"keepalive_time", options.keepalive_time},
        {"keepalive_timeout", options.keepalive_timeout},
        {"max_connection_idle", options.max_connection_idle},
        {"max_connection_age", options.max_connection_age}}) {
    if (value < absl::Milliseconds(1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("ServerOptions::", av(name), " is ", absl::FormatDuration(value),
                       "; it must be at least 1ms (infinite turns max_connection_age off)"));
    }
  }
  if (options.max_buffered_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ServerOptions::max_buffered_bytes is ", options.max_buffered_bytes,
                     "; use 0 for the default (2 x max_message_bytes + 256 MiB) or a positive "
                     "number of bytes"));
  }
  if (options.max_value_bytes < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ServerOptions::max_value_bytes is ", options.max_value_bytes, "; it must be at least 1"));
  }
  if (options.result_cache_entries < 0 || options.result_cache_entries > kMaxResultCacheEntries) {
    return absl::InvalidArgumentError(absl::StrCat(
        "result cache entries ", options.result_cache_entries, " is out of range; use 0 to ",
        kMaxResultCacheEntries, " (0 keeps no results)"));
  }
  if (options.result_cache_bytes < 0 || options.result_cache_bytes > kMaxResultCacheBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("result cache bytes ", options.result_cache_bytes,
                     " is out of range; use 0 to ", kMaxResultCacheBytes, " (64 GiB)"));
  }
  if (!options.bind_address.empty()) {
    // "[10.1.2.3]:2222" is accepted (so that one form serves both families,
    // as --bind [$(POD_IP)]:2222) and handed on as "10.1.2.3:2222".
    PSFLOW_ASSIGN_OR_RETURN(HostPort bind, parse_host_port(options.bind_address));
    plan.listen = ListenAddress{join_host_port(bind.host, bind.port), "the bind address given"};
    return plan;
  }
  absl::StatusOr<ListenAddress> listen = task_listen_address(plan.address, lookup);
  if (!listen.ok()) {
    return absl::Status(listen.status().code(), absl::StrCat("cannot serve ", task_name(job, index),
                                                             ": ", listen.status().message()));
  }
  plan.listen = *std::move(listen);
  return plan;
}

}  // namespace psflow::internal

// Slurm's compact node and task lists, as TF's slurm_cluster_resolver.py
// reads them (expand_hostlist, expand_tasks_per_node), with bounds: the
// input comes from the environment, so nothing here may crash or run away.
#ifndef PSFLOW_CLUSTER_SLURM_HOSTLIST_H_
#define PSFLOW_CLUSTER_SLURM_HOSTLIST_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace psflow::internal {

// Most hosts (or nodes of a tasks-per-node list) an expansion may yield;
// longest host name one may yield (DNS names have at most 253 characters).
inline constexpr int64_t kMaxSlurmHosts = 1'000'000;
inline constexpr int64_t kMaxSlurmHostNameChars = 255;

// Expands a Slurm host list (SLURM_STEP_NODELIST): hosts are split at commas
// outside brackets; a bracket group holds comma-separated numbers and ranges
// "a-b" (a <= b), each number zero-padded to the width of the range's first
// bound ("n[01-03]" -> n01 n02 n03, as TF's zfill); several groups in one
// host expand as a product, the last group varying fastest ("a[1-2]b[3-4]"
// -> a1b3 a1b4 a2b3 a2b4; TF's regex takes only one trailing group, Slurm's
// scontrol takes several). Order is kept and nothing is deduplicated:
// "n[1-2],m5,o[3-4,6,7-9]" -> n1 n2 m5 o3 o4 o6 o7 o8 o9. "" gives no hosts.
// INVALID_ARGUMENT naming the list, the offending character or range and
// what is expected, for an unbalanced or nested bracket, an empty host or
// group item, a character other than a digit, ',' or '-' inside brackets, a
// descending range (5-3), a number of more than 18 digits, more than
// kMaxSlurmHosts hosts or a host name longer than kMaxSlurmHostNameChars
// (both checked before anything is expanded).
[[nodiscard]] absl::StatusOr<std::vector<std::string>> expand_hostlist(std::string_view hostlist);

// Expands Slurm's tasks per node (SLURM_STEP_TASKS_PER_NODE): comma-separated
// items "N" (one node running N tasks) or "N(xR)" (R nodes running N each),
// in node order: "2(x3),1" -> 2 2 2 1. INVALID_ARGUMENT naming the list and
// the item for anything else (empty items, signs, spaces, R = 0), for N above
// kMaxSlurmTasksPerNode, or for more than kMaxSlurmHosts nodes in total.
inline constexpr int kMaxSlurmTasksPerNode = 65'535;  // One port each.
[[nodiscard]] absl::StatusOr<std::vector<int>> expand_tasks_per_node(
    std::string_view tasks_per_node);

// `value` in double quotes, C-escaped and cut to 80 characters (then
// "..."): how Slurm values, which may be long, are quoted in messages.
[[nodiscard]] std::string quote_slurm_value(std::string_view value);

}  // namespace psflow::internal

#endif  // PSFLOW_CLUSTER_SLURM_HOSTLIST_H_

// Checking, before training starts, that every worker can read its data.
//
// Each worker builds its own per-worker dataset from files on its own host
// (the same path on every host, or a shared directory mounted there), so a
// worker on a host without the data would otherwise fail only at its first
// closure. The chief asks every worker first: each builds its dataset as
// its closures would and reads one element.
#ifndef PSFLOW_TRAIN_DATA_CHECK_H_
#define PSFLOW_TRAIN_DATA_CHECK_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/cluster_spec.h"
#include "psflow/structure.h"
#include "psflow/worker_context.h"

namespace psflow::internal {

// The worker function: args {"dataset": registered dataset function,
// "args": its arguments}. Builds that dataset for this worker and reads its
// first element; returns {"host": this host's name}. Errors keep their code
// and start with "on host <name>: ".
inline constexpr char kCheckDataFunction[] = "train/check_data";
[[nodiscard]] absl::StatusOr<Structure> check_data(WorkerContext& ctx, const Structure& args);

// Calls kCheckDataFunction on every worker of `spec`, in parallel, each
// bounded by `timeout`. FAILED_PRECONDITION listing every worker that cannot
// read its data (task, address, host and the reason) and where workers look
// for it; an unreachable worker is not this check's business (the
// coordinator handles lost workers) and is skipped.
[[nodiscard]] absl::Status check_workers_data(const ClusterSpec& spec, std::string_view dataset,
                                              const Structure& args, absl::Duration timeout);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_DATA_CHECK_H_

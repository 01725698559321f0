// The rendezvous behind ReplicaContext's collectives in one
// ReplicaGroup::run: a reusable barrier over the replica threads that
// exchanges one value per replica per round.
#ifndef PSFLOW_STRATEGY_REPLICA_COLLECTIVE_H_
#define PSFLOW_STRATEGY_REPLICA_COLLECTIVE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "psflow/replica_context.h"
#include "psflow/structure.h"

namespace psflow::internal {

// Rounds: every replica calls exchange() once per round; the last to arrive
// checks that all called the same collective, runs `combine` over the
// inputs (index = replica) and wakes the others, who all get its result.
// Once a replica's function returns (depart), no later round can complete,
// so every replica waiting or arriving afterwards gets an error at once
// instead of waiting forever: ABORTED naming the failed replica, or
// FAILED_PRECONDITION when it returned successfully. A wait longer than
// `timeout` fails the round for everybody with DEADLINE_EXCEEDED.
// Thread-safety: thread-safe; one thread per replica.
class ReplicaCollective {
 public:
  using Combine = std::function<absl::StatusOr<Structure>(absl::Span<const Structure> inputs)>;

  ReplicaCollective(int num_replicas, absl::Duration timeout);

  // `name` describes the call, e.g. "all_reduce(SUM)"; every replica of a
  // round must pass the same one (else INVALID_ARGUMENT for all).
  [[nodiscard]] absl::StatusOr<Structure> exchange(int replica, const std::string& name,
                                                   Structure value, const Combine& combine)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Replica `replica`'s function returned `status`. The first non-OK one
  // becomes first_error(), prefixed "replica <i>: ".
  void depart(int replica, const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] absl::Status first_error() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  const int num_replicas_;
  const absl::Duration timeout_;
  mutable absl::Mutex mu_;
  absl::CondVar cv_;
  int64_t round_ ABSL_GUARDED_BY(mu_) = 0;  // Completed rounds.
  int arrived_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<bool> present_ ABSL_GUARDED_BY(mu_);
  std::vector<Structure> inputs_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> names_ ABSL_GUARDED_BY(mu_);
  absl::StatusOr<Structure> result_ ABSL_GUARDED_BY(mu_);
  // Non-OK once no further round can complete, saying why.
  absl::Status closed_ ABSL_GUARDED_BY(mu_);
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
};

// The calling thread's replica context (nullptr outside a replica
// function); ReplicaGroup::run sets and restores it.
[[nodiscard]] const ReplicaContext*& current_replica_context();

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_REPLICA_COLLECTIVE_H_

// Test helpers for ReplicaGroup tests: groups whose collectives give up
// instead of hanging, and status-or-die accessors.
#ifndef PSFLOW_STRATEGY_REPLICA_TEST_UTIL_H_
#define PSFLOW_STRATEGY_REPLICA_TEST_UTIL_H_

#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "psflow/replica_group.h"

namespace psflow::internal::testing {

// Every collective wait is bounded, so that a deadlock fails the test with
// DEADLINE_EXCEEDED instead of hanging it.
inline ReplicaGroup test_group(int num_replicas,
                               absl::Duration collective_timeout = absl::Seconds(30)) {
  ReplicaGroupOptions options;
  options.collective_timeout = collective_timeout;
  return ReplicaGroup(num_replicas, options);
}

// debug_string of a StatusOr<Structure>, or the error text.
inline std::string printed(const absl::StatusOr<Structure>& s) {
  return s.ok() ? s->debug_string() : s.status().ToString();
}

inline std::string printed(const absl::StatusOr<PerReplica>& s) {
  return s.ok() ? s->debug_string() : s.status().ToString();
}

}  // namespace psflow::internal::testing

// `PSFLOW_DV_ASSIGN(auto x, StatusOrExpr());` asserts OK, then assigns.
#define PSFLOW_DV_ASSIGN(lhs, expr) \
  PSFLOW_DV_ASSIGN_IMPL_(PSFLOW_DV_CONCAT_(dv_statusor_, __LINE__), lhs, expr)
#define PSFLOW_DV_CONCAT_INNER_(a, b) a##b
#define PSFLOW_DV_CONCAT_(a, b) PSFLOW_DV_CONCAT_INNER_(a, b)
#define PSFLOW_DV_ASSIGN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  ASSERT_TRUE(tmp.ok()) << tmp.status();       \
  lhs = *std::move(tmp)

#endif  // PSFLOW_STRATEGY_REPLICA_TEST_UTIL_H_

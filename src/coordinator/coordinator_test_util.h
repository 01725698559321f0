// Helpers for the coordinator tests (test-only; not part of psflow_core).
#ifndef PSFLOW_COORDINATOR_COORDINATOR_TEST_UTIL_H_
#define PSFLOW_COORDINATOR_COORDINATOR_TEST_UTIL_H_

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "psflow/cluster_coordinator.h"

namespace psflow::internal::testing {

// Upper bound for waits that should succeed quickly: a failing test ends
// instead of hanging.
inline constexpr absl::Duration kTestTimeout = absl::Seconds(60);
// How long a test watches for something that must not happen (a wait that
// must stay blocked). Never used to wait for something to happen.
inline constexpr absl::Duration kNegativeCheck = absl::Milliseconds(50);

// A barrier that closures pass once the test opens it; it counts arrivals,
// so the test knows which closures are running.
// Thread-safety: thread-safe.
class Gate {
 public:
  // Function side: counts the arrival, then waits until open.
  void pass() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    ++arrived_;
    mu_.Await(absl::Condition(&open_));
  }
  void open() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    open_ = true;
  }
  void reset() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    open_ = false;
    arrived_ = 0;
  }
  // Test side: whether `n` callers arrived within `timeout`.
  [[nodiscard]] bool await_arrivals(int n, absl::Duration timeout = kTestTimeout)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    const auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return arrived_ >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout);
  }
  [[nodiscard]] int arrived() ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return arrived_;
  }

 private:
  absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
  int arrived_ ABSL_GUARDED_BY(mu_) = 0;
};

inline std::unique_ptr<ClusterCoordinator> make_coordinator(int num_workers,
                                                            int64_t max_queued = 0) {
  ClusterCoordinatorOptions options;
  if (max_queued > 0) options.max_queued_closures = max_queued;
  absl::StatusOr<std::unique_ptr<ClusterCoordinator>> coordinator =
      ClusterCoordinator::create_in_process(num_workers, options);
  EXPECT_TRUE(coordinator.ok()) << coordinator.status();
  return coordinator.ok() ? *std::move(coordinator) : nullptr;
}

}  // namespace psflow::internal::testing

#define PSFLOW_TEST_CONCAT_INNER_(a, b) a##b
#define PSFLOW_TEST_CONCAT_(a, b) PSFLOW_TEST_CONCAT_INNER_(a, b)
// `PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue r, c->schedule("f"));`
#define PSFLOW_ASSERT_OK_AND_ASSIGN(lhs, expr) \
  PSFLOW_ASSERT_OK_AND_ASSIGN_IMPL_(PSFLOW_TEST_CONCAT_(statusor_, __LINE__), lhs, expr)
#define PSFLOW_ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                      \
  ASSERT_TRUE(tmp.ok()) << tmp.status();                  \
  lhs = *std::move(tmp)

#endif  // PSFLOW_COORDINATOR_COORDINATOR_TEST_UTIL_H_

// The coordinator's closures to one worker on one long-lived
// ExecutorService.RunFunctions stream instead of a unary RunFunction each:
// no per-call setup, and the closures queued while a message is being
// written go out together in the next one.
#ifndef PSFLOW_EXECUTOR_RUN_STREAM_H_
#define PSFLOW_EXECUTOR_RUN_STREAM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "executor/executor_connection.h"
#include "psflow/v1/task.grpc.pb.h"

namespace psflow::internal {

// A stream fails as a whole: when it ends (the worker died, the network
// broke, the worker refused a message), every run on it still outstanding
// gets the stream's status as its transport error (UNAVAILABLE when the
// stream ended without one), exactly as each unary call would have; the
// next run opens a new stream. Streams fail fast (no wait for a worker
// that is down) and have no deadline, as RunFunction calls.
//
// Thread-safety: thread-safe. shutdown() must not run on a callback of
// its runs.
class RunStream {
 public:
  // `stub` must outlive this object; `task_name` and `target` annotate errors.
  RunStream(v1::ExecutorService::Stub* stub, std::string task_name, std::string target);
  // Calls shutdown().
  ~RunStream();
  RunStream(const RunStream&) = delete;
  RunStream& operator=(const RunStream&) = delete;

  // Sends `request`; `done` runs exactly once on a gRPC thread (or inline,
  // CANCELLED, after shutdown). At most one run per closure id may be
  // outstanding.
  void run_async(v1::RunFunctionRequest request, RunDone done) ABSL_LOCKS_EXCLUDED(mu_);

  // Whether a run of `closure_id` is outstanding.
  [[nodiscard]] bool is_running(uint64_t closure_id) const ABSL_LOCKS_EXCLUDED(mu_);

  // Cancels every stream and blocks until each has run its runs' callbacks
  // and ended; later runs fail inline.
  void shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  // One stream (defined in run_stream.cc).
  class Call;

 private:
  // Called by `call` as gRPC is done with it: drops it (and so frees it).
  void release(Call* call) ABSL_LOCKS_EXCLUDED(mu_);

  v1::ExecutorService::Stub* const stub_;
  const std::string task_name_;
  const std::string target_;

  mutable absl::Mutex mu_;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  // The stream new runs go to (null until the first run, or after it broke).
  std::shared_ptr<Call> current_ ABSL_GUARDED_BY(mu_);
  // Every stream gRPC is not done with, `current_` included.
  std::vector<std::shared_ptr<Call>> live_ ABSL_GUARDED_BY(mu_);
};

}  // namespace psflow::internal

#endif  // PSFLOW_EXECUTOR_RUN_STREAM_H_

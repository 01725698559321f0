// One training process per run directory.
//
// Two `psflow train` processes on one --run-dir would interleave their
// checkpoints and overwrite each other's records. The first takes an
// exclusive lock on <run-dir>/.psflow-lock (flock) for its lifetime and
// writes who it is there; a second is refused naming the holder. The kernel
// drops the lock when its holder dies however it dies, so a lock left by a
// dead process is taken over at once (and said so).
#ifndef PSFLOW_TRAIN_RUN_LOCK_H_
#define PSFLOW_TRAIN_RUN_LOCK_H_

#include <string>

#include "absl/status/statusor.h"

namespace psflow::internal {

inline constexpr char kRunLockFile[] = ".psflow-lock";

// Holds the lock of one run directory until destroyed.
// Thread-safety: a move-only handle; not shared between threads.
class RunDirLock {
 public:
  // Creates `run_dir` if needed and locks it. FAILED_PRECONDITION naming the
  // holder (pid, host, start time) while another process holds it; the
  // errno's status when the directory or file cannot be made.
  // `previous_holder` receives the description left by a process that died
  // holding the lock (empty when there was none).
  [[nodiscard]] static absl::StatusOr<RunDirLock> acquire(const std::string& run_dir,
                                                          std::string* previous_holder = nullptr);

  RunDirLock(RunDirLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  RunDirLock& operator=(RunDirLock&& other) noexcept;
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;
  ~RunDirLock();

 private:
  // `fd` holds the lock.
  explicit RunDirLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_RUN_LOCK_H_

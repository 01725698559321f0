// Starting child processes safely from a multi-threaded program.
#ifndef PSFLOW_LAUNCHER_PROCESS_SPAWNER_H_
#define PSFLOW_LAUNCHER_PROCESS_SPAWNER_H_

#include <sys/types.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace psflow::internal {

struct SpawnRequest {
  // Absolute path of the program.
  std::string binary;
  // Full argument vector, argv[0] included.
  std::vector<std::string> argv;
  // Full environment, "KEY=VALUE" each.
  std::vector<std::string> env;
  // File receiving the child's stdout and stderr (appended, created 0644).
  // Empty: the child writes both to this process's stderr (never to its
  // stdout, which may be a protocol channel such as `psflow local-cluster`'s).
  std::string log_path;
};

// The path of this process's executable (/proc/self/exe).
[[nodiscard]] absl::StatusOr<std::string> self_executable_path();

// Describes a waitpid() status: "exited with code 2", "killed by SIGKILL".
[[nodiscard]] std::string describe_wait_status(int wait_status);

// Forks and execs children from one dedicated, long-lived thread and reaps
// them there. Children get PR_SET_PDEATHSIG(SIGKILL), which the kernel ties
// to the *thread* that forked, so they die when that thread ends: when this
// spawner shuts down, or when the whole process dies, even by SIGKILL. The
// thread waits for exits on pidfds with poll(), never by sleeping; each
// child's pidfd stays open until the spawner is destroyed, which makes
// signal() immune to pid reuse.
// Thread-safety: all methods may be called from any thread; `on_exit` runs
// on the spawner thread with no spawner lock held.
class ProcessSpawner {
 public:
  // Called once per child after it was reaped, with its waitpid() status.
  using ExitCallback = std::function<void(pid_t pid, int wait_status)>;

  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ProcessSpawner>> create(ExitCallback on_exit);
  // shutdown(), then closes the pidfds.
  ~ProcessSpawner();
  ProcessSpawner(const ProcessSpawner&) = delete;
  ProcessSpawner& operator=(const ProcessSpawner&) = delete;

  // Starts a child; returns once it has exec'd (or failed to: then an error
  // naming the binary, e.g. NOT_FOUND "No such file or directory").
  [[nodiscard]] absl::StatusOr<pid_t> spawn(const SpawnRequest& request) ABSL_LOCKS_EXCLUDED(mu_);
  // Sends `signal` to a child of this spawner. NOT_FOUND for another pid,
  // FAILED_PRECONDITION once the child has been reaped.
  [[nodiscard]] absl::Status signal(pid_t pid, int signal) ABSL_LOCKS_EXCLUDED(mu_);
  // SIGKILLs children still running, reaps them (running on_exit) and ends
  // the thread. Idempotent; spawn() fails afterwards.
  void shutdown() ABSL_LOCKS_EXCLUDED(join_mu_, mu_);

 private:
  struct Pending {
    const SpawnRequest* request;
    absl::StatusOr<pid_t> result = absl::UnknownError("not spawned");
    bool done = false;
  };
  struct Child {
    int pidfd = -1;
    bool reaped = false;
  };

  ProcessSpawner(ExitCallback on_exit, int wake_fd);
  void run();
  absl::StatusOr<pid_t> fork_exec(const SpawnRequest& request);
  void reap(pid_t pid, bool block);
  void wake();

  const ExitCallback on_exit_;
  const int wake_fd_;  // eventfd: new requests or shutdown.

  absl::Mutex mu_;
  std::deque<Pending*> queue_ ABSL_GUARDED_BY(mu_);
  std::map<pid_t, Child> children_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;

  absl::Mutex join_mu_;  // Serialises shutdown() callers around join().
  std::thread thread_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_LAUNCHER_PROCESS_SPAWNER_H_

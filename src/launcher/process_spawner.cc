#include "launcher/process_spawner.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/errno_status.h"
#include "base/logging.h"
#include "base/strings.h"

namespace psflow::internal {
namespace {

// Exit code of a child whose parent died before it could arm
// PR_SET_PDEATHSIG (it would otherwise be orphaned).
constexpr int kParentGoneExitCode = 125;
constexpr int kExecFailedExitCode = 127;

int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

int pidfd_send_signal(int pidfd, int signal) {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0));
}

// Owns a file descriptor for the duration of one spawn.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  [[nodiscard]] int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Runs in the child between fork and exec: async-signal-safe calls only (no
// allocation, no locks, no logging), as the other threads of the parent may
// have held any lock at the moment of fork.
[[noreturn]] void exec_child(pid_t parent, const char* binary, char* const* argv, char* const* envp,
                             int stdin_fd, int out_fd, int err_fd, int error_pipe) {
  // The parent may block termination signals for a sigwait() thread; the
  // mask and ignored dispositions survive exec, so reset both.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigaction(SIGTERM, &default_action, nullptr);
  sigaction(SIGINT, &default_action, nullptr);
  // Own process group: a terminal's Ctrl-C reaches only the launcher, which
  // then stops its tasks in order.
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The parent may have died before prctl: then nobody would kill us.
  if (getppid() != parent) _exit(kParentGoneExitCode);
  if (dup2(stdin_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 ||
      (err_fd != STDERR_FILENO && dup2(err_fd, STDERR_FILENO) < 0)) {
    const int error = errno;
    [[maybe_unused]] ssize_t n = write(error_pipe, &error, sizeof(error));
    _exit(kExecFailedExitCode);
  }
  // Do not leak the parent's descriptors (pipes, sockets) into the task.
  syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
  execve(binary, argv, envp);
  const int error = errno;
  [[maybe_unused]] ssize_t n = write(error_pipe, &error, sizeof(error));
  _exit(kExecFailedExitCode);
}

}  // namespace

absl::StatusOr<std::string> self_executable_path() {
  char buffer[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n < 0) return errno_status(errno, "cannot find this program's executable");
  return std::string(buffer, static_cast<size_t>(n));
}

std::string describe_wait_status(int wait_status) {
  if (WIFEXITED(wait_status)) return absl::StrCat("exited with code ", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const char* name = sigabbrev_np(WTERMSIG(wait_status));
    return name != nullptr ? absl::StrCat("was killed by SIG", name)
                           : absl::StrCat("was killed by signal ", WTERMSIG(wait_status));
  }
  return absl::StrCat("ended with wait status ", wait_status);
}

absl::StatusOr<std::unique_ptr<ProcessSpawner>> ProcessSpawner::create(ExitCallback on_exit) {
  const int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd < 0) return errno_status(errno, "eventfd");
  return std::unique_ptr<ProcessSpawner>(new ProcessSpawner(std::move(on_exit), wake_fd));
}

ProcessSpawner::ProcessSpawner(ExitCallback on_exit, int wake_fd)
    : on_exit_(std::move(on_exit)), wake_fd_(wake_fd), thread_([this] { run(); }) {}

ProcessSpawner::~ProcessSpawner() {
  shutdown();
  absl::MutexLock lock(&mu_);
  for (auto& [pid, child] : children_) {
    if (child.pidfd >= 0) ::close(child.pidfd);
    child.pidfd = -1;
  }
  ::close(wake_fd_);
}

void ProcessSpawner::wake() {
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
}

absl::StatusOr<pid_t> ProcessSpawner::spawn(const SpawnRequest& request) {
  Pending pending{&request};
  absl::MutexLock lock(&mu_);
  if (shutting_down_) {
    return absl::FailedPreconditionError("cannot spawn: the process spawner was shut down");
  }
  queue_.push_back(&pending);
  wake();
  mu_.Await(absl::Condition(&pending.done));
  return pending.result;
}

absl::Status ProcessSpawner::signal(pid_t pid, int signal) {
  absl::MutexLock lock(&mu_);
  auto it = children_.find(pid);
  if (it == children_.end()) {
    return absl::NotFoundError(absl::StrCat("process ", pid, " is not a child of this spawner"));
  }
  if (it->second.reaped || it->second.pidfd < 0) {
    return absl::FailedPreconditionError(absl::StrCat("process ", pid, " has already exited"));
  }
  if (pidfd_send_signal(it->second.pidfd, signal) != 0) {
    if (errno == ESRCH) {
      return absl::FailedPreconditionError(absl::StrCat("process ", pid, " has already exited"));
    }
    return errno_status(errno, absl::StrCat("signal ", signal, " to process ", pid));
  }
  return absl::OkStatus();
}

void ProcessSpawner::shutdown() {
  absl::MutexLock join_lock(&join_mu_);
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;
    wake();
  }
  if (thread_.joinable()) thread_.join();
}

absl::StatusOr<pid_t> ProcessSpawner::fork_exec(const SpawnRequest& request) {
  // Everything the child needs is prepared here, before fork.
  std::vector<char*> argv = c_strings(request.argv);
  std::vector<char*> envp = c_strings(request.env);
  Fd dev_null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (dev_null.get() < 0) return errno_status(errno, "open /dev/null");
  Fd log;
  if (!request.log_path.empty()) {
    log.reset(::open(request.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (log.get() < 0) {
      return errno_status(errno, absl::StrCat("cannot open log file ", request.log_path));
    }
  }
  const int out_fd = log.get() >= 0 ? log.get() : STDERR_FILENO;
  int error_pipe[2];
  if (::pipe2(error_pipe, O_CLOEXEC) != 0) return errno_status(errno, "pipe2");
  Fd error_read(error_pipe[0]);
  Fd error_write(error_pipe[1]);

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return errno_status(errno, "fork");
  if (pid == 0) {
    exec_child(parent, request.binary.c_str(), argv.data(), envp.data(), dev_null.get(), out_fd,
               out_fd, error_write.get());
  }
  error_write.reset();
  // Blocks until the child has exec'd (the pipe closes on exec) or reports
  // why it could not.
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(error_read.get(), &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof(child_errno))) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    return errno_status(child_errno, absl::StrCat("cannot execute ", request.binary));
  }
  return pid;
}

void ProcessSpawner::reap(pid_t pid, bool block) {
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid, &status, block ? 0 : WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r != pid) return;  // Not exited yet (spurious wake-up) or already reaped.
  {
    absl::MutexLock lock(&mu_);
    children_[pid].reaped = true;
  }
  on_exit_(pid, status);
}

void ProcessSpawner::run() {
  std::vector<pollfd> fds;
  std::vector<pid_t> fd_pids;
  for (;;) {
    std::deque<Pending*> requests;
    bool stop = false;
    fds.assign(1, pollfd{wake_fd_, POLLIN, 0});
    fd_pids.assign(1, 0);
    {
      absl::MutexLock lock(&mu_);
      requests.swap(queue_);
      stop = shutting_down_;
      for (const auto& [pid, child] : children_) {
        if (child.reaped) continue;
        fds.push_back(pollfd{child.pidfd, POLLIN, 0});
        fd_pids.push_back(pid);
      }
    }
    for (Pending* pending : requests) {
      absl::StatusOr<pid_t> result = fork_exec(*pending->request);
      if (result.ok()) {
        const int pidfd = pidfd_open(*result);
        if (pidfd < 0) {
          // Without a pidfd the child could be neither watched nor signalled
          // safely; do not leave it running.
          const int error = errno;
          ::kill(*result, SIGKILL);
          int status = 0;
          ::waitpid(*result, &status, 0);
          result = errno_status(error, "pidfd_open (needs Linux 5.3 or later)");
        } else {
          absl::MutexLock lock(&mu_);
          children_[*result] = Child{pidfd, false};
        }
      }
      absl::MutexLock lock(&mu_);
      pending->result = std::move(result);
      pending->done = true;
    }
    if (!requests.empty()) continue;  // Re-read the child list before polling.
    if (stop) break;
    const int ready = ::poll(fds.data(), fds.size(), -1);
    if (ready < 0) {
      PSFLOW_CHECK(errno == EINTR, "poll on child pidfds failed: ", std::strerror(errno));
      continue;
    }
    if (fds[0].revents != 0) {
      uint64_t count = 0;
      [[maybe_unused]] ssize_t n = ::read(wake_fd_, &count, sizeof(count));
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) reap(fd_pids[i], /*block=*/false);
    }
  }
  // Shutting down: no child may outlive the spawner.
  std::vector<pid_t> alive;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [pid, child] : children_) {
      if (child.reaped) continue;
      pidfd_send_signal(child.pidfd, SIGKILL);
      alive.push_back(pid);
    }
    // Fail spawn() calls that raced with shutdown.
    for (Pending* pending : queue_) {
      pending->result = absl::FailedPreconditionError("the process spawner was shut down");
      pending->done = true;
    }
    queue_.clear();
  }
  for (pid_t pid : alive) reap(pid, /*block=*/true);
}

}  // namespace psflow::internal

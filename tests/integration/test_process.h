// Test helper: a child process with piped stdout/stderr, waited for with
// pidfds and deadlines (never sleeps). Header-only; used by the
// multi-process tests in this directory.
#ifndef PSFLOW_TESTS_INTEGRATION_TEST_PROCESS_H_
#define PSFLOW_TESTS_INTEGRATION_TEST_PROCESS_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"

extern char** environ;

namespace psflow::internal::testing {

inline int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// Milliseconds left until `deadline`, for poll(); 0 once it has passed.
inline int millis_until(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
}

// Waits until `fd` is readable or `deadline` passes.
inline bool wait_readable(int fd, absl::Time deadline) {
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int r = ::poll(&p, 1, millis_until(deadline));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

// True once the process `pid` (not necessarily our child) has exited, or
// false if it is still running at `deadline`. Uses a pidfd: no polling loop.
inline bool wait_for_process_exit(pid_t pid, absl::Time deadline) {
  const int fd = pidfd_open(pid);
  if (fd < 0) return errno == ESRCH;  // Already gone (and reaped).
  const bool exited = wait_readable(fd, deadline);
  ::close(fd);
  return exited;
}

// The environment of this process without TF_CONFIG, plus `extra`.
inline std::vector<std::string> test_environment(
    const std::map<std::string, std::string>& extra = {}) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string item(*e);
    const std::string key = item.substr(0, item.find('='));
    if (key == "TF_CONFIG" || extra.contains(key)) continue;
    env.push_back(std::move(item));
  }
  for (const auto& [key, value] : extra) env.push_back(key + "=" + value);
  return env;
}

// A child process running `argv` with stdout and stderr on pipes.
// Thread-safety: use from one thread.
class TestProcess {
 public:
  // Check pid() > 0 for success.
  TestProcess(std::vector<std::string> argv, std::vector<std::string> env) {
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    std::vector<char*> envp;
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    int out[2];
    int err[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return;
    if (::pipe2(err, O_CLOEXEC) != 0) {
      ::close(out[0]);
      ::close(out[1]);
      return;
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      // Async-signal-safe calls only until exec.
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      ::dup2(out[1], STDOUT_FILENO);
      ::dup2(err[1], STDERR_FILENO);
      ::execve(args[0], args.data(), envp.data());
      _exit(127);
    }
    ::close(out[1]);
    ::close(err[1]);
    stdout_fd_ = out[0];
    stderr_fd_ = err[0];
    if (pid_ > 0) pidfd_ = pidfd_open(pid_);
  }

  ~TestProcess() {
    if (pid_ > 0 && !exit_status_.has_value()) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    for (int fd : {stdout_fd_, stderr_fd_, pidfd_}) {
      if (fd >= 0) ::close(fd);
    }
  }
  TestProcess(const TestProcess&) = delete;
  TestProcess& operator=(const TestProcess&) = delete;

  [[nodiscard]] pid_t pid() const { return pid_; }

  // The next stdout line (without '\n'), or nullopt at EOF or `deadline`.
  std::optional<std::string> read_line(absl::Time deadline) {
    return next_line(stdout_fd_, stdout_buffer_, deadline);
  }
  // The same for stderr.
  std::optional<std::string> read_stderr_line(absl::Time deadline) {
    return next_line(stderr_fd_, stderr_buffer_, deadline);
  }

  // Everything written to stdout / stderr until EOF or `deadline`.
  std::string read_stdout(absl::Time deadline) {
    while (read_some(stdout_fd_, stdout_buffer_, deadline)) {
    }
    return std::exchange(stdout_buffer_, "");
  }
  std::string read_stderr(absl::Time deadline) {
    while (read_some(stderr_fd_, stderr_buffer_, deadline)) {
    }
    return std::exchange(stderr_buffer_, "");
  }

  bool signal(int signo) { return ::kill(pid_, signo) == 0; }

  // The waitpid() status once the child has exited, or nullopt if it is
  // still running at `deadline`.
  std::optional<int> wait(absl::Time deadline) {
    if (exit_status_.has_value()) return exit_status_;
    if (pidfd_ < 0 || !wait_readable(pidfd_, deadline)) return std::nullopt;
    int status = 0;
    if (::waitpid(pid_, &status, 0) == pid_) exit_status_ = status;
    return exit_status_;
  }

  // Exit code after a normal exit, or -1 (killed by a signal, still running).
  int wait_exit_code(absl::Time deadline) {
    std::optional<int> status = wait(deadline);
    if (!status.has_value() || !WIFEXITED(*status)) return -1;
    return WEXITSTATUS(*status);
  }

 private:
  static std::optional<std::string> next_line(int fd, std::string& buffer, absl::Time deadline) {
    // Bounded by `deadline` (read_some checks it).
    for (;;) {
      const size_t newline = buffer.find('\n');
      if (newline != std::string::npos) {
        std::string line = buffer.substr(0, newline);
        buffer.erase(0, newline + 1);
        return line;
      }
      if (!read_some(fd, buffer, deadline)) return std::nullopt;
    }
  }

  // Appends what is available; false at EOF, error or deadline.
  static bool read_some(int fd, std::string& buffer, absl::Time deadline) {
    // The time check bounds callers' loops even if data keeps arriving.
    if (fd < 0 || absl::Now() > deadline || !wait_readable(fd, deadline)) return false;
    char chunk[4096];
    ssize_t n;
    do {
      n = ::read(fd, chunk, sizeof(chunk));
    } while (n < 0 && errno == EINTR);
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int pidfd_ = -1;
  int stdout_fd_ = -1;
  int stderr_fd_ = -1;
  std::string stdout_buffer_;
  std::string stderr_buffer_;
  std::optional<int> exit_status_;
};

}  // namespace psflow::internal::testing

#endif  // PSFLOW_TESTS_INTEGRATION_TEST_PROCESS_H_

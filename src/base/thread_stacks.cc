#include "base/thread_stacks.h"

#include <cxxabi.h>
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "base/errno_status.h"

namespace psflow::internal {
namespace {

constexpr int kMaxFrames = 64;
constexpr const char* kAddr2line = "/usr/bin/addr2line";

pid_t current_tid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// The one exchange between the dumping thread and the thread it asked.
// `target` is the tid asked (0: none); the asked thread's handler claims
// it by swapping in -1, so that a late answer of a thread given up on never
// writes over the next thread's frames.
struct Exchange {
  std::atomic<pid_t> target{0};
  std::array<void*, kMaxFrames> frames{};
  int depth = 0;
  sem_t answered;
};

Exchange& exchange() {
  static Exchange* const e = [] {
    auto* out = new Exchange();
    sem_init(&out->answered, 0, 0);
    return out;
  }();
  return *e;
}

// Only async-signal-safe work, plus backtrace(), whose one unsafe step (it
// loads libgcc on first use) was done before the handler was installed.
void on_stack_signal(int /*signal*/) {
  const int saved_errno = errno;
  Exchange& e = exchange();
  pid_t expected = current_tid();
  if (e.target.compare_exchange_strong(expected, -1)) {
    e.depth = backtrace(e.frames.data(), kMaxFrames);
    sem_post(&e.answered);
  }
  errno = saved_errno;
}

// Installs the handler once; FAILED_PRECONDITION when the signal has
// another one.
absl::Status install_handler() {
  static const absl::Status installed = [] {
    void* warm_up[2];
    (void)backtrace(warm_up, 2);  // Loads libgcc now, not in a handler.
    struct sigaction old = {};
    if (sigaction(stack_dump_signal(), nullptr, &old) != 0) {
      return errno_status(errno, "cannot read the stack-dump signal's handler");
    }
    if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN) {
      return absl::FailedPreconditionError(
          absl::StrCat("signal ", stack_dump_signal(),
                       " (SIGRTMAX-3) has a handler of this program's own; thread stacks "
                       "cannot be collected"));
    }
    struct sigaction action = {};
    action.sa_handler = on_stack_signal;
    sigemptyset(&action.sa_mask);
    // Interrupted system calls restart where the kernel allows it.
    action.sa_flags = SA_RESTART;
    if (sigaction(stack_dump_signal(), &action, nullptr) != 0) {
      return errno_status(errno, "cannot install the stack-dump signal handler");
    }
    return absl::OkStatus();
  }();
  return installed;
}

std::vector<pid_t> thread_ids() {
  std::vector<pid_t> out;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return out;
  while (const dirent* entry = readdir(dir)) {
    int tid = 0;
    if (absl::SimpleAtoi(entry->d_name, &tid) && tid > 0) out.push_back(tid);
  }
  closedir(dir);
  return out;
}

std::string thread_name(pid_t tid) {
  std::ifstream in(absl::StrCat("/proc/self/task/", tid, "/comm"));
  std::string name;
  std::getline(in, name);
  return name;
}

bool wait_answer(absl::Duration timeout) {
  const timespec deadline = absl::ToTimespec(absl::Now() - absl::UnixEpoch() + timeout);
  while (sem_timedwait(&exchange().answered, &deadline) != 0) {
    if (errno != EINTR) return false;
  }
  return true;
}

// Frames of `tid` (another thread), or why there are none.
absl::StatusOr<std::vector<void*>> frames_of(pid_t tid, absl::Duration timeout) {
  Exchange& e = exchange();
  e.target.store(tid);
  if (syscall(SYS_tgkill, getpid(), tid, stack_dump_signal()) != 0) {
    e.target.store(0);
    return errno_status(errno, "the thread could not be signalled (it may have ended)");
  }
  if (!wait_answer(timeout)) {
    pid_t expected = tid;
    if (e.target.compare_exchange_strong(expected, 0)) {
      return absl::DeadlineExceededError(absl::StrCat(
          "no answer within ", absl::FormatDuration(timeout),
          " (the thread blocks the signal or is stuck in an uninterruptible system call)"));
    }
    // Claimed just now: its handler is about to post.
    if (!wait_answer(timeout)) return absl::DeadlineExceededError("the thread stopped answering");
  }
  e.target.store(0);
  // Without the handler's own two frames (on_stack_signal and the kernel's
  // signal trampoline): the stack as the thread was when signalled.
  const int skip = e.depth > 2 ? 2 : 0;
  return std::vector<void*>(e.frames.begin() + skip, e.frames.begin() + e.depth);
}

// "module(mangled+0x1f) [0x...]" with the name demangled.
std::string demangle_symbol(const std::string& line) {
  const size_t open = line.find('(');
  const size_t plus = line.find('+', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || plus == std::string::npos || plus == open + 1) return line;
  const std::string mangled = line.substr(open + 1, plus - open - 1);
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || demangled == nullptr) return line;
  return absl::StrCat(line.substr(0, open + 1), demangled.get(), line.substr(plus));
}

// Whether the ELF file at `path` is position-independent (addresses in it
// are offsets from where it was loaded).
bool is_position_independent(const char* path) {
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr header = {};
  in.read(reinterpret_cast<char*>(&header), sizeof(header));
  return in && header.e_type == ET_DYN;
}

// Names the program's own frames that backtrace_symbols could not
// ("program(+0x1234)") with addr2line, in one call; `lines` changes in place.
void name_with_addr2line(const std::vector<void*>& frames, std::vector<std::string>& lines) {
  if (access(kAddr2line, X_OK) != 0) return;
  struct Module {
    std::vector<size_t> indices;
    std::vector<uintptr_t> addresses;
  };
  std::map<std::string, Module> modules;
  for (size_t i = 0; i < frames.size(); ++i) {
    if (lines[i].find("(+") == std::string::npos && lines[i].find("()") == std::string::npos) {
      continue;
    }
    Dl_info info = {};
    if (dladdr(frames[i], &info) == 0) continue;
    // Only the program itself: shared libraries are usually stripped to
    // their exported symbols, which backtrace_symbols already names, and
    // addr2line would name the nearest exported one instead (wrongly).
    Dl_info self_info = {};
    if (dladdr(reinterpret_cast<void*>(&on_stack_signal), &self_info) == 0 ||
        self_info.dli_fbase != info.dli_fbase) {
      continue;
    }
    // Not /proc/self/exe: addr2line runs in a process of its own.
    const std::string path = absl::StrCat("/proc/", getpid(), "/exe");
    // A return address is one past the call: look up the call itself.
    uintptr_t address = reinterpret_cast<uintptr_t>(frames[i]) - 1;
    if (is_position_independent(path.c_str())) {
      address -= reinterpret_cast<uintptr_t>(info.dli_fbase);
    }
    Module& m = modules[path];
    m.indices.push_back(i);
    m.addresses.push_back(address);
  }
  for (const auto& [path, m] : modules) {
    std::string command = absl::StrCat(kAddr2line, " -f -C -e '", path, "'");
    for (uintptr_t a : m.addresses) absl::StrAppend(&command, " 0x", absl::Hex(a));
    std::FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) continue;
    std::string out;
    std::array<char, 4096> buffer;
    for (size_t n; (n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0;) {
      out.append(buffer.data(), n);
    }
    pclose(pipe);
    // Two lines per address: the function, then file:line.
    std::vector<std::string> named = absl::StrSplit(out, '\n');
    for (size_t k = 0; k < m.indices.size() && 2 * k + 1 < named.size(); ++k) {
      if (named[2 * k] == "??") continue;
      // Without debug information addr2line knows no line: "??:?", "f.cc:?".
      const std::string& where = named[2 * k + 1];
      const bool known = !where.starts_with("??") && !where.ends_with(":?");
      lines[m.indices[k]] = absl::StrCat(named[2 * k], known ? " at " : "", known ? where : "",
                                         "  [", lines[m.indices[k]], "]");
    }
  }
}

// One name per frame of `frames`.
std::vector<std::string> name_frames(const std::vector<void*>& frames) {
  std::unique_ptr<char*, void (*)(void*)> symbols(
      backtrace_symbols(frames.data(), static_cast<int>(frames.size())), std::free);
  std::vector<std::string> lines;
  for (size_t i = 0; i < frames.size(); ++i) {
    lines.push_back(symbols != nullptr
                        ? demangle_symbol(symbols.get()[i])
                        : absl::StrCat("0x", absl::Hex(reinterpret_cast<uintptr_t>(frames[i]))));
  }
  name_with_addr2line(frames, lines);
  return lines;
}

// One thread's block of the dump: its header, then its frames or why there
// are none.
struct ThreadBlock {
  std::string header;
  absl::StatusOr<std::vector<void*>> frames;
};

}  // namespace

int stack_dump_signal() { return SIGRTMAX - 3; }

absl::StatusOr<std::string> all_thread_stacks(absl::Duration per_thread_timeout) {
  static std::mutex* const one_at_a_time = new std::mutex();
  const std::lock_guard<std::mutex> lock(*one_at_a_time);
  if (absl::Status s = install_handler(); !s.ok()) return s;

  // Collected first, named after: the threads are stopped as briefly and as
  // close together in time as possible, and addr2line runs once per module.
  const pid_t self = current_tid();
  std::vector<ThreadBlock> blocks;
  {
    std::array<void*, kMaxFrames> frames;
    const int depth = backtrace(frames.data(), kMaxFrames);
    blocks.push_back({absl::StrCat("Thread ", self, " \"", thread_name(self), "\" (this thread):"),
                      std::vector<void*>(frames.begin(), frames.begin() + depth)});
  }
  for (pid_t tid : thread_ids()) {
    if (tid == self) continue;
    blocks.push_back({absl::StrCat("Thread ", tid, " \"", thread_name(tid), "\":"),
                      frames_of(tid, per_thread_timeout)});
  }
  std::vector<void*> all;
  for (const ThreadBlock& b : blocks) {
    if (b.frames.ok()) all.insert(all.end(), b.frames->begin(), b.frames->end());
  }
  const std::vector<std::string> names = name_frames(all);
  std::string out;
  size_t next = 0;
  for (const ThreadBlock& b : blocks) {
    absl::StrAppend(&out, b.header, "\n");
    if (!b.frames.ok()) {
      absl::StrAppend(&out, "  (no stack: ", b.frames.status().message(), ")\n\n");
      continue;
    }
    for (size_t i = 0; i < b.frames->size(); ++i) {
      absl::StrAppend(&out, "  #", i, " ", names[next++], "\n");
    }
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, "==== End of stack traces ====\n");
  return out;
}

absl::StatusOr<std::string> write_thread_stacks(const std::string& dir, std::string_view prefix) {
  const std::string path = absl::StrCat(
      dir, "/", std::string(prefix), "-",
      absl::FormatTime("%Y%m%d-%H%M%E6S", absl::Now(), absl::UTCTimeZone()), "-", getpid(), ".txt");
  absl::StatusOr<std::string> stacks = all_thread_stacks();
  if (!stacks.ok()) return stacks.status();
  std::FILE* file = std::fopen(path.c_str(), "wx");
  if (file == nullptr) return errno_status(errno, absl::StrCat("cannot create ", path));
  const bool written = std::fwrite(stacks->data(), 1, stacks->size(), file) == stacks->size();
  const int write_errno = errno;
  if (std::fclose(file) != 0 || !written) {
    return errno_status(written ? errno : write_errno, absl::StrCat("cannot write ", path));
  }
  return path;
}

}  // namespace psflow::internal

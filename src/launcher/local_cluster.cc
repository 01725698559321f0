// LocalCluster: ps and worker tasks as child processes on loopback.
#include "psflow/local_cluster.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <system_error>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/logging.h"
#include "base/strings.h"
#include "launcher/cluster_credentials.h"
#include "launcher/port_reservation.h"
#include "launcher/process_spawner.h"
#include "psflow/status_macros.h"
#include "rpc/address.h"
#include "rpc/health_check.h"

extern char** environ;

namespace psflow {

using internal::CertifiedTask;
using internal::describe_wait_status;
using internal::HealthCheck;
using internal::is_loopback_host;
using internal::LocalClusterCredentials;
using internal::PortReservation;
using internal::ProcessSpawner;
using internal::self_executable_path;
using internal::SpawnRequest;

namespace {

// Upper bound on tasks per job, to catch typos such as --num-workers 2000.
constexpr int kMaxTasksPerJob = 256;
// How long stop() waits for tasks after SIGKILL before giving up on them.
constexpr absl::Duration kKillTimeout = absl::Seconds(10);
// stop()'s default grace, used by the destructor.
constexpr absl::Duration kDefaultGrace = absl::Seconds(5);
// Longest wait before restarting a task that keeps dying.
constexpr absl::Duration kMaxRestartBackoff = absl::Seconds(10);

struct Task {
  std::string job;
  int index = 0;
  std::string name;
  std::string address;
  std::string log_path;
  pid_t pid = -1;  // Guarded by the cluster's mutex once it is shared.
  int restarts = 0;
  // Restarts since the task last stayed up a while: the backoff doubles
  // with these only, so a task that is preempted now and then (and runs in
  // between) comes back fast, while one that crashes at start backs off.
  int quick_exits = 0;
  absl::Time started_at = absl::InfinitePast();
  absl::Duration last_backoff = absl::ZeroDuration();
  // Set while a restart is pending: when to spawn again.
  std::optional<absl::Time> restart_at;
  bool gave_up = false;  // Exited with no restarts left.
};

// The environment of this process with TF_CONFIG replaced by `tf_config`.
std::vector<std::string> child_environment(const std::string& tf_config) {
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    std::string_view item(*entry);
    if (item.starts_with("TF_CONFIG=")) continue;
    env.emplace_back(item);
  }
  env.push_back(absl::StrCat("TF_CONFIG=", tf_config));
  return env;
}

absl::Status validate(const LocalClusterOptions& options) {
  if (options.num_ps < 0 || options.num_ps > kMaxTasksPerJob || options.num_workers < 0 ||
      options.num_workers > kMaxTasksPerJob || options.num_ps + options.num_workers == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("a local cluster needs 0..", kMaxTasksPerJob, " ps and 0..", kMaxTasksPerJob,
                     " worker tasks, and at least one task; got num_ps=", options.num_ps,
                     " num_workers=", options.num_workers));
  }
  if (!is_loopback_host(options.host)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "local cluster host '", options.host,
        "' is not a loopback address; a local cluster listens on loopback only (use 127.0.0.1 "
        "or ::1); start tasks on other addresses with `psflow server` and certificates from "
        "`psflow certs`"));
  }
  if (options.insecure && !options.tls_dir.empty()) {
    return absl::InvalidArgumentError(
        "LocalClusterOptions: insecure and tls_dir do not combine (plaintext, or TLS with the "
        "certificates in tls_dir?)");
  }
  if (options.startup_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("LocalClusterOptions::startup_timeout must be positive");
  }
  return absl::OkStatus();
}

// Thread-safety: all methods may be called from any thread. The tasks'
// identities are immutable; their pids and restart state are guarded by
// mu_. Restarts happen on the supervisor thread, never on the spawner's
// exit callback.
class LocalClusterImpl final : public LocalCluster {
 public:
  LocalClusterImpl(LocalClusterOptions options, std::string binary, ClusterSpec spec,
                   std::vector<Task> tasks, std::vector<PortReservation> reservations,
                   std::unique_ptr<LocalClusterCredentials> credentials)
      : credentials_(std::move(credentials)),
        options_(std::move(options)),
        binary_(std::move(binary)),
        spec_(std::move(spec)),
        tasks_(std::move(tasks)),
        reservations_(std::move(reservations)) {}

  ~LocalClusterImpl() override { stop(kDefaultGrace); }

  // Creates the spawner and starts every task process.
  absl::Status spawn_all() {
    PSFLOW_ASSIGN_OR_RETURN(
        spawner_, ProcessSpawner::create([this](pid_t pid, int status) { on_exit(pid, status); }));
    for (Task& task : tasks_) {
      absl::StatusOr<pid_t> pid = spawn(task);
      if (!pid.ok()) return pid.status();
      absl::MutexLock lock(&mu_);
      task.pid = *pid;
      task.started_at = absl::Now();
    }
    return absl::OkStatus();
  }

  // Starts restarting tasks that die (after start-up succeeded).
  void start_supervisor() {
    if (options_.max_restarts <= 0) return;
    {
      absl::MutexLock lock(&mu_);
      supervising_ = true;
    }
    supervisor_ = std::thread([this] { supervise(); });
  }

  // Waits until every task answers a health check, or one exits, or
  // `deadline` passes.
  absl::Status wait_until_healthy(absl::Time deadline) {
    std::vector<std::unique_ptr<HealthCheck>> checks;
    for (size_t i = 0; i < tasks_.size(); ++i) {
      checks.push_back(HealthCheck::start(tasks_[i].address, tasks_[i].name, deadline,
                                          [this, i](absl::Status status) {
                                            absl::MutexLock lock(&mu_);
                                            health_[i] = std::move(status);
                                          }));
    }
    std::vector<std::string> failures;
    absl::StatusCode code = absl::StatusCode::kDeadlineExceeded;
    {
      absl::MutexLock lock(&mu_);
      auto settled = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        if (!exits_.empty()) return true;  // A task died: no point waiting.
        return health_.size() == tasks_.size();
      };
      // The checks themselves end at the deadline; the slack only covers
      // their callbacks arriving.
      mu_.AwaitWithDeadline(absl::Condition(&settled), deadline + absl::Seconds(2));
      for (size_t i = 0; i < tasks_.size(); ++i) {
        const Task& task = tasks_[i];
        auto exit = exits_.find(task.pid);
        auto health = health_.find(i);
        std::string why;
        if (exit != exits_.end()) {
          why = absl::StrCat(task.name, " (", task.address, ") ",
                             describe_wait_status(exit->second), " during start-up");
          code = absl::StatusCode::kUnavailable;
        } else if (health == health_.end()) {
          why = absl::StrCat(task.name, " (", task.address, "): no answer yet");
        } else if (!health->second.ok()) {
          why = std::string(health->second.message());
          if (health->second.code() != absl::StatusCode::kDeadlineExceeded) {
            code = health->second.code();
          }
        } else {
          continue;
        }
        if (!task.log_path.empty()) absl::StrAppend(&why, " [log: ", task.log_path, "]");
        failures.push_back(std::move(why));
      }
    }
    checks.clear();  // Cancels what is still waiting; must not hold mu_.
    if (failures.empty()) return absl::OkStatus();
    return absl::Status(
        code, absl::StrCat(failures.size(), " of ", tasks_.size(),
                           " tasks did not become healthy (start-up timeout ",
                           absl::FormatDuration(options_.startup_timeout),
                           "): ", absl::StrJoin(failures, "; "),
                           options_.log_dir.empty() ? " (task logs went to stderr)" : ""));
  }

  const ClusterSpec& cluster_spec() const override { return spec_; }

  absl::StatusOr<pid_t> pid(std::string_view job, int index) const override {
    PSFLOW_ASSIGN_OR_RETURN(const Task* task, find(job, index));
    absl::MutexLock lock(&mu_);
    return task->pid;
  }

  std::vector<pid_t> pids() const override {
    std::vector<pid_t> out;
    absl::MutexLock lock(&mu_);
    for (const Task& task : tasks_) {
      if (task.pid > 0) out.push_back(task.pid);
    }
    return out;
  }

  absl::StatusOr<int> restart_count(std::string_view job, int index) const override {
    PSFLOW_ASSIGN_OR_RETURN(const Task* task, find(job, index));
    absl::MutexLock lock(&mu_);
    return task->restarts;
  }

  absl::StatusOr<pid_t> wait_for_restart(std::string_view job, int index, int restarts,
                                         absl::Duration timeout) override {
    PSFLOW_ASSIGN_OR_RETURN(const Task* task, find(job, index));
    absl::MutexLock lock(&mu_);
    const auto settled = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return task->restarts >= restarts || task->gave_up || stop_state_ != StopState::kRunning;
    };
    if (!mu_.AwaitWithTimeout(absl::Condition(&settled), timeout)) {
      return absl::DeadlineExceededError(absl::StrCat(task->name, " was restarted ", task->restarts,
                                                      " times, not ", restarts, ", within ",
                                                      absl::FormatDuration(timeout)));
    }
    if (task->restarts >= restarts) return task->pid;
    return absl::FailedPreconditionError(
        absl::StrCat(task->name, " will not be restarted again: ",
                     task->gave_up ? "it used up max_restarts" : "the cluster is stopping"));
  }

  absl::Status signal_task(std::string_view job, int index, int signal) override {
    PSFLOW_ASSIGN_OR_RETURN(const Task* task, find(job, index));
    pid_t target;
    {
      absl::MutexLock lock(&mu_);
      target = task->pid;
    }
    absl::Status status = spawner_->signal(target, signal);
    if (!status.ok()) {
      return absl::Status(status.code(),
                          absl::StrCat("cannot signal ", task->name, ": ", status.message()));
    }
    return absl::OkStatus();
  }

  void stop(absl::Duration grace) override {
    {
      absl::MutexLock lock(&mu_);
      if (stop_state_ != StopState::kRunning) {
        mu_.Await(absl::Condition(
            +[](StopState* state) { return *state == StopState::kStopped; }, &stop_state_));
        return;
      }
      stop_state_ = StopState::kStopping;
    }
    if (supervisor_.joinable()) supervisor_.join();  // No restart after this.
    if (spawner_ != nullptr) {
      terminate_all(SIGTERM, grace);
      if (!terminate_all(SIGKILL, kKillTimeout)) {
        PSFLOW_LOG(Error, "some local cluster tasks did not exit even after SIGKILL");
      }
      // Reaps whatever is left (blocking) and ends the spawner thread.
      spawner_->shutdown();
    }
    absl::MutexLock lock(&mu_);
    stop_state_ = StopState::kStopped;
  }

 private:
  enum class StopState { kRunning, kStopping, kStopped };

  absl::StatusOr<const Task*> find(std::string_view job, int index) const {
    for (const Task& task : tasks_) {
      if (task.job == job && task.index == index) return &task;
    }
    return absl::NotFoundError(absl::StrCat("no task ", task_name(job, index),
                                            " in this local cluster (it has ", options_.num_ps,
                                            " ps and ", options_.num_workers,
                                            " worker tasks; the chief entry is the calling "
                                            "process)"));
  }

  absl::StatusOr<pid_t> spawn(const Task& task) {
    SpawnRequest request;
    request.binary = binary_;
    // --reuse-port: the port is held by our reservation socket.
    request.argv = {binary_, "server", "--reuse-port"};
    if (credentials_ != nullptr) {
      request.argv.insert(request.argv.end(), {"--tls-dir", credentials_->dir()});
    } else {
      // Plaintext even when this process's environment names credentials.
      request.argv.push_back("--insecure");
    }
    request.argv.insert(request.argv.end(), options_.server_flags.begin(),
                        options_.server_flags.end());
    request.env =
        child_environment(absl::StrCat(R"({"cluster":)", spec_.to_json(), R"(,"task":{"type":")",
                                       task.job, R"(","index":)", task.index, "}}"));
    request.log_path = task.log_path;
    absl::StatusOr<pid_t> pid = spawner_->spawn(request);
    if (!pid.ok()) {
      return absl::Status(pid.status().code(),
                          absl::StrCat("cannot start ", task.name, ": ", pid.status().message()));
    }
    return *pid;
  }

  // Runs on the spawner's thread: records the exit and, while the cluster
  // runs and after start-up, plans a restart for the supervisor.
  void on_exit(pid_t pid, int status) {
    absl::MutexLock lock(&mu_);
    exits_[pid] = status;
    if (!supervising_ || stop_state_ != StopState::kRunning) return;
    for (Task& task : tasks_) {
      if (task.pid != pid) continue;
      if (task.restarts >= options_.max_restarts) {
        task.gave_up = true;
        PSFLOW_LOG(Warning, task.name, " ", describe_wait_status(status), "; it was restarted ",
                   task.restarts,
                   " times already (max_restarts), so it "
                   "stays down");
        return;
      }
      // Up long enough (10 times its last backoff, at least a second): it
      // was running, not crash-looping.
      if (absl::Now() - task.started_at >= std::max(absl::Seconds(1), 10 * task.last_backoff)) {
        task.quick_exits = 0;
      }
      absl::Duration backoff = options_.restart_backoff;
      for (int i = 0; i < task.quick_exits && backoff < kMaxRestartBackoff; ++i) backoff *= 2;
      backoff = std::min(backoff, kMaxRestartBackoff);
      ++task.quick_exits;
      task.last_backoff = backoff;
      task.restart_at = absl::Now() + backoff;
      PSFLOW_LOG(Warning, task.name, " ", describe_wait_status(status), "; restarting it in ",
                 absl::FormatDuration(backoff), " (restart ", task.restarts + 1, " of ",
                 options_.max_restarts, ")");
      return;
    }
  }

  // The supervisor thread: spawns each task whose restart is due, until the
  // cluster stops.
  void supervise() {
    absl::MutexLock lock(&mu_);
    while (stop_state_ == StopState::kRunning) {
      absl::Time next = absl::InfiniteFuture();
      Task* due = nullptr;
      for (Task& task : tasks_) {
        if (!task.restart_at.has_value()) continue;
        if (*task.restart_at <= absl::Now()) {
          due = &task;
          break;
        }
        next = std::min(next, *task.restart_at);
      }
      if (due == nullptr) {
        // Woken by a new exit (restart_at set), stop(), or the next due time.
        const auto changed = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          if (stop_state_ != StopState::kRunning) return true;
          for (const Task& task : tasks_) {
            if (task.restart_at.has_value() && *task.restart_at <= absl::Now()) return true;
          }
          return false;
        };
        mu_.AwaitWithDeadline(absl::Condition(&changed),
                              std::min(next, absl::Now() + absl::Milliseconds(100)));
        continue;
      }
      due->restart_at.reset();
      const Task copy = *due;
      mu_.Unlock();
      absl::StatusOr<pid_t> pid = spawn(copy);
      mu_.Lock();
      ++due->restarts;
      if (pid.ok()) {
        due->pid = *pid;
        due->started_at = absl::Now();
        // It may have exited before its pid was recorded here: handle that
        // exit now (on_exit could not match it to this task).
        if (auto exit = exits_.find(*pid); exit != exits_.end()) {
          mu_.Unlock();
          on_exit(*pid, exit->second);
          mu_.Lock();
        }
      } else {
        due->gave_up = true;
        PSFLOW_LOG(Error, "cannot restart ", due->name, ": ", pid.status().message());
      }
    }
  }

  // Sends `signal` to every task still running and waits up to `timeout`
  // for all of them to exit. True when none is left.
  bool terminate_all(int signal, absl::Duration timeout) {
    std::vector<pid_t> pids = this->pids();
    for (pid_t pid : pids) {
      // Errors mean the task is already gone.
      (void)spawner_->signal(pid, signal);
      // A stopped task (fault tests SIGSTOP them) handles SIGTERM only once
      // it runs again.
      if (signal == SIGTERM) (void)spawner_->signal(pid, SIGCONT);
    }
    absl::MutexLock lock(&mu_);
    auto all_exited = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      for (const Task& task : tasks_) {
        if (task.pid > 0 && !exits_.contains(task.pid)) return false;
      }
      return true;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&all_exited), timeout);
  }

  // First: destroyed last, after the tasks that read its files are gone.
  const std::unique_ptr<LocalClusterCredentials> credentials_;
  const LocalClusterOptions options_;
  const std::string binary_;
  const ClusterSpec spec_;
  // Pids and restart state guarded by mu_ (see the class comment).
  std::vector<Task> tasks_;
  // Held for the cluster's lifetime (see PortReservation).
  std::vector<PortReservation> reservations_;

  mutable absl::Mutex mu_;
  // waitpid() status of every task that has exited, by pid.
  absl::flat_hash_map<pid_t, int> exits_ ABSL_GUARDED_BY(mu_);
  // Health result of task i during start-up.
  std::map<size_t, absl::Status> health_ ABSL_GUARDED_BY(mu_);
  StopState stop_state_ ABSL_GUARDED_BY(mu_) = StopState::kRunning;
  // Set once start-up succeeded: exits from then on may be restarted.
  bool supervising_ ABSL_GUARDED_BY(mu_) = false;
  std::thread supervisor_;

  // Last: destroyed first, so its thread ends before the state on_exit uses.
  std::unique_ptr<ProcessSpawner> spawner_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::start(LocalClusterOptions options) {
  const absl::Time deadline = absl::Now() + options.startup_timeout;
  PSFLOW_RETURN_IF_ERROR(validate(options));
  std::string binary = options.binary_path;
  if (binary.empty()) {
    PSFLOW_ASSIGN_OR_RETURN(binary, self_executable_path());
  }
  if (::access(binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(
        absl::StrCat("cannot start a local cluster: '", binary,
                     "' is not an executable psflow binary (LocalClusterOptions::binary_path)"));
  }
  if (!options.log_dir.empty()) {
    std::error_code error;
    std::filesystem::create_directories(options.log_dir, error);
    if (error) {
      return absl::PermissionDeniedError(absl::StrCat("cannot create the log directory '",
                                                      options.log_dir, "': ", error.message()));
    }
  }

  std::vector<Task> tasks;
  std::vector<PortReservation> reservations;
  std::map<std::string, std::vector<std::string>> jobs;
  auto add_job = [&](std::string_view job, int count, bool is_task) -> absl::Status {
    for (int i = 0; i < count; ++i) {
      PSFLOW_ASSIGN_OR_RETURN(PortReservation reservation, PortReservation::reserve(options.host));
      jobs[std::string(job)].push_back(reservation.address());
      if (is_task) {
        Task task;
        task.job = std::string(job);
        task.index = i;
        task.name = task_name(job, i);
        task.address = reservation.address();
        if (!options.log_dir.empty()) {
          task.log_path =
              (std::filesystem::path(options.log_dir) / absl::StrCat(task.job, "-", i, ".log"))
                  .string();
        }
        tasks.push_back(std::move(task));
      }
      reservations.push_back(std::move(reservation));
    }
    return absl::OkStatus();
  };
  PSFLOW_RETURN_IF_ERROR(add_job(kPsJob, options.num_ps, true));
  PSFLOW_RETURN_IF_ERROR(add_job(kWorkerJob, options.num_workers, true));
  // The chief's port is reserved too, so that the coordinator can serve on
  // it later without racing other processes for it.
  if (options.include_chief) PSFLOW_RETURN_IF_ERROR(add_job(kChiefJob, 1, false));

  std::unique_ptr<LocalClusterCredentials> credentials;
  if (!options.insecure) {
    std::vector<CertifiedTask> certified;
    for (const Task& task : tasks) certified.push_back({task.job, task.index, options.host});
    certified.push_back({std::string(kChiefJob), 0, options.host});
    PSFLOW_ASSIGN_OR_RETURN(credentials,
                            options.tls_dir.empty()
                                ? LocalClusterCredentials::make_fresh(certified)
                                : LocalClusterCredentials::use_directory(options.tls_dir));
    PSFLOW_LOG(Info, "local cluster: mTLS on (",
               options.tls_dir.empty() ? "fresh CA for this run" : "certificates in ",
               options.tls_dir, ")");
  } else {
    PSFLOW_LOG(Info, "local cluster: mTLS off (insecure: plaintext on loopback)");
  }
  auto cluster = std::make_unique<LocalClusterImpl>(options, std::move(binary), ClusterSpec(jobs),
                                                    std::move(tasks), std::move(reservations),
                                                    std::move(credentials));
  absl::Status status = cluster->spawn_all();
  if (status.ok()) status = cluster->wait_until_healthy(deadline);
  if (status.ok()) cluster->start_supervisor();
  if (!status.ok()) {
    cluster->stop(absl::Seconds(1));
    return absl::Status(status.code(),
                        absl::StrCat("local cluster did not start: ", status.message()));
  }
  return std::unique_ptr<LocalCluster>(std::move(cluster));
}

}  // namespace psflow

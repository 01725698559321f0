#include "rpc/task_status.h"

#include <unistd.h>

#include "absl/random/random.h"
#include "absl/time/clock.h"
#include "base/logging.h"
#include "base/strings.h"
#include "base/version.h"
#include "psflow/cluster_spec.h"

namespace psflow::internal {
namespace {

uint64_t draw_incarnation() {
  absl::BitGen gen;  // Seeded from the OS entropy source.
  uint64_t value = 0;
  while (value == 0) value = absl::Uniform<uint64_t>(gen);
  return value;
}

// Namespace-scope so both are fixed during static initialisation, i.e. at
// process start, not at the first GetStatus.
const uint64_t kIncarnation = draw_incarnation();
const absl::Time kProcessStart = absl::Now();

}  // namespace

uint64_t process_incarnation() { return kIncarnation; }
absl::Time process_start_time() { return kProcessStart; }

TaskStatus::TaskStatus(std::string job_name, int task_index)
    : job_name_(std::move(job_name)), task_index_(task_index) {}

void TaskStatus::fill(v1::GetStatusResponse& response) const {
  response.set_job_name(job_name_);
  response.set_task_index(task_index_);
  response.set_pid(static_cast<int64_t>(::getpid()));
  response.set_incarnation(kIncarnation);
  response.set_uptime_seconds(absl::ToDoubleSeconds(absl::Now() - kProcessStart));
  response.set_version(std::string(version()));
}

void TaskStatus::note_caller(grpc::CallbackServerContext* context, std::string_view call) const {
  std::string peer = context->peer();
  size_t logged = 0;
  {
    absl::MutexLock lock(&peers_mu_);
    if (peers_.size() > kMaxLoggedConnections || !peers_.insert(peer).second) return;
    logged = peers_.size();
  }
  const std::string name = task_name(job_name_, task_index_);
  if (logged > kMaxLoggedConnections) {
    PSFLOW_LOG(Info, name, ": ", kMaxLoggedConnections,
               " connections logged; further ones are not");
    return;
  }
  PSFLOW_LOG(Info, name, ": a client connected from ", peer, " (first call: ", av(call), ")");
}

grpc::ServerUnaryReactor* TaskStatus::answer(grpc::CallbackServerContext* context,
                                             v1::GetStatusResponse* response) const {
  note_caller(context, "GetStatus");
  fill(*response);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace psflow::internal

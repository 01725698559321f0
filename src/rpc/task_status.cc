#include "rpc/task_status.h"

#include <unistd.h>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/logging.h"
#include "base/shown_text.h"
#include "base/strings.h"
#include "base/version.h"
#include "psflow/cluster_spec.h"
#include "rpc/grpc_status.h"
#include "rpc/parsed_call.h"

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

// `text` with its control bytes (a line break, an escape sequence) written
// as \n, \t or \xNN: one log line stays one line.
std::string escape_controls(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f) {
      absl::StrAppend(&out, "\\x", absl::Hex(byte, absl::kZeroPad2));
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

uint64_t process_incarnation() { return kIncarnation; }
absl::Time process_start_time() { return kProcessStart; }

TaskStatus::TaskStatus(std::string job_name, int task_index, bool insecure_exposed)
    : job_name_(std::move(job_name)),
      task_index_(task_index),
      insecure_exposed_(insecure_exposed) {}

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
  if (insecure_exposed_) {
    PSFLOW_LOG(Warning, name, ": an unauthenticated client connected from ", peer,
               " over plaintext (--insecure; first call: ", av(call), ")");
    return;
  }
  PSFLOW_LOG(Info, name, ": a client connected from ", peer, " (first call: ", av(call), ")");
}

void TaskStatus::note_error(std::string_view call, const absl::Status& status) const {
  if (status.ok()) return;
  // The call's name and the message may carry a client's bytes: escaped
  // (no forged log lines) and cut short; the kinds counted are bounded (a
  // client inventing names cannot grow the table).
  constexpr size_t kMaxMessage = 400;
  constexpr size_t kMaxCallNameBytes = 200;
  std::string key = shown_text(call, kMaxCallNameBytes);
  int64_t seen = 0;
  {
    absl::MutexLock lock(&errors_mu_);
    if (errors_.size() >= kMaxErrorKinds &&
        !errors_.contains({key, static_cast<int>(status.code())})) {
      key = "other calls";
    }
    seen = ++errors_[{key, static_cast<int>(status.code())}];
  }
  if ((seen & (seen - 1)) != 0) return;  // not a power of two
  std::string message = escape_controls(status.message().substr(0, kMaxMessage));
  if (status.message().size() > kMaxMessage) message += "...";
  const std::string name = task_name(job_name_, task_index_);
  const std::string code = absl::StatusCodeToString(status.code());
  if (seen == 1) {
    PSFLOW_LOG(Warning, name, ": ", escape_controls(key), " failed: ", code, ": ", message);
    return;
  }
  PSFLOW_LOG(Warning, name, ": ", escape_controls(key), " has failed with ", code, " ", seen,
             " times (logged the 1st, 2nd, 4th, 8th, ... time); the latest: ", message);
}

grpc::ServerUnaryReactor* TaskStatus::answer(grpc::CallbackServerContext* context,
                                             v1::GetStatusResponse* response) const {
  note_caller(context, "GetStatus");
  fill(*response);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* TaskStatus::answer(grpc::CallbackServerContext* context,
                                             const grpc::ByteBuffer& request,
                                             grpc::ByteBuffer* response) const {
  grpc::ServerUnaryReactor* reactor = nullptr;
  auto* call = parse_call<v1::GetStatusRequest, v1::GetStatusResponse>(request, response, &reactor);
  if (call == nullptr) return reactor;
  note_caller(context, "GetStatus");
  fill(call->response());
  call->finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* TaskStatus::refuse(grpc::CallbackServerContext* context,
                                             std::string_view call,
                                             const absl::Status& status) const {
  note_error(call, status);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(to_grpc_status(status));
  return reactor;
}

}  // namespace psflow::internal

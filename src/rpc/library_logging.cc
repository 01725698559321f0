#include "rpc/library_logging.h"

#include <grpc/support/log.h>

#include <mutex>
#include <string>

#include "base/logging.h"
#include "google/protobuf/stubs/logging.h"

namespace psflow::internal {
namespace {

void protobuf_log(google::protobuf::LogLevel level, const char* filename, int line,
                  const std::string& message) {
  LogLevel ours = LogLevel::kInfo;
  if (level == google::protobuf::LOGLEVEL_WARNING) ours = LogLevel::kWarning;
  // Below FATAL an ERROR is about one message (a request), not the task.
  if (level == google::protobuf::LOGLEVEL_ERROR) ours = LogLevel::kWarning;
  if (level == google::protobuf::LOGLEVEL_FATAL) ours = LogLevel::kError;
  if (ours < min_log_level()) return;
  log_message(ours, filename, line, message);
}

void grpc_log(gpr_log_func_args* args) {
  LogLevel ours = LogLevel::kInfo;
  if (args->severity == GPR_LOG_SEVERITY_DEBUG) ours = LogLevel::kDebug;
  if (args->severity == GPR_LOG_SEVERITY_ERROR) ours = LogLevel::kError;
  if (ours < min_log_level()) return;
  log_message(ours, args->file != nullptr ? args->file : "grpc", args->line,
              args->message != nullptr ? args->message : "");
}

}  // namespace

void route_library_logs() {
  static std::once_flag once;
  std::call_once(once, [] {
    google::protobuf::SetLogHandler(&protobuf_log);
    gpr_set_log_function(&grpc_log);
  });
}

}  // namespace psflow::internal

#include "coordinator/grpc_worker_connection.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "executor/executor_connection.h"
#include "psflow/cluster_spec.h"
#include "psflow/remote_executor.h"
#include "psflow/v1/task.pb.h"
#include "rpc/channel.h"
#include "tensor/codec.h"
#include "worker/per_worker_objects.h"

namespace psflow::internal {
namespace {

// Thread-safety: thread-safe (the executor is). Each run's buffers belong
// to the executor until its callback has run, so the destructor cancels the
// calls in flight and waits for their callbacks, which use `this`.
class GrpcWorkerConnection final : public WorkerConnection {
 public:
  // Enough to hide the network round trip behind short closures.
  static constexpr int kMaxInFlight = 64;

  GrpcWorkerConnection(const std::string& target, int worker_index,
                       const ChannelOptions& channel_options)
      : task_name_(psflow::task_name(kWorkerJob, worker_index)),
        connection_(internal::connect_executor(target, task_name_, RemoteExecutorOptions(),
                                               channel_options)) {}

  ~GrpcWorkerConnection() override {
    // Before any member goes: the callbacks use them. The executor (and
    // with it the channel) is dropped only after every call was freed.
    internal::cancel_calls_and_wait(*connection_);
  }

  int max_in_flight() const override { return kMaxInFlight; }
  bool supports_result_refs() const override { return true; }

  absl::Status probe(absl::Time deadline) override {
    return internal::probe(*connection_, deadline);
  }
  std::string task_name() const override { return task_name_; }

  void run_async(RunRequest request, Done done) override {
    const uint64_t closure_id = request.closure_id;
    v1::RunFunctionRequest proto;
    proto.set_closure_id(closure_id);
    proto.set_session(request.session);
    proto.set_function_name(std::move(request.function_name));
    structure_to_proto(request.args, proto.mutable_args());
    proto.set_result_session(request.result_session);
    proto.set_worker_recoveries(static_cast<uint32_t>(request.worker_recoveries));
    proto.set_last_incarnation(request.last_incarnation);
    for (const RunRequest::InputRef& ref : request.input_refs) {
      v1::ResultRef* out = proto.add_input_refs();
      out->set_closure_id(ref.closure_id);
      for (const auto& element : ref.path) {
        if (const auto* index = std::get_if<int64_t>(&element)) {
          out->add_path()->set_index(*index);
        } else {
          out->add_path()->set_key(std::get<std::string>(element));
        }
      }
    }
    // At debug level only (a line per closure): lets a test, or a user
    // chasing a hang, see which closure went to which worker and when.
    PSFLOW_LOG(Debug, "sent closure ", closure_id, " (", proto.function_name(), ") to ",
               task_name_);
    internal::run_function_async(
        *connection_, std::move(proto),
        [this, closure_id, done = std::move(done)](const absl::Status& transport,
                                                   v1::RunFunctionResponse& response) mutable {
          std::move(done)(result_of(closure_id, transport, response));
        });
  }

  void cancel(uint64_t closure_id) override {
    internal::cancel_function_async(*connection_, closure_id);
  }

  absl::Status dispose_per_worker(const std::vector<std::string>& ids,
                                  absl::Time deadline) override {
    return internal::dispose_per_worker(*connection_, ids, deadline);
  }

 private:
  RunResult result_of(uint64_t closure_id, const absl::Status& transport,
                      v1::RunFunctionResponse& response) const {
    RunResult result;
    if (!transport.ok()) {
      result.transport = transport;
      result.output = transport;
      return result;
    }
    result.incarnation = response.incarnation();
    result.result_kept = response.result_kept();
    if (response.input_refs_missing()) {
      result.input_refs_missing = true;
      result.output = absl::UnavailableError("the worker no longer holds the referenced inputs");
    } else if (absl::Status function = internal::function_status(response); !function.ok()) {
      result.output = response.input_error() ? mark_per_worker_input_error(std::move(function))
                                             : std::move(function);
    } else {
      absl::StatusOr<Structure> output = structure_from_proto(response.mutable_output());
      if (output.ok()) {
        result.output = *std::move(output);
      } else {
        result.output = absl::InternalError(
            absl::StrCat(task_name_, " returned a malformed result for closure ", closure_id, ": ",
                         output.status().message()));
      }
    }
    return result;
  }

  const std::string task_name_;
  // Owns the channel and every call in flight (executor/executor_connection.h).
  const std::shared_ptr<internal::ExecutorConnection> connection_;
};

}  // namespace

std::unique_ptr<WorkerConnection> make_grpc_worker_connection(const std::string& target,
                                                              int worker_index,
                                                              absl::Duration timeout) {
  ChannelOptions options;
  // A second above the servers' floor, so that timer jitter never makes a
  // ping look too early to them (too many of those and they close the
  // connection, failing healthy calls).
  options.keepalive_time = std::max(timeout / 2, kMinPingInterval + absl::Seconds(1));
  options.keepalive_timeout = std::max(timeout - options.keepalive_time, absl::Seconds(1));
  return std::make_unique<GrpcWorkerConnection>(target, worker_index, options);
}

}  // namespace psflow::internal

// The requests a worker task decodes (src/worker/: executor_protocol.cc,
// executor_service.cc, value_graph.cc), sent as raw bytes to a real
// ExecutorServiceImpl over an in-process gRPC channel, so that every
// handler parses and validates them exactly as it does for a peer.
//
// An input is a session of up to 16 requests, each
//   [method byte][length, 2 bytes little-endian][request bytes].
// The method byte (mod 8) picks CreateValue, CreateCall, CreateStruct,
// CreateSelection, Compute, Dispose, RunFunction or GetExecutorStats. Ids
// are random per process, so a request that parses as its message type has
// every value id of the form "#k" replaced by the id the k-th successful
// Create* of this session returned; a request that does not parse is sent
// as it came. Every id the session created is disposed at its end, so
// inputs do not interfere. Registered functions: "fuzz/identity" (returns
// its argument) and "fuzz/fail" (returns an error).
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "fuzz_input.h"
#include "psflow/function_registry.h"
#include "psflow/v1/task.pb.h"
#include "rpc/task_status.h"
#include "worker/executor_service.h"

namespace psflow::fuzz {
namespace {

constexpr size_t kMaxRequests = 16;

// One in-process worker for the whole run.
// Thread-safety: used by libFuzzer's one thread.
class Worker {
 public:
  Worker() : status_("worker", 0) {
    absl::Status s = registry_.register_function(
        "fuzz/identity",
        [](WorkerContext&, const Structure& args) -> absl::StatusOr<Structure> { return args; });
    check(s.ok());
    s = registry_.register_function(
        "fuzz/fail", [](WorkerContext&, const Structure&) -> absl::StatusOr<Structure> {
          return absl::InvalidArgumentError("fuzz/fail fails");
        });
    check(s.ok());
    internal::ExecutorServiceOptions options;
    options.registry = &registry_;
    options.max_live_values = 1000;
    // Bounds the memory one input can pin, as a task's flags would.
    options.max_message_bytes = size_t{1} << 20;
    service_ = std::make_unique<internal::ExecutorServiceImpl>(&status_, options);
    grpc::ServerBuilder builder;
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    check(server_ != nullptr);
    channel_ = server_->InProcessChannel(grpc::ChannelArguments());
  }

  // The call's status; `response` holds the reply when OK.
  grpc::Status call(std::string_view method, const std::string& bytes, std::string* response) {
    grpc::GenericStub stub(channel_);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    grpc::Slice slice(bytes.data(), bytes.size());
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer reply;
    absl::Notification done;
    grpc::Status status;
    stub.UnaryCall(&context, std::string("/psflow.v1.ExecutorService/") + std::string(method),
                   grpc::StubOptions(), &request, &reply, [&](grpc::Status s) {
                     status = std::move(s);
                     done.Notify();
                   });
    done.WaitForNotification();
    if (status.ok() && response != nullptr) {
      std::vector<grpc::Slice> slices;
      if (reply.Dump(&slices).ok()) {
        for (const grpc::Slice& s : slices) {
          response->append(reinterpret_cast<const char*>(s.begin()), s.size());
        }
      }
    }
    return status;
  }

 private:
  internal::TaskStatus status_;
  FunctionRegistry registry_;
  std::unique_ptr<internal::ExecutorServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

// Replaces a "#k" id by the k-th id created in this session.
void resolve(const std::vector<std::string>& ids, std::string* id) {
  if (id->size() == 2 && (*id)[0] == '#' && (*id)[1] >= '0' && (*id)[1] <= '9') {
    const size_t k = static_cast<size_t>((*id)[1] - '0');
    if (k < ids.size()) *id = ids[k];
  }
}

// The bytes to send: `raw` with its ids resolved when it parses as
// `Message`, else `raw` unchanged.
template <typename Message, typename Fix>
std::string with_ids(std::string_view raw, Fix fix) {
  Message message;
  if (!message.ParseFromArray(raw.data(), static_cast<int>(raw.size()))) return std::string(raw);
  fix(message);
  return message.SerializeAsString();
}

}  // namespace
}  // namespace psflow::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  psflow::fuzz::silence_protobuf_logs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace psflow;
  using namespace psflow::fuzz;
  static Worker* worker = new Worker();  // Lives for the run.
  std::string_view input = as_bytes(data, size);
  std::vector<std::string> ids;
  for (size_t n = 0; n < kMaxRequests && input.size() >= 3; ++n) {
    const auto method = static_cast<uint8_t>(input[0]) % 8;
    const size_t length = static_cast<uint8_t>(input[1]) | (static_cast<uint8_t>(input[2]) << 8);
    input.remove_prefix(3);
    const std::string_view raw = input.substr(0, length);
    input.remove_prefix(raw.size());
    std::string bytes;
    std::string_view name;
    bool creates = true;
    switch (method) {
      case 0:
        name = "CreateValue";
        bytes = std::string(raw);
        break;
      case 1:
        name = "CreateCall";
        bytes = with_ids<v1::CreateCallRequest>(raw, [&](v1::CreateCallRequest& m) {
          if (m.has_function_ref()) resolve(ids, m.mutable_function_ref()->mutable_id());
          if (m.has_argument_ref()) resolve(ids, m.mutable_argument_ref()->mutable_id());
        });
        break;
      case 2:
        name = "CreateStruct";
        bytes = with_ids<v1::CreateStructRequest>(raw, [&](v1::CreateStructRequest& m) {
          for (auto& e : *m.mutable_elements()) resolve(ids, e.mutable_value_ref()->mutable_id());
        });
        break;
      case 3:
        name = "CreateSelection";
        bytes = with_ids<v1::CreateSelectionRequest>(raw, [&](v1::CreateSelectionRequest& m) {
          resolve(ids, m.mutable_source_ref()->mutable_id());
        });
        break;
      case 4:
        name = "Compute";
        creates = false;
        bytes = with_ids<v1::ComputeRequest>(
            raw, [&](v1::ComputeRequest& m) { resolve(ids, m.mutable_value_ref()->mutable_id()); });
        break;
      case 5:
        name = "Dispose";
        creates = false;
        bytes = with_ids<v1::DisposeRequest>(raw, [&](v1::DisposeRequest& m) {
          for (auto& r : *m.mutable_value_refs()) resolve(ids, r.mutable_id());
        });
        break;
      case 6:
        name = "RunFunction";
        creates = false;
        bytes = std::string(raw);
        break;
      default:
        name = "GetExecutorStats";
        creates = false;
        bytes = std::string(raw);
        break;
    }
    std::string response;
    const grpc::Status status = worker->call(name, bytes, creates ? &response : nullptr);
    if (creates && status.ok()) {
      // Every Create*Response holds the new id in field 1 (value_ref).
      v1::CreateValueResponse created;
      check(created.ParseFromString(response) && !created.value_ref().id().empty());
      ids.push_back(created.value_ref().id());
    }
  }
  if (!ids.empty()) {
    v1::DisposeRequest dispose;
    for (const std::string& id : ids) dispose.add_value_refs()->set_id(id);
    (void)worker->call("Dispose", dispose.SerializeAsString(), nullptr);
  }
  return 0;
}

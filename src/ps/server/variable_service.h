// The VariableService a ps task serves: GetStatus, Execute, ListVariables.
#ifndef PSFLOW_PS_SERVER_VARIABLE_SERVICE_H_
#define PSFLOW_PS_SERVER_VARIABLE_SERVICE_H_

#include <grpcpp/support/byte_buffer.h>

#include <cstddef>
#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "base/thread_pool.h"
#include "ps/server/execute.h"
#include "ps/server/shared_memory_sessions.h"
#include "ps/server/variable_store.h"
#include "psflow/v1/task.grpc.pb.h"
#include "rpc/task_status.h"
#include "tensor/codec.h"

namespace psflow::internal {

struct VariableServiceOptions {
  // Largest request accepted and response sent (ServerOptions).
  size_t max_message_bytes = size_t{1} << 30;
  // Threads for Execute calls too heavy to run on gRPC's threads; <= 0:
  // one per core.
  int num_threads = 0;
  // Sessions of the shared-memory data path (OpenSharedMemory). Off when
  // PSFLOW_SHARED_MEMORY is off in the ps's environment.
  SharedMemoryOptions shared_memory{.enabled = shared_memory_enabled()};
};

// An Execute call's shared memory, once its session is found: the region
// (kept mapped while the call runs) and the part of it for results.
struct ExecuteCallMemory {
  std::shared_ptr<SharedMemoryRegion> region;
  uint64_t result_offset = 0;
  uint64_t result_bytes = 0;
};

// Execute arrives as raw bytes (the method is marked raw on the generated
// service) and is decoded by ps/grpc_execute_codec.h, so tensor payloads are
// copied once on receipt and sent from the variables' own buffers; the
// bytes are the ExecuteRequest / ExecuteResponse protobuf wire format either
// way, so clients in any language see the .proto service.
//
// Light calls run on the gRPC thread that received them: reads of any size
// (their results are sent from the variables' buffers, no copy), scalar
// updates, gathers and sparse updates of a few thousand rows. Handing those
// to another thread would cost more than running them: on a 2-core host the
// hop measured 20-25 us per call (scalar read p50 140 -> 164 us) and 20-25%
// of embedding throughput. Requests up to kInlineDecodeBytes are decoded
// there too, so a dense push (ASSIGN adopts the decoded buffer) never
// hops: decoding is a copy at 15-30 GB/s, and the hop cost a 4 MiB push
// 20-100 us (0.67 -> 0.73 of raw loopback TCP throughput, measured paired).
// Heavy calls (larger requests, or ops estimated to touch more memory than
// kInlineWorkBytes: big gathers, dense updates, large optimizer applies) go
// to a fixed pool of one thread per core, which finishes the reactor, so
// that gRPC's threads stay free to move bytes for other calls.
//
// A client on the same host may open a shared-memory session
// (rpc/shared_memory_region.h): its Execute calls then carry large tensor
// contents in the session's region and name them by offset, and ask for
// large results there too; the message itself, and so the ops, their
// authorization and the exactly-once keys, still travel over gRPC. A call
// naming a session this ps does not hold for the caller (the ps
// restarted, the session idled out) is refused before it is decoded,
// FAILED_PRECONDITION with the trailer kUnknownSharedMemorySession, which
// tells the client to send it again without shared memory.
//
// Every handler first checks the caller's role (rpc/authorization.h);
// Execute checks each op's kind too, before any op runs.
//
// Thread-safety: handlers run concurrently; `status` is immutable and the
// store is thread-safe.
//
// Bases: every RPC of the service as a raw callback, parsed here (so that
// a body that does not parse is INVALID_ARGUMENT, see rpc/parsed_call.h),
// over the plain Service rather than CallbackService, whose typed Execute
// the raw one would hide (clang's -Woverloaded-virtual).
class VariableServiceImpl final
    : public v1::VariableService::WithRawCallbackMethod_Execute<
          v1::VariableService::WithRawCallbackMethod_GetStatus<
              v1::VariableService::WithRawCallbackMethod_ListVariables<
                  v1::VariableService::WithRawCallbackMethod_OpenSharedMemory<
                      v1::VariableService::WithRawCallbackMethod_CloseSharedMemory<
                          v1::VariableService::Service>>>>> {
 public:
  // Work up to which a call runs inline, in bytes of memory traffic
  // weighted by cost (optimizer math counts 8x): about 200 us of CPU.
  static constexpr size_t kInlineWorkBytes = size_t{2} << 20;
  // Requests up to this size are decoded on the receiving thread: at most
  // about 0.5 ms of copying.
  static constexpr size_t kInlineDecodeBytes = size_t{8} << 20;

  // `status` must outlive the service.
  VariableServiceImpl(const TaskStatus* status, std::shared_ptr<VariableStore> store,
                      VariableServiceOptions options = {});

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Execute(grpc::CallbackServerContext* context,
                                    const grpc::ByteBuffer* request,
                                    grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListVariables(grpc::CallbackServerContext* context,
                                          const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* OpenSharedMemory(grpc::CallbackServerContext* context,
                                             const grpc::ByteBuffer* request,
                                             grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* CloseSharedMemory(grpc::CallbackServerContext* context,
                                              const grpc::ByteBuffer* request,
                                              grpc::ByteBuffer* response) override;

  [[nodiscard]] const SharedMemorySessions& shared_memory_sessions() const {
    return shared_memory_;
  }

 private:
  // The shared memory `request` names, checked against `caller`'s
  // sessions: FAILED_PRECONDITION for a session this ps does not hold for
  // it, INVALID_ARGUMENT for a malformed or out-of-region reference.
  absl::Status find_call_memory(const PeerIdentity& caller, const grpc::ByteBuffer& request,
                                ExecuteCallMemory* memory);

  const TaskStatus* status_;
  std::shared_ptr<VariableStore> store_;
  const VariableServiceOptions options_;
  CodecLimits limits_;
  SharedMemorySessions shared_memory_;
  ThreadPool pool_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_PS_SERVER_VARIABLE_SERVICE_H_

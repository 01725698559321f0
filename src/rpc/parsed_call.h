// Raw callback methods served with their generated message types. gRPC's
// typed callback handlers answer a request body that does not parse with
// UNIMPLEMENTED and an empty message, which tells a client nothing (and
// reads like "no such method"); parsing here makes it INVALID_ARGUMENT
// naming the message type.
#ifndef PSFLOW_RPC_PARSED_CALL_H_
#define PSFLOW_RPC_PARSED_CALL_H_

#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/proto_buffer_writer.h>
#include <grpcpp/support/server_callback.h>

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/tsan_annotations.h"

namespace psflow::internal {

// One call: its parsed request and the response it fills, until finish().
// Thread-safety: finish() may be called from any thread, exactly once;
// request() and response() until then.
template <typename Request, typename Response>
class ParsedCall final : public grpc::ServerUnaryReactor {
 public:
  explicit ParsedCall(grpc::ByteBuffer* raw_response) : raw_response_(raw_response) {}

  [[nodiscard]] Request& request() { return request_; }
  [[nodiscard]] Response& response() { return response_; }

  // Sends the response (when `status` is OK) and ends the call.
  void finish(const grpc::Status& status) {
    if (status.ok()) {
      bool own_buffer = false;
      // Fails past 2 GiB (protobuf's limit), which only a function's output
      // could reach.
      grpc::Status serialized = grpc::GenericSerialize<grpc::ProtoBufferWriter, Response>(
          response_, raw_response_, &own_buffer);
      if (!serialized.ok()) {
        tsan_release(this);
        Finish(grpc::Status(
            grpc::StatusCode::RESOURCE_EXHAUSTED,
            absl::StrCat("the ", response_.GetTypeName(),
                         " could not be encoded (over 2 GiB?): ", serialized.error_message())));
        return;
      }
    }
    // gRPC runs OnDone after Finish completed, possibly on another thread,
    // ordered by its own synchronization (invisible to TSan).
    tsan_release(this);
    Finish(status);
  }

  void OnDone() override {
    tsan_acquire(this);
    delete this;
  }

 private:
  grpc::ByteBuffer* const raw_response_;
  Request request_;
  Response response_;
};

// Parses `raw_request` into a new ParsedCall and returns it, or null after
// finishing the call with INVALID_ARGUMENT when the bytes are not a valid
// Request. Either way the caller returns the reactor it can get from
// the result (or the refused one, via `*reactor`).
template <typename Request, typename Response>
[[nodiscard]] ParsedCall<Request, Response>* parse_call(const grpc::ByteBuffer& raw_request,
                                                        grpc::ByteBuffer* raw_response,
                                                        grpc::ServerUnaryReactor** reactor) {
  auto* call = new ParsedCall<Request, Response>(raw_response);
  *reactor = call;
  grpc::ByteBuffer copy(raw_request);  // Shares the slices; the reader needs a mutable buffer.
  grpc::ProtoBufferReader reader(&copy);
  if (!reader.status().ok() || !call->request().ParseFromZeroCopyStream(&reader)) {
    call->finish(grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("malformed ", call->request().GetTypeName(),
                     ": the bytes are not a valid protobuf encoding of it (truncated, corrupt, or "
                     "a string field that is not UTF-8)")));
    return nullptr;
  }
  return call;
}

}  // namespace psflow::internal

#endif  // PSFLOW_RPC_PARSED_CALL_H_

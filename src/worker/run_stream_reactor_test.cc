// ExecutorService.RunFunctions (the coordinator's closure stream) against a
// hostile or broken client: every run is checked as a unary RunFunction
// is, a bad message ends only its own stream, and the worker keeps serving.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <memory>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "executor/run_stream.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/function_registry.h"
#include "psflow/v1/task.grpc.pb.h"
#include "rpc/channel.h"
#include "rpc/task_status.h"
#include "tensor/codec.h"
#include "worker/executor_service.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

class RunStreamReactorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(registry_
                    .register_function("test/echo",
                                       [](WorkerContext&, const Structure& args)
                                           -> absl::StatusOr<Structure> { return args; })
                    .ok());
    ASSERT_TRUE(registry_
                    .register_function(
                        "test/wait",
                        [this](WorkerContext&, const Structure& args) -> absl::StatusOr<Structure> {
                          release_.WaitForNotification();
                          return args;
                        })
                    .ok());
    ExecutorServiceOptions options;
    options.registry = &registry_;
    service_ = std::make_unique<ExecutorServiceImpl>(&status_, options);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    target_ = absl::StrCat("127.0.0.1:", port);
    channel_ = create_channel(target_);
    stub_ = v1::ExecutorService::NewStub(channel_);
  }

  void TearDown() override {
    if (!release_.HasBeenNotified()) release_.Notify();
    if (server_ != nullptr) server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    service_.reset();
  }

  static v1::RunFunctionRequest echo(uint64_t closure_id, int64_t value) {
    v1::RunFunctionRequest run;
    run.set_closure_id(closure_id);
    run.set_function_name("test/echo");
    structure_to_proto(Structure::tuple({Structure(value)}), run.mutable_args());
    return run;
  }

  // Sends `request` on a new stream, closes the writing side and reads
  // every answer until the stream ends; returns its status.
  grpc::Status exchange(const v1::RunFunctionsRequest& request,
                        std::vector<v1::RunFunctionResult>* results) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    auto stream = stub_->RunFunctions(&context);
    stream->Write(request);
    stream->WritesDone();
    v1::RunFunctionsResponse response;
    // Bounded: the worker answers each run once, then ends the stream.
    for (int i = 0; i < 10000 && stream->Read(&response); ++i) {
      for (const v1::RunFunctionResult& result : response.results()) results->push_back(result);
    }
    return stream->Finish();
  }

  // The worker still runs closures (on a fresh stream).
  void expect_serving() {
    v1::RunFunctionsRequest request;
    *request.add_runs() = echo(77, 7);
    std::vector<v1::RunFunctionResult> results;
    ASSERT_TRUE(exchange(request, &results).ok());
    ASSERT_EQ(results.size(), 1u);
    EXPECT_EQ(results[0].closure_id(), 77u);
    EXPECT_EQ(results[0].response().code(), 0);
  }

  // Releases the runs of test/wait.
  absl::Notification release_;
  FunctionRegistry registry_;
  TaskStatus status_{"worker", 0};
  std::unique_ptr<ExecutorServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string target_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ExecutorService::Stub> stub_;
};

TEST_F(RunStreamReactorTest, AnswersEveryRunOfABatchByClosureId) {
  v1::RunFunctionsRequest request;
  for (uint64_t id = 1; id <= 5; ++id)
    *request.add_runs() = echo(id, static_cast<int64_t>(id) * 10);
  std::vector<v1::RunFunctionResult> results;
  ASSERT_TRUE(exchange(request, &results).ok());
  ASSERT_EQ(results.size(), 5u);
  std::set<uint64_t> seen;
  for (v1::RunFunctionResult& result : results) {
    EXPECT_EQ(result.status_code(), 0);
    ASSERT_EQ(result.response().code(), 0) << result.response().message();
    absl::StatusOr<Structure> output =
        structure_from_proto(result.mutable_response()->mutable_output());
    ASSERT_TRUE(output.ok()) << output.status();
    EXPECT_EQ(*output,
              Structure::tuple({Structure(static_cast<int64_t>(result.closure_id()) * 10)}));
    seen.insert(result.closure_id());
  }
  EXPECT_EQ(seen.size(), 5u);
}

TEST_F(RunStreamReactorTest, UnknownFunctionAndMalformedArgsFailOnlyTheirRun) {
  v1::RunFunctionsRequest request;
  *request.add_runs() = echo(1, 1);
  v1::RunFunctionRequest* unknown = request.add_runs();
  unknown->set_closure_id(2);
  unknown->set_function_name("test/no_such_function");
  v1::RunFunctionRequest* malformed = request.add_runs();
  *malformed = echo(3, 3);
  // A tensor whose payload does not match its shape.
  v1::StructureProto* leaf = malformed->mutable_args();
  leaf->Clear();
  leaf->mutable_tensor()->set_dtype(v1::DT_FLOAT);
  leaf->mutable_tensor()->add_shape(1000);
  leaf->mutable_tensor()->set_content("abc");
  v1::RunFunctionRequest* unnamed = request.add_runs();
  unnamed->set_closure_id(4);
  std::vector<v1::RunFunctionResult> results;
  ASSERT_TRUE(exchange(request, &results).ok());
  ASSERT_EQ(results.size(), 4u);
  for (const v1::RunFunctionResult& result : results) {
    switch (result.closure_id()) {
      case 1:
        EXPECT_EQ(result.status_code(), 0);
        EXPECT_EQ(result.response().code(), 0);
        break;
      case 2:
        EXPECT_EQ(result.status_code(), 0);
        EXPECT_EQ(result.response().code(), static_cast<int>(absl::StatusCode::kNotFound));
        EXPECT_THAT(result.response().message(), HasSubstr("test/no_such_function"));
        break;
      case 3:
        EXPECT_EQ(result.status_code(), grpc::StatusCode::INVALID_ARGUMENT);
        EXPECT_THAT(result.status_message(), HasSubstr("malformed args"));
        break;
      case 4:
        EXPECT_EQ(result.status_code(), grpc::StatusCode::INVALID_ARGUMENT);
        EXPECT_THAT(result.status_message(), HasSubstr("function_name"));
        break;
      default: ADD_FAILURE() << "an answer for closure " << result.closure_id();
    }
  }
  expect_serving();
}

TEST_F(RunStreamReactorTest, OversizedBatchEndsTheStreamAndTheWorkerServesOn) {
  v1::RunFunctionsRequest request;
  for (uint64_t id = 1; id <= 1025; ++id) *request.add_runs() = echo(id, 0);
  std::vector<v1::RunFunctionResult> results;
  const grpc::Status status = exchange(request, &results);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("1025 runs"));
  EXPECT_TRUE(results.empty());
  expect_serving();
}

TEST_F(RunStreamReactorTest, ClosureIdInFlightTwiceEndsTheStream) {
  v1::RunFunctionsRequest request;
  // The first run of closure 9 waits, so it is surely in flight.
  *request.add_runs() = echo(9, 1);
  request.mutable_runs(0)->set_function_name("test/wait");
  *request.add_runs() = echo(9, 2);
  std::vector<v1::RunFunctionResult> results;
  const grpc::Status status = exchange(request, &results);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("closure 9"));
  release_.Notify();
  expect_serving();
}

TEST_F(RunStreamReactorTest, GarbageMessageEndsTheStreamAndTheWorkerServesOn) {
  grpc::GenericStub generic(channel_);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  grpc::CompletionQueue cq;
  // Not a RunFunctionsRequest: field 1 (runs) claims 127 bytes, 3 follow.
  const std::string garbage =
      "\x0a\x7f"
      "abc";
  grpc::Slice slice(garbage);
  grpc::ByteBuffer buffer(&slice, 1);
  std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call =
      generic.PrepareCall(&context, "/psflow.v1.ExecutorService/RunFunctions", &cq);
  void* tag = nullptr;
  bool ok = false;
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(cq.Next(&tag, &ok));
  call->Write(buffer, reinterpret_cast<void*>(2));
  ASSERT_TRUE(cq.Next(&tag, &ok));
  call->WritesDone(reinterpret_cast<void*>(3));
  ASSERT_TRUE(cq.Next(&tag, &ok));
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(4));
  // Bounded: at most the four operations above complete.
  for (int i = 0; i < 4 && tag != reinterpret_cast<void*>(4); ++i) ASSERT_TRUE(cq.Next(&tag, &ok));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("malformed psflow.v1.RunFunctionsRequest"));
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  expect_serving();
}

// The coordinator's side (executor/run_stream.h) against the same worker.
TEST_F(RunStreamReactorTest, ClientStreamAnswersEveryRunWithItsOwnOutput) {
  RunStream stream(stub_.get(), "/job:worker/replica:0/task:0", target_);
  constexpr int kRuns = 300;
  absl::Mutex mu;
  int answered = 0;
  int wrong = 0;
  for (int i = 1; i <= kRuns; ++i) {
    stream.run_async(echo(static_cast<uint64_t>(i), i), [&, i](const absl::Status& transport,
                                                               v1::RunFunctionResponse& response) {
      absl::StatusOr<Structure> output = structure_from_proto(response.mutable_output());
      const bool right = transport.ok() && response.code() == 0 && output.ok() &&
                         *output == Structure::tuple({Structure(static_cast<int64_t>(i))});
      absl::MutexLock lock(&mu);
      ++answered;
      if (!right) ++wrong;
    });
  }
  absl::MutexLock lock(&mu);
  ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(
                                      +[](int* n) { return *n == kRuns; }, &answered),
                                  absl::Seconds(60)));
  EXPECT_EQ(wrong, 0);
}

TEST_F(RunStreamReactorTest, ClientShutdownEndsRunsInFlightAndRefusesLaterOnes) {
  RunStream stream(stub_.get(), "/job:worker/replica:0/task:0", target_);
  absl::Notification first_done;
  absl::Status first;
  v1::RunFunctionRequest waiting = echo(1, 1);
  waiting.set_function_name("test/wait");
  stream.run_async(std::move(waiting),
                   [&](const absl::Status& transport, v1::RunFunctionResponse&) {
                     first = transport;
                     first_done.Notify();
                   });
  EXPECT_TRUE(stream.is_running(1));
  stream.shutdown();
  ASSERT_TRUE(first_done.HasBeenNotified());
  EXPECT_FALSE(first.ok());
  EXPECT_THAT(first.message(), HasSubstr("/job:worker/replica:0/task:0"));
  absl::Status later;
  stream.run_async(echo(2, 2), [&](const absl::Status& transport, v1::RunFunctionResponse&) {
    later = transport;
  });
  EXPECT_TRUE(absl::IsCancelled(later)) << later;
  EXPECT_FALSE(stream.is_running(1));
}

}  // namespace
}  // namespace psflow::internal

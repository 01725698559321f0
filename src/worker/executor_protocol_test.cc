// The executor protocol against an in-process ExecutorService whose
// functions the test controls (a function that blocks until released), so
// that waiting, bounds and shutdown are checked without timing.
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "base/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/function_registry.h"
#include "psflow/remote_executor.h"
#include "psflow/v1/task.grpc.pb.h"
#include "rpc/channel.h"
#include "rpc/grpc_status.h"
#include "rpc/task_status.h"
#include "worker/executor_service.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

class ExecutorProtocolTest : public ::testing::Test {
 protected:
  void start(size_t max_live_values = 1000) {
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
    options.max_live_values = max_live_values;
    options.before_create_for_testing = before_create_;
    service_ = std::make_unique<ExecutorServiceImpl>(&status_, options);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port, 0);
    target_ = absl::StrCat("127.0.0.1:", port);
  }

  void TearDown() override {
    if (!release_.HasBeenNotified()) release_.Notify();
    if (server_ != nullptr) server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    service_.reset();
  }

  // Polls (bounded) until the worker has `n` computes waiting.
  bool wait_for_waiting_computes(RemoteExecutor& ex, int64_t n) {
    for (int i = 0; i < 20000; ++i) {
      absl::StatusOr<RemoteExecutorStats> stats = ex.stats();
      if (stats.ok() && stats->waiting_computes == n) return true;
      std::this_thread::yield();
    }
    return false;
  }

  absl::StatusOr<v1::ComputeResponse> raw_compute(const std::string& id, absl::Duration timeout) {
    auto stub = v1::ExecutorService::NewStub(create_channel(target_));
    grpc::ClientContext context;
    configure_context(context, absl::Now() + timeout);
    v1::ComputeRequest request;
    request.mutable_value_ref()->set_id(id);
    v1::ComputeResponse response;
    grpc::Status status = stub->Compute(&context, request, &response);
    if (!status.ok()) return from_grpc_status(status);
    return response;
  }

  v1::GetExecutorStatsResponse raw_stats() {
    auto stub = v1::ExecutorService::NewStub(create_channel(target_));
    grpc::ClientContext context;
    configure_context(context, absl::Now() + absl::Seconds(30));
    v1::GetExecutorStatsResponse response;
    EXPECT_TRUE(stub->GetExecutorStats(&context, v1::GetExecutorStatsRequest(), &response).ok());
    return response;
  }

  FunctionRegistry registry_;
  std::function<void(grpc::CallbackServerContext&)> before_create_;
  absl::Notification release_;
  TaskStatus status_{"worker", 0};
  std::unique_ptr<ExecutorServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string target_;
};

TEST_F(ExecutorProtocolTest, ComputeWaitsWithoutHoldingTheWorker) {
  start();
  auto ex = ok_value(RemoteExecutor::create(target_));
  RemoteExecutorValue wait = ok_value(ex->create_function("test/wait"));
  RemoteExecutorValue blocked = ok_value(ex->create_call(wait, ok_value(ex->create_value(7))));
  // More waiting computes than gRPC has callback threads on 2 cores.
  constexpr int kWaiters = 12;
  std::vector<std::optional<absl::StatusOr<Structure>>> results(kWaiters);
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] { results[i] = blocked.compute(); });
  }
  ASSERT_TRUE(wait_for_waiting_computes(*ex, kWaiters));
  // The function thread is busy and the computes wait, yet the worker
  // serves: creates, computes of known values, stats.
  RemoteExecutorValue five = ok_value(ex->create_value(5));
  EXPECT_EQ(ok_value(five.compute()), Structure(5));
  RemoteExecutorValue later = ok_value(ex->create_call(wait, five));  // Queued behind.
  RemoteExecutorStats stats = ok_value(ex->stats());
  EXPECT_EQ(stats.pending_values, 2);
  // A compute past its deadline gives up; the value is still computed.
  absl::StatusOr<v1::ComputeResponse> timed_out = raw_compute(blocked.id(), absl::Milliseconds(50));
  EXPECT_EQ(timed_out.status().code(), absl::StatusCode::kDeadlineExceeded) << timed_out.status();
  release_.Notify();
  for (std::thread& t : waiters) t.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(ok_value(*r), Structure(7));
  }
  EXPECT_EQ(ok_value(later.compute()), Structure(5));
  EXPECT_EQ(ok_value(ex->stats()).pending_values, 0);
}

TEST_F(ExecutorProtocolTest, LiveValuesAreBoundedAndFreedByDisposal) {
  start(/*max_live_values=*/4);
  RemoteExecutorOptions options;
  options.dispose_batch_size = 2;
  auto ex = ok_value(RemoteExecutor::create(target_, options));
  std::vector<RemoteExecutorValue> values;
  for (int i = 0; i < 4; ++i) values.push_back(ok_value(ex->create_value(i)));
  absl::StatusOr<RemoteExecutorValue> over = ex->create_value(4);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted) << over.status();
  EXPECT_THAT(std::string(over.status().message()), HasSubstr("max_live_values = 4"));
  EXPECT_THAT(std::string(over.status().message()), HasSubstr("/job:worker/replica:0/task:0"));
  EXPECT_EQ(ok_value(ex->stats()).live_values, 4);
  values.pop_back();  // One queued: nothing sent yet.
  EXPECT_EQ(ok_value(ex->stats()).live_values, 4);
  values.pop_back();  // A batch of 2.
  EXPECT_EQ(ok_value(ex->stats()).live_values, 2);
  EXPECT_EQ(ok_value(ok_value(ex->create_value(9)).compute()), Structure(9));
  EXPECT_TRUE(ex->close().ok());
  EXPECT_EQ(ok_value(ex->stats()).live_values, 0);
  EXPECT_TRUE(ex->close().ok());
  EXPECT_EQ(values[0].compute().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ex->create_value(1).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(ExecutorProtocolTest, ShutdownFinishesWaitingComputes) {
  start();
  auto ex = ok_value(RemoteExecutor::create(target_));
  RemoteExecutorValue blocked =
      ok_value(ex->create_call(ok_value(ex->create_function("test/wait"))));
  std::optional<absl::StatusOr<Structure>> result;
  std::thread waiter([&] { result = blocked.compute(); });
  // Once the worker has the compute, its reactor is the only thing that
  // could keep the server's shutdown from completing.
  ASSERT_TRUE(wait_for_waiting_computes(*ex, 1));
  server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Milliseconds(200)));
  waiter.join();
  ASSERT_TRUE(result.has_value());
  EXPECT_FALSE(result->ok());
  release_.Notify();
}

// A client that saw CANCELLED holds no id: the worker must not keep a value
// it created for that call (nobody could ever dispose of it).
TEST_F(ExecutorProtocolTest, CancelledCreateValueLeavesNoValue) {
  absl::Notification entered;
  absl::Notification client_done;
  before_create_ = [&](grpc::CallbackServerContext& context) {
    entered.Notify();
    client_done.WaitForNotification();
    // Until the cancellation has reached the worker (bounded).
    for (int i = 0; i < 1000000 && !context.IsCancelled(); ++i) std::this_thread::yield();
  };
  start();
  auto stub = v1::ExecutorService::NewStub(create_channel(target_));
  grpc::ClientContext context;
  configure_context(context, absl::Now() + absl::Seconds(30));
  v1::CreateValueRequest request;
  structure_to_proto(Structure(5), request.mutable_structure());
  v1::CreateValueResponse response;
  grpc::Status status;
  std::thread caller([&] {
    status = stub->CreateValue(&context, request, &response);
    client_done.Notify();
  });
  entered.WaitForNotification();
  context.TryCancel();
  caller.join();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED) << status.error_message();
  // The worker creates the value and then disposes of it (in the handler or
  // in OnCancel, whichever learns of the cancellation), so the stats may be
  // read between the two: wait (bounded) for the state the contract promises.
  v1::GetExecutorStatsResponse stats = raw_stats();
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while ((stats.values_created() == 0 || stats.live_values() != 0) && absl::Now() < deadline) {
    std::this_thread::yield();
    stats = raw_stats();
  }
  EXPECT_EQ(stats.values_created(), 1);
  EXPECT_EQ(stats.live_values(), 0);
}

}  // namespace
}  // namespace psflow::internal

// Hostile clients against real `psflow server` processes (one ps, one
// worker), with hand-written raw gRPC calls: bodies that do not parse,
// megabyte and non-UTF-8 names, deleting what is not there, and concurrent
// oversized messages, whose memory the task's buffer bound caps.
#include <grpcpp/generic/generic_stub.h>
#include <signal.h>
#include <sys/resource.h>

#include <cstdint>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/stubs/logging.h"
#include "gtest/gtest.h"
#include "launcher/port_reservation.h"
#include "psflow/remote_executor.h"
#include "psflow/v1/task.grpc.pb.h"
#include "psflow/v1/variable.pb.h"
#include "rpc/channel.h"
#include "rpc/grpc_status.h"
#include "tensor/codec.h"
#include "test_process.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::test_environment;
using ::psflow::internal::testing::TestProcess;
using ::testing::HasSubstr;

absl::Time deadline() { return absl::Now() + absl::Seconds(60); }

// One `psflow server` task of a one-ps, one-worker cluster.
struct Task {
  std::unique_ptr<TestProcess> process;
  std::string address;
};

Task start_task(const std::string& job, std::vector<std::string> flags = {}) {
  static std::vector<PortReservation>* reservations = new std::vector<PortReservation>();
  if (reservations->empty()) {
    for (int i = 0; i < 2; ++i) {
      absl::StatusOr<PortReservation> r = PortReservation::reserve("127.0.0.1");
      EXPECT_TRUE(r.ok()) << r.status();
      if (r.ok()) reservations->push_back(*std::move(r));
    }
  }
  if (reservations->size() < 2) return {};
  const std::string ps = (*reservations)[0].address();
  const std::string worker = (*reservations)[1].address();
  std::vector<std::string> argv = {
      PSFLOW_BINARY_PATH,
      "server",
      "--reuse-port",
      "--job",
      job,
      "--task",
      "0",
      "--cluster-json",
      absl::StrCat(R"({"ps": [")", ps, R"("], "worker": [")", worker, R"("]})")};
  argv.insert(argv.end(), flags.begin(), flags.end());
  Task task{std::make_unique<TestProcess>(argv, test_environment()), job == "ps" ? ps : worker};
  EXPECT_TRUE(
      wait_for_healthy(task.address, absl::StrCat("/job:", job, "/replica:0/task:0"), deadline())
          .ok());
  return task;
}

// Sends `bytes` as the request of `method` ("/psflow.v1.ExecutorService/
// GetStatus"), as a client in any language (or an attacker) could.
absl::Status call_with_bytes(const std::string& target, const std::string& method,
                             const std::string& bytes, std::string* response_bytes = nullptr) {
  grpc::GenericStub stub(create_channel(target));
  grpc::ClientContext context;
  configure_context(context, deadline());
  grpc::Slice slice(bytes.data(), bytes.size());
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  absl::Notification done;
  grpc::Status status;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
    status = std::move(s);
    done.Notify();
  });
  done.WaitForNotification();
  if (response_bytes != nullptr && status.ok()) {
    std::vector<grpc::Slice> slices;
    (void)response.Dump(&slices);
    response_bytes->clear();
    for (const grpc::Slice& s : slices) {
      response_bytes->append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  return from_grpc_status(status);
}

// The most resident memory the process has had, in bytes (VmHWM).
int64_t peak_rss_bytes(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (!absl::StartsWith(line, "VmHWM:")) continue;
    std::vector<std::string> parts = absl::StrSplit(line, ' ', absl::SkipEmpty());
    int64_t kib = 0;
    if (parts.size() >= 2 && absl::SimpleAtoi(parts[1], &kib)) return kib << 10;
  }
  return -1;
}

std::string message_of(const absl::Status& s) { return std::string(s.message()); }

class HostileInputTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ps_ = new Task(start_task("ps"));
    worker_ = new Task(start_task("worker"));
  }
  static void TearDownTestSuite() {
    delete ps_;
    delete worker_;
  }

  static Task* ps_;
  static Task* worker_;
};

Task* HostileInputTest::ps_ = nullptr;
Task* HostileInputTest::worker_ = nullptr;

// gRPC's typed handlers would answer UNIMPLEMENTED with an empty message.
TEST_F(HostileInputTest, BodiesThatDoNotParseAreInvalidArgumentNamingTheType) {
  const std::string garbage = "\xff\xff\xff\xff\x0f";
  for (const auto& [target, method, type] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {worker_->address, "/psflow.v1.ExecutorService/GetStatus", "GetStatusRequest"},
           {worker_->address, "/psflow.v1.ExecutorService/RunFunction", "RunFunctionRequest"},
           {worker_->address, "/psflow.v1.ExecutorService/CancelFunction", "CancelFunctionRequest"},
           {worker_->address, "/psflow.v1.ExecutorService/GetExecutorStats",
            "GetExecutorStatsRequest"},
           {worker_->address, "/psflow.v1.ExecutorService/DisposePerWorker",
            "DisposePerWorkerRequest"},
           {ps_->address, "/psflow.v1.VariableService/GetStatus", "GetStatusRequest"},
           {ps_->address, "/psflow.v1.VariableService/ListVariables", "ListVariablesRequest"}}) {
    const absl::Status s = call_with_bytes(target, method, garbage);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << method << ": " << s;
    EXPECT_THAT(message_of(s), HasSubstr(absl::StrCat("malformed psflow.v1.", type))) << method;
  }
  // Valid bodies are still served.
  EXPECT_TRUE(get_status(worker_->address, "worker", 0, deadline()).ok());
  EXPECT_TRUE(get_status(ps_->address, "ps", 0, deadline()).ok());
}

// An error that echoes a megabyte name used to exceed gRPC's metadata
// limit ("initial metadata size exceeds limit"): now the normal code, with
// a bounded prefix of the name.
TEST_F(HostileInputTest, MegabyteNamesGiveTheNormalErrorWithABoundedPrefix) {
  const std::string name(1 << 20, 'n');
  v1::CreateValueRequest create;
  create.set_function_name(name);
  const absl::Status unknown_function = call_with_bytes(
      worker_->address, "/psflow.v1.ExecutorService/CreateValue", create.SerializeAsString());
  EXPECT_EQ(unknown_function.code(), absl::StatusCode::kNotFound) << unknown_function;
  EXPECT_THAT(message_of(unknown_function), HasSubstr("... (1048576 bytes)"));
  EXPECT_LT(unknown_function.message().size(), 2200u);

  // An unknown function fails like one that ran and failed: the code and
  // message travel in the response, and the message is bounded too.
  v1::RunFunctionRequest run;
  run.set_function_name(name);
  run.set_closure_id(1);
  std::string run_bytes;
  const absl::Status ran =
      call_with_bytes(worker_->address, "/psflow.v1.ExecutorService/RunFunction",
                      run.SerializeAsString(), &run_bytes);
  ASSERT_TRUE(ran.ok()) << ran;
  v1::RunFunctionResponse run_response;
  ASSERT_TRUE(run_response.ParseFromString(run_bytes));
  EXPECT_EQ(run_response.code(), static_cast<int32_t>(absl::StatusCode::kNotFound));
  EXPECT_THAT(run_response.message(), HasSubstr("... (1048576 bytes)"));
  EXPECT_LT(run_response.message().size(), 2200u);

  v1::ExecuteRequest read;
  v1::VariableOp* op = read.add_ops();
  op->set_kind(v1::VariableOp::READ);
  op->set_variable(name);
  const absl::Status unknown_variable =
      call_with_bytes(ps_->address, "/psflow.v1.VariableService/Execute", read.SerializeAsString());
  EXPECT_EQ(unknown_variable.code(), absl::StatusCode::kNotFound) << unknown_variable.code();
  EXPECT_THAT(message_of(unknown_variable), HasSubstr("... (1048576 bytes)"));
  EXPECT_LT(unknown_variable.message().size(), 2200u);
}

// TF's DestroyResourceOp: NOT_FOUND for what is not there (it was OK).
TEST_F(HostileInputTest, DeletingAnUnknownVariableIsNotFound) {
  v1::ExecuteRequest request;
  v1::VariableOp* op = request.add_ops();
  op->set_kind(v1::VariableOp::DELETE);
  op->set_variable("never_created");
  const absl::Status s = call_with_bytes(ps_->address, "/psflow.v1.VariableService/Execute",
                                         request.SerializeAsString());
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(message_of(s), HasSubstr("never_created"));
}

// Many requests with long non-UTF-8 names: every log line stays short and
// valid UTF-8, and the lines of one place are rate-limited.
TEST(HostileInputLogTest, NonUtf8NamesWriteBoundedEscapedLogLines) {
  Task worker = start_task("worker");
  ASSERT_NE(worker.process, nullptr);
  // Read as it comes, so that a full pipe never blocks the worker.
  std::string log;
  std::thread reader([&] { log = worker.process->read_stderr(deadline()); });
  std::string name(16 << 10, '\xff');
  constexpr int kRequests = 1000;
  // This test's own serializing of such strings is deliberate.
  google::protobuf::LogSilencer silence_the_client;
  const absl::Time start = absl::Now();
  for (int i = 0; i < kRequests; ++i) {
    name[0] = static_cast<char>('a' + i % 26);  // A different name each time.
    v1::CreateValueRequest request;
    request.set_function_name(name);
    // Bytes of a string field set directly: protobuf's serializer does not
    // check UTF-8, so the worker sees what an attacker would send.
    const absl::Status s = call_with_bytes(worker.address, "/psflow.v1.ExecutorService/CreateValue",
                                           request.SerializeAsString());
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  v1::RunFunctionRequest run;
  for (int i = 0; i < 200; ++i) {
    run.set_function_name(absl::StrCat("no/such_function_", i, std::string(4000, 'x')));
    (void)call_with_bytes(worker.address, "/psflow.v1.ExecutorService/RunFunction",
                          run.SerializeAsString());
  }
  EXPECT_TRUE(worker.process->signal(SIGTERM));
  reader.join();
  EXPECT_EQ(worker.process->wait_exit_code(deadline()), 143);
  size_t utf8_lines = 0;
  size_t other_lines = 0;
  for (absl::string_view line : absl::StrSplit(log, '\n', absl::SkipEmpty())) {
    ++(absl::StrContains(line, "invalid UTF-8") ? utf8_lines : other_lines);
    EXPECT_LT(line.size(), size_t{17} << 10);
    EXPECT_EQ(line.find('\xff'), absl::string_view::npos);
  }
  // Protobuf logs each string field that is not UTF-8, all from one call
  // site: at most 100 of its lines a second get through (a span of t
  // seconds touches at most floor(t) + 2 one-second windows), however fast
  // or slow (sanitizers) this machine sends them.
  const auto windows = static_cast<size_t>(seconds) + 2;
  EXPECT_LE(utf8_lines, 100 * windows) << kRequests << " requests in " << seconds << " s";
  EXPECT_GT(utf8_lines, 0u);
  // The 200 unknown function names: logged the 1st, 2nd, 4th, 8th, ... time.
  EXPECT_LT(other_lines, 30u) << log.substr(0, 4000);
}

// Concurrent messages over the size limit: gRPC receives each whole before
// refusing it, so without a buffer bound the worker would hold them all.
TEST(HostileInputMemoryTest, ConcurrentOversizedMessagesStayWithinTheBufferBound) {
  constexpr int kClients = 6;
  constexpr size_t kMessageBytes = size_t{96} << 20;
  Task worker = start_task("worker", {"--max-message-mib", "8", "--max-buffered-mib", "64"});
  ASSERT_NE(worker.process, nullptr);
  const int64_t before = peak_rss_bytes(worker.process->pid());
  const std::string payload(kMessageBytes, 'p');
  std::vector<absl::Status> results(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      results[i] =
          call_with_bytes(worker.address, "/psflow.v1.ExecutorService/CreateValue", payload);
    });
  }
  for (std::thread& t : clients) t.join();
  for (const absl::Status& s : results) EXPECT_FALSE(s.ok());
  const int64_t peak = peak_rss_bytes(worker.process->pid());
  std::cerr << "worker peak RSS: " << (before >> 20) << " MiB at start, " << (peak >> 20)
            << " MiB after " << kClients << " concurrent " << (kMessageBytes >> 20)
            << " MiB messages\n";
  // Without the bound: about kClients x kMessageBytes (576 MiB) more.
  EXPECT_LT(peak - before, int64_t{256} << 20);
  EXPECT_TRUE(get_status(worker.address, "worker", 0, deadline()).ok());
}

// A struct above 2 GiB round trip with stream_structs (TFF streams structs
// of 2.2 GiB and more). Needs about 8 GiB of memory and a minute, so it is
// run by hand: --gtest_also_run_disabled_tests --gtest_filter='*AboveTwoGiB*'.
// The bound it passes is a parameter tested small in
// ValueGraphLimitsTest.StructBytesBoundIsAParameterAboveTwoGiBByDefault.
TEST(LargeStructTest, DISABLED_StreamsAStructAboveTwoGiB) {
  Task worker = start_task("worker");
  ASSERT_NE(worker.process, nullptr);
  constexpr int64_t kPartBytes = int64_t{750} << 20;
  Structure::Items parts;
  for (int i = 0; i < 3; ++i) {
    Tensor part(DType::kUInt8, {kPartBytes});
    part.mutable_flat<uint8_t>()[0] = static_cast<uint8_t>(i + 1);
    part.mutable_flat<uint8_t>()[kPartBytes - 1] = static_cast<uint8_t>(i + 7);
    parts.push_back(Structure(std::move(part)));
  }
  const Structure big = Structure::tuple(std::move(parts));
  ASSERT_GT(encoded_size(big), size_t{2} << 30);
  RemoteExecutorOptions options;
  options.stream_structs = true;
  options.rpc_timeout = absl::Minutes(5);
  const absl::Time start = absl::Now();
  std::unique_ptr<RemoteExecutor> ex =
      std::move(RemoteExecutor::create(worker.address, options)).value();
  absl::StatusOr<RemoteExecutorValue> sent = ex->create_value(big);
  ASSERT_TRUE(sent.ok()) << sent.status();
  absl::StatusOr<Structure> back = sent->compute();
  ASSERT_TRUE(back.ok()) << back.status();
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(*back == big);
  rusage self{};
  getrusage(RUSAGE_SELF, &self);
  std::cerr << "round trip of " << (encoded_size(big) >> 20)
            << " MiB: " << absl::FormatDuration(took) << "; peak RSS worker "
            << (peak_rss_bytes(worker.process->pid()) >> 20) << " MiB, client "
            << (self.ru_maxrss >> 10) << " MiB\n";
}

}  // namespace
}  // namespace psflow::internal

// Roles and value ids against real ps and worker processes over mutual TLS,
// with real certificates (openssl): a valid certificate with the wrong role
// is PERMISSION_DENIED and changes nothing; a value id used by a client
// other than its creator is NOT_FOUND and the value stays intact.
#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/port_reservation.h"
#include "ps/request/execute_batch.h"
#include "ps/request/grpc_execute_codec.h"
#include "psflow/v1/task.grpc.pb.h"
#include "psflow/variable_handle.h"
#include "rpc/shared_memory_region.h"
#include "tensor/codec.h"
#include "test_certificates.h"
#include "test_process.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::make_test_ca;
using ::psflow::internal::testing::make_test_certificate;
using ::psflow::internal::testing::read_text_file;
using ::psflow::internal::testing::test_environment;
using ::psflow::internal::testing::TestProcess;
using ::testing::HasSubstr;
using Op = v1::VariableOp;

constexpr absl::Duration kStartTimeout = absl::Seconds(60);
constexpr absl::Duration kCallTimeout = absl::Seconds(30);

void set_deadline(grpc::ClientContext& context, absl::Duration timeout = kCallTimeout) {
  context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
}

// One ps and two workers of the psflow_testing binary, serving mutual TLS
// with certificates of a fresh CA; and client certificates for the
// callers the tests play.
class AuthorizationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char dir_template[] = "/tmp/psflow_authz_XXXXXX";
    ASSERT_NE(::mkdtemp(dir_template), nullptr);
    dir_ = new std::string(dir_template);
    ASSERT_TRUE(make_test_ca(*dir_).ok());
    // The tasks' own certificates, and callers no task plays: a second
    // chief (another coordinator) and a certificate whose CN names no task.
    const std::vector<std::pair<std::string, std::string>> certs = {
        {"ps-0", "ps/0"},       {"worker-0", "worker/0"}, {"worker-1", "worker/1"},
        {"chief-0", "chief/0"}, {"chief-1", "chief/1"},   {"evaluator-0", "evaluator/0"},
        {"nobody", "nobody"}};
    for (const auto& [stem, cn] : certs) {
      absl::Status s = make_test_certificate(*dir_, stem, cn, *dir_);
      ASSERT_TRUE(s.ok()) << s;
    }
    std::vector<PortReservation> ports;
    for (int i = 0; i < 3; ++i) {
      absl::StatusOr<PortReservation> port = PortReservation::reserve("127.0.0.1");
      ASSERT_TRUE(port.ok()) << port.status();
      ports.push_back(*std::move(port));
    }
    addresses_ =
        new std::vector<std::string>{ports[0].address(), ports[1].address(), ports[2].address()};
    const std::string cluster =
        absl::StrCat(R"({"ps": [")", ports[0].address(), R"("], "worker": [")", ports[1].address(),
                     R"(", ")", ports[2].address(), R"("]})");
    processes_ = new std::vector<std::unique_ptr<TestProcess>>();
    const std::vector<std::pair<std::string, int>> tasks = {
        {"ps", 0}, {"worker", 0}, {"worker", 1}};
    for (const auto& [job, index] : tasks) {
      processes_->push_back(std::make_unique<TestProcess>(
          std::vector<std::string>{PSFLOW_TESTING_BINARY_PATH, "server", "--reuse-port", "--job",
                                   job, "--task", std::to_string(index), "--cluster-json", cluster,
                                   "--tls-dir", *dir_},
          test_environment()));
      ASSERT_GT(processes_->back()->pid(), 0);
    }
    // Serving once a TLS GetStatus answers (waits for the connection).
    for (int i = 0; i < 3; ++i) {
      grpc::ClientContext context;
      set_deadline(context, kStartTimeout);
      context.set_wait_for_ready(true);
      v1::GetStatusResponse response;
      const grpc::Status s = i == 0 ? v1::VariableService::NewStub(channel(i, "chief-0"))
                                          ->GetStatus(&context, v1::GetStatusRequest(), &response)
                                    : v1::ExecutorService::NewStub(channel(i, "chief-0"))
                                          ->GetStatus(&context, v1::GetStatusRequest(), &response);
      ASSERT_TRUE(s.ok()) << "task " << i << ": " << s.error_message() << "\n"
                          << (*processes_)[static_cast<size_t>(i)]->read_stderr(absl::Now());
    }
  }

  static void TearDownTestSuite() {
    delete processes_;
    processes_ = nullptr;
    delete addresses_;
    addresses_ = nullptr;
    if (dir_ != nullptr) {
      TestProcess rm({"/bin/rm", "-rf", *dir_}, test_environment());
      rm.wait_exit_code(absl::Now() + absl::Seconds(30));
    }
    delete dir_;
    dir_ = nullptr;
  }

  void SetUp() override { ASSERT_NE(processes_, nullptr) << "the cluster did not start"; }

  // A channel to task `task` (0: ps/0, 1: worker/0, 2: worker/1) presenting
  // the certificate <stem>.crt. A channel of its own per call site, so that
  // callers never share a connection.
  static std::shared_ptr<grpc::Channel> channel(int task, const std::string& stem) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = read_text_file(*dir_ + "/ca.crt");
    options.pem_cert_chain = read_text_file(*dir_ + "/" + stem + ".crt");
    options.pem_private_key = read_text_file(*dir_ + "/" + stem + ".key");
    grpc::ChannelArguments args;
    args.SetInt("grpc.use_local_subchannel_pool", 1);
    return grpc::CreateCustomChannel((*addresses_)[static_cast<size_t>(task)],
                                     grpc::SslCredentials(options), args);
  }

  static grpc::Status execute(const std::string& stem, ExecuteBatch batch,
                              v1::ExecuteResponse* response) {
    v1::ExecuteRequest request;
    batch_to_proto(batch, &request);
    grpc::ClientContext context;
    set_deadline(context);
    return v1::VariableService::NewStub(channel(0, stem))->Execute(&context, request, response);
  }

  static VariableOpArgs op(Op::Kind kind, std::string name, Tensor value = Tensor()) {
    VariableOpArgs a;
    a.kind = kind;
    a.variable = std::move(name);
    a.value = std::move(value);
    return a;
  }

  static ExecuteBatch batch_of(std::vector<VariableOpArgs> ops) {
    ExecuteBatch b;
    b.ops = std::move(ops);
    return b;
  }

  // The ps's variables by name, as the chief lists them.
  static std::vector<std::string> variable_names() {
    grpc::ClientContext context;
    set_deadline(context);
    v1::ListVariablesResponse response;
    const grpc::Status s = v1::VariableService::NewStub(channel(0, "chief-0"))
                               ->ListVariables(&context, v1::ListVariablesRequest(), &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::vector<std::string> names;
    for (const v1::VariableInfo& info : response.variables()) names.push_back(info.name());
    std::sort(names.begin(), names.end());
    return names;
  }

  // The value of variable `name` as the chief reads it.
  static std::vector<float> read_floats(const std::string& name) {
    v1::ExecuteResponse response;
    const grpc::Status s = execute("chief-0", batch_of({op(Op::READ, name)}), &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    if (!s.ok() || response.results_size() != 1) return {};
    absl::StatusOr<Tensor> t = tensor_from_proto(response.mutable_results(0), CodecLimits());
    EXPECT_TRUE(t.ok()) << t.status();
    if (!t.ok()) return {};
    auto flat = t->flat<float>();
    return std::vector<float>(flat.begin(), flat.end());
  }

  static std::string* dir_;
  static std::vector<std::string>* addresses_;
  static std::vector<std::unique_ptr<TestProcess>>* processes_;
};

std::string* AuthorizationTest::dir_ = nullptr;
std::vector<std::string>* AuthorizationTest::addresses_ = nullptr;
std::vector<std::unique_ptr<TestProcess>>* AuthorizationTest::processes_ = nullptr;

Tensor floats(std::vector<float> values) {
  const auto n = static_cast<int64_t>(values.size());
  return Tensor::from_vector<float>(values, {n});
}

// A worker's certificate may read and update variables, never create,
// delete, restore, snapshot or list them; a refused batch applies none of
// its ops.
TEST_F(AuthorizationTest, WorkerCertificateCannotCreateOrDeleteVariablesOnThePs) {
  v1::ExecuteResponse response;
  ASSERT_TRUE(
      execute("chief-0", batch_of({op(Op::CREATE, "authz_w", floats({1, 2, 3}))}), &response).ok());
  const std::vector<std::string> before = variable_names();
  ASSERT_THAT(before, ::testing::Contains("authz_w"));

  struct Refused {
    const char* what;
    ExecuteBatch batch;
  };
  std::vector<Refused> refused;
  refused.push_back({"create", batch_of({op(Op::CREATE, "authz_new", floats({9}))})});
  refused.push_back(
      {"create_if_absent", batch_of({op(Op::CREATE_IF_ABSENT, "authz_new", floats({9}))})});
  refused.push_back({"delete", batch_of({op(Op::DELETE, "authz_w")})});
  refused.push_back({"snapshot", batch_of({op(Op::SNAPSHOT, "authz_w")})});
  // An allowed update first, then a refused op: nothing of the batch runs.
  refused.push_back(
      {"update then replace", batch_of({op(Op::ASSIGN_ADD, "authz_w", floats({100, 100, 100})),
                                        op(Op::CREATE, "authz_w", floats({7, 7, 7}))})});
  for (Refused& r : refused) {
    SCOPED_TRACE(r.what);
    v1::ExecuteResponse denied_response;
    const grpc::Status s = execute("worker-0", std::move(r.batch), &denied_response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("worker/0 may not call"));
    EXPECT_THAT(s.error_message(), HasSubstr("only the chief may"));
  }
  {
    grpc::ClientContext context;
    set_deadline(context);
    v1::ListVariablesResponse list;
    const grpc::Status s = v1::VariableService::NewStub(channel(0, "worker-1"))
                               ->ListVariables(&context, v1::ListVariablesRequest(), &list);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
    EXPECT_EQ(list.variables_size(), 0);
  }
  // Nothing changed.
  EXPECT_EQ(variable_names(), before);
  EXPECT_EQ(read_floats("authz_w"), (std::vector<float>{1, 2, 3}));
  // What a worker may do, it can.
  ASSERT_TRUE(
      execute("worker-0", batch_of({op(Op::ASSIGN_ADD, "authz_w", floats({1, 1, 1}))}), &response)
          .ok());
  EXPECT_EQ(read_floats("authz_w"), (std::vector<float>{2, 3, 4}));
  // Tasks that are no client of the ps (ps, evaluator, a CN naming no
  // task) may not even read; every one of them may ask for status.
  for (const char* stem : {"ps-0", "evaluator-0", "nobody"}) {
    SCOPED_TRACE(stem);
    v1::ExecuteResponse denied_response;
    EXPECT_EQ(execute(stem, batch_of({op(Op::READ, "authz_w")}), &denied_response).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
    grpc::ClientContext context;
    set_deadline(context);
    v1::GetStatusResponse status;
    EXPECT_TRUE(v1::VariableService::NewStub(channel(0, stem))
                    ->GetStatus(&context, v1::GetStatusRequest(), &status)
                    .ok());
    EXPECT_EQ(status.job_name(), "ps");
  }
  ASSERT_TRUE(execute("chief-0", batch_of({op(Op::DELETE, "authz_w")}), &response).ok());
}

// One worker's certificate runs nothing on another worker, and creates no
// value there.
TEST_F(AuthorizationTest, WorkerCertificateCannotRunFunctionsOnAnotherWorker) {
  auto stats = [](const std::string& stem) {
    grpc::ClientContext context;
    set_deadline(context);
    v1::GetExecutorStatsResponse response;
    const grpc::Status s =
        v1::ExecutorService::NewStub(channel(2, stem))
            ->GetExecutorStats(&context, v1::GetExecutorStatsRequest(), &response);
    return std::make_pair(s, response);
  };
  const auto [before_status, before] = stats("chief-0");
  ASSERT_TRUE(before_status.ok()) << before_status.error_message();
  auto worker_stub = v1::ExecutorService::NewStub(channel(2, "worker-0"));
  {
    grpc::ClientContext context;
    set_deadline(context);
    v1::RunFunctionRequest request;
    request.set_function_name("testing/echo");
    request.set_closure_id(1);
    structure_to_proto(Structure(), request.mutable_args());
    v1::RunFunctionResponse response;
    const grpc::Status s = worker_stub->RunFunction(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
    EXPECT_THAT(s.error_message(),
                HasSubstr("worker/0 may not call /psflow.v1.ExecutorService/RunFunction: only the "
                          "chief may"));
    // Refused before the name is looked up: no registered names leak.
    EXPECT_THAT(s.error_message(), ::testing::Not(HasSubstr("testing/")));
  }
  {
    grpc::ClientContext context;
    set_deadline(context);
    v1::CreateValueRequest request;
    request.set_function_name("testing/nonexistent");
    v1::CreateValueResponse response;
    const grpc::Status s = worker_stub->CreateValue(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
    EXPECT_FALSE(response.has_value_ref());
  }
  EXPECT_EQ(stats("worker-0").first.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  const auto [after_status, after] = stats("chief-0");
  ASSERT_TRUE(after_status.ok());
  EXPECT_EQ(after.values_created(), before.values_created());
  EXPECT_EQ(after.live_values(), before.live_values());
  // The chief may.
  grpc::ClientContext context;
  set_deadline(context);
  v1::RunFunctionRequest request;
  request.set_function_name("testing/worker_index");
  request.set_closure_id(2);
  structure_to_proto(Structure(), request.mutable_args());
  v1::RunFunctionResponse response;
  const grpc::Status s = v1::ExecutorService::NewStub(channel(2, "chief-0"))
                             ->RunFunction(&context, request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.code(), 0) << response.message();
}

// Client B using client A's value id gets what an unknown id gets, and A's
// value is intact.
TEST_F(AuthorizationTest, StolenValueIdIsNotFoundAndTheValueStaysIntact) {
  auto a = v1::ExecutorService::NewStub(channel(1, "chief-0"));
  auto b = v1::ExecutorService::NewStub(channel(1, "chief-1"));
  v1::CreateValueRequest create;
  structure_to_proto(Structure::tuple({41, "secret"}), create.mutable_structure());
  std::string id;
  {
    grpc::ClientContext context;
    set_deadline(context);
    v1::CreateValueResponse response;
    const grpc::Status s = a->CreateValue(&context, create, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    id = response.value_ref().id();
  }
  // Ids carry 128 random bits after the worker's prefix.
  EXPECT_GE(id.size(), 32u) << id;

  auto compute = [](v1::ExecutorService::Stub& stub, const std::string& value_id,
                    v1::ComputeResponse* response) {
    grpc::ClientContext context;
    set_deadline(context);
    v1::ComputeRequest request;
    request.mutable_value_ref()->set_id(value_id);
    return stub.Compute(&context, request, response);
  };
  // An id of the same form that was never created, for comparison.
  std::string unknown = id;
  unknown.back() = unknown.back() == '0' ? '1' : '0';
  v1::ComputeResponse stolen_response;
  const grpc::Status stolen = compute(*b, id, &stolen_response);
  const grpc::Status never = compute(*b, unknown, &stolen_response);
  EXPECT_EQ(stolen.error_code(), grpc::StatusCode::NOT_FOUND) << stolen.error_message();
  EXPECT_EQ(never.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_FALSE(stolen_response.has_value());
  // No oracle: the two answers differ only in the id they quote.
  std::string stolen_message = stolen.error_message();
  std::string never_message = never.error_message();
  stolen_message.replace(stolen_message.find(id), id.size(), "ID");
  never_message.replace(never_message.find(unknown), unknown.size(), "ID");
  EXPECT_EQ(stolen_message, never_message);
  // Neither can B build on it or dispose of it.
  {
    grpc::ClientContext context;
    set_deadline(context);
    v1::CreateSelectionRequest request;
    request.mutable_source_ref()->set_id(id);
    v1::CreateSelectionResponse response;
    EXPECT_EQ(b->CreateSelection(&context, request, &response).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext context;
    set_deadline(context);
    v1::CreateStructRequest request;
    request.add_elements()->mutable_value_ref()->set_id(id);
    v1::CreateStructResponse response;
    EXPECT_EQ(b->CreateStruct(&context, request, &response).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext context;
    set_deadline(context);
    v1::DisposeRequest request;
    request.add_value_refs()->set_id(id);
    v1::DisposeResponse response;
    EXPECT_EQ(b->Dispose(&context, request, &response).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  // A worker's certificate is refused outright, before any id is looked up.
  {
    auto w = v1::ExecutorService::NewStub(channel(1, "worker-1"));
    v1::ComputeResponse response;
    EXPECT_EQ(compute(*w, id, &response).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  }
  // A's value is intact, and A disposes of it.
  v1::ComputeResponse response;
  const grpc::Status s = compute(*a, id, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  absl::StatusOr<Structure> got = structure_from_proto(response.mutable_value(), CodecLimits());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, Structure::tuple({41, "secret"}));
  grpc::ClientContext context;
  set_deadline(context);
  v1::DisposeRequest dispose;
  dispose.add_value_refs()->set_id(id);
  v1::DisposeResponse disposed;
  EXPECT_TRUE(a->Dispose(&context, dispose, &disposed).ok());
}

// A closure id belongs to the client that sent the closure: another client
// cancelling the same id finds nothing running, and cancels nothing.
TEST_F(AuthorizationTest, CancellingAnotherClientsClosureFindsNothingRunning) {
  auto scalar_handle = [](const std::string& name) {
    VariableHandle handle;
    handle.name = name;
    handle.dtype = DType::kInt64;
    handle.parts.push_back(
        VariablePartHandle{.job = "ps", .task = 0, .name = name, .shape = {}, .offset = 0});
    return handle.to_structure();
  };
  v1::ExecuteResponse created;
  ASSERT_TRUE(execute("chief-0",
                      batch_of({op(Op::CREATE, "authz_arrived", Tensor::scalar<int64_t>(0)),
                                op(Op::CREATE, "authz_gate", Tensor::scalar<int64_t>(0))}),
                      &created)
                  .ok());
  // The closure holds on worker/0 until the gate opens; it reaches the ps
  // with the worker's own certificate.
  auto a = v1::ExecutorService::NewStub(channel(1, "chief-0"));
  grpc::ClientContext run_context;
  set_deadline(run_context);
  v1::RunFunctionRequest run;
  run.set_function_name("testing/hold");
  run.set_closure_id(77);
  structure_to_proto(Structure::dict({{"arrived", scalar_handle("authz_arrived")},
                                      {"gate", scalar_handle("authz_gate")}}),
                     run.mutable_args());
  v1::RunFunctionResponse run_response;
  absl::Notification finished;
  grpc::Status run_status;
  a->async()->RunFunction(&run_context, &run, &run_response, [&](grpc::Status s) {
    run_status = std::move(s);
    finished.Notify();
  });
  auto arrived = [] {
    v1::ExecuteResponse response;
    const grpc::Status s = execute("chief-0", batch_of({op(Op::READ, "authz_arrived")}), &response);
    if (!s.ok() || response.results_size() != 1) return false;
    absl::StatusOr<Tensor> t = tensor_from_proto(response.mutable_results(0), CodecLimits());
    return t.ok() && t->scalar_value<int64_t>() == 1;
  };
  // Bounded wait for the closure to run (each check is one READ).
  const absl::Time give_up = absl::Now() + kCallTimeout;
  bool running = false;
  while (!running && absl::Now() < give_up && !finished.HasBeenNotified()) running = arrived();
  ASSERT_TRUE(running) << "the closure did not start: " << run_response.message();

  auto cancel = [](const std::string& stem, uint64_t closure_id) {
    grpc::ClientContext context;
    set_deadline(context);
    v1::CancelFunctionRequest request;
    request.set_closure_id(closure_id);
    v1::CancelFunctionResponse response;
    const grpc::Status s = v1::ExecutorService::NewStub(channel(1, stem))
                               ->CancelFunction(&context, request, &response);
    return std::make_pair(s, response.was_running());
  };
  const auto [other_status, other_found] = cancel("chief-1", 77);
  ASSERT_TRUE(other_status.ok()) << other_status.error_message();
  EXPECT_FALSE(other_found) << "another client's cancel reached the closure";
  EXPECT_EQ(cancel("worker-1", 77).first.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  const auto [own_status, own_found] = cancel("chief-0", 77);
  ASSERT_TRUE(own_status.ok()) << own_status.error_message();
  EXPECT_TRUE(own_found) << "the closure's own client did not find it running";
  // Released, the closure finishes.
  ASSERT_TRUE(execute("chief-0",
                      batch_of({op(Op::ASSIGN, "authz_gate", Tensor::scalar<int64_t>(1))}),
                      &created)
                  .ok());
  ASSERT_TRUE(finished.WaitForNotificationWithTimeout(kCallTimeout));
  EXPECT_TRUE(run_status.ok()) << run_status.error_message();
  ASSERT_TRUE(execute("chief-0",
                      batch_of({op(Op::DELETE, "authz_arrived"), op(Op::DELETE, "authz_gate")}),
                      &created)
                  .ok());
}

// A shared-memory session belongs to the task that opened it: another
// worker naming its token is told there is no such session and changes
// nothing, as for a token never issued; tasks without a ps-client role
// cannot open one.
TEST_F(AuthorizationTest, SharedMemorySessionsBelongToTheirOpener) {
  v1::ExecuteResponse ignored;
  ASSERT_TRUE(
      execute("chief-0",
              batch_of({op(Op::CREATE, "shm_owned", floats(std::vector<float>(2048, 1.0f)))}),
              &ignored)
          .ok());
  auto open = [](const std::string& stem, v1::OpenSharedMemoryResponse* response) {
    grpc::ClientContext context;
    set_deadline(context);
    v1::OpenSharedMemoryRequest request;
    request.set_boot_id(host_boot_id());
    request.set_bytes(1 << 20);
    return v1::VariableService::NewStub(channel(0, stem))
        ->OpenSharedMemory(&context, request, response);
  };
  v1::OpenSharedMemoryResponse session;
  const grpc::Status opened = open("worker-0", &session);
  ASSERT_TRUE(opened.ok()) << opened.error_message();
  absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> region =
      SharedMemoryRegion::attach(session.pid(), session.fd(), session.bytes(), session.session());
  ASSERT_TRUE(region.ok()) << region.status();
  std::vector<float> ones(2048, 1.0f);
  std::memcpy((*region)->data() + 8192, ones.data(), ones.size() * sizeof(float));

  auto add_from_region = [&](const std::string& stem) {
    v1::ExecuteRequest request;
    v1::VariableOp* add = request.add_ops();
    add->set_kind(Op::ASSIGN_ADD);
    add->set_variable("shm_owned");
    add->mutable_value()->set_dtype(v1::DT_FLOAT);
    add->mutable_value()->add_shape(2048);
    add->mutable_value()->mutable_shared()->set_offset(8192);
    add->mutable_value()->mutable_shared()->set_length(2048 * sizeof(float));
    request.mutable_shared_memory()->set_session(session.session());
    grpc::ClientContext context;
    set_deadline(context);
    v1::ExecuteResponse response;
    return v1::VariableService::NewStub(channel(0, stem))->Execute(&context, request, &response);
  };
  const grpc::Status stolen = add_from_region("worker-1");
  EXPECT_EQ(stolen.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << stolen.error_message();
  EXPECT_THAT(stolen.error_message(), ::testing::HasSubstr("no such shared-memory session"));
  EXPECT_EQ(read_floats("shm_owned"), std::vector<float>(2048, 1.0f));
  const grpc::Status own = add_from_region("worker-0");
  EXPECT_TRUE(own.ok()) << own.error_message();
  EXPECT_EQ(read_floats("shm_owned"), std::vector<float>(2048, 2.0f));

  // Closing it is the opener's too.
  auto close = [&](const std::string& stem) {
    grpc::ClientContext context;
    set_deadline(context);
    v1::CloseSharedMemoryRequest request;
    request.set_session(session.session());
    v1::CloseSharedMemoryResponse response;
    return v1::VariableService::NewStub(channel(0, stem))
        ->CloseSharedMemory(&context, request, &response);
  };
  EXPECT_EQ(close("worker-1").error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_TRUE(close("worker-0").ok());
  EXPECT_EQ(add_from_region("worker-0").error_code(), grpc::StatusCode::FAILED_PRECONDITION);

  for (const std::string stem : {"evaluator-0", "nobody", "ps-0"}) {
    v1::OpenSharedMemoryResponse response;
    EXPECT_EQ(open(stem, &response).error_code(), grpc::StatusCode::PERMISSION_DENIED) << stem;
  }
}

}  // namespace
}  // namespace psflow::internal

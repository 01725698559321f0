// The VariableService over gRPC against real ps processes of a LocalCluster:
// every op through the gRPC client agrees with the in-process store, updates
// from many threads are exact, bad input of every kind is rejected with a
// clear status while the ps stays up and unchanged, and a dead ps fails
// fast with UNAVAILABLE naming it.
#include <grpcpp/generic/generic_stub.h>
#include <signal.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/client_test_util.h"
#include "ps/client/variable_client.h"
#include "ps/server/execute.h"
#include "ps/server/local_variable_client.h"
#include "psflow/local_cluster.h"
#include "psflow/server.h"
#include "psflow/v1/task.grpc.pb.h"
#include "rpc/channel.h"
#include "rpc/grpc_status.h"
#include "tensor/codec.h"
#include "test_process.h"

namespace psflow::internal {
namespace {

using Op = v1::VariableOp;
using ::testing::HasSubstr;

constexpr absl::Duration kCallTimeout = absl::Seconds(30);
constexpr char kExecuteMethod[] = "/psflow.v1.VariableService/Execute";

absl::Time deadline() { return absl::Now() + kCallTimeout; }

LocalClusterOptions ps_only(int num_ps) {
  LocalClusterOptions options;
  options.num_ps = num_ps;
  options.num_workers = 0;
  options.include_chief = false;
  options.binary_path = PSFLOW_BINARY_PATH;
  return options;
}

std::string ps_address(const LocalCluster& cluster, int index) {
  absl::StatusOr<std::string> address = cluster.cluster_spec().task_address("ps", index);
  EXPECT_TRUE(address.ok()) << address.status();
  return address.value_or("");
}

VariableOpArgs op(Op::Kind kind, std::string name, Tensor value = Tensor(), Tensor ids = Tensor()) {
  VariableOpArgs a;
  a.kind = kind;
  a.variable = std::move(name);
  a.value = std::move(value);
  a.ids = std::move(ids);
  return a;
}

ExecuteBatch batch_of(std::vector<VariableOpArgs> ops,
                      std::vector<OptimizerConfig> optimizers = {}) {
  ExecuteBatch b;
  b.ops = std::move(ops);
  b.optimizers = std::move(optimizers);
  return b;
}

Tensor floats(std::vector<float> values, Shape shape) {
  return Tensor::from_vector<float>(values, std::move(shape));
}

// Large enough that both directions send it by reference in pieces.
Tensor big_matrix(float seed) {
  Tensor t(DType::kFloat32, {768, 1024});  // 3 MiB
  absl::Span<float> v = t.mutable_flat<float>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = seed + static_cast<float>(i % 4099) * 0.25f;
  return t;
}

// Two ps tasks shared by the tests that do not kill one.
class VariableServiceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(ps_only(2));
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = cluster->release();
    for (int i = 0; i < 2; ++i) {
      clients_[i] =
          make_grpc_variable_client(ps_address(*cluster_, i), task_name("ps", i)).release();
    }
  }

  static void TearDownTestSuite() {
    for (VariableClient*& c : clients_) {
      delete c;
      c = nullptr;
    }
    delete cluster_;
    cluster_ = nullptr;
  }

  void SetUp() override { ASSERT_NE(cluster_, nullptr) << "the cluster did not start"; }

  static VariableClient& ps(int i) { return *clients_[i]; }

  static std::vector<Tensor> run(VariableClient& client, ExecuteBatch batch) {
    absl::StatusOr<std::vector<Tensor>> results =
        client.execute_batch(std::move(batch), deadline());
    EXPECT_TRUE(results.ok()) << results.status();
    return results.ok() ? *std::move(results) : std::vector<Tensor>();
  }

  static Tensor read(VariableClient& client, const std::string& name) {
    std::vector<Tensor> results = run(client, batch_of({op(Op::READ, name)}));
    return results.size() == 1 ? results[0] : Tensor();
  }

  static LocalCluster* cluster_;
  static VariableClient* clients_[2];
};

LocalCluster* VariableServiceTest::cluster_ = nullptr;
VariableClient* VariableServiceTest::clients_[2] = {nullptr, nullptr};

// The same batches through gRPC and through the in-process store give the
// same results and leave the same values.
TEST_F(VariableServiceTest, EveryOpThroughGrpcMatchesTheInProcessStore) {
  auto local = make_local_variable_client(std::make_shared<VariableStore>(), "local");
  OptimizerConfig sgd;
  OptimizerConfig momentum;
  momentum.kind = OptimizerConfig::Kind::kMomentum;
  OptimizerConfig adagrad;
  adagrad.kind = OptimizerConfig::Kind::kAdagrad;
  OptimizerConfig adam;
  adam.kind = OptimizerConfig::Kind::kAdam;
  const Tensor ids = Tensor::from_vector<int64_t>({2, 0, 2});
  const Tensor rows = floats({1, 2, 3, 4, 5, 6}, {3, 2});
  auto apply = [](Op::Kind kind, const std::string& name, Tensor grad, int optimizer,
                  Tensor ids = Tensor()) {
    VariableOpArgs a = op(kind, name, std::move(grad), std::move(ids));
    a.optimizer = optimizer;
    a.learning_rate = 0.1;
    return a;
  };
  std::vector<ExecuteBatch> batches;
  batches.push_back(batch_of({
      op(Op::CREATE, "m", floats({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2})),
      op(Op::CREATE, "count", Tensor::scalar<int64_t>(5)),
      op(Op::CREATE, "names", Tensor::from_strings({"a", "bb", ""})),
      op(Op::CREATE, "big", big_matrix(1)),
      op(Op::CREATE, "emb", floats({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2})),
  }));
  // Ops see the variables that exist when the batch starts (all ops are
  // validated first), so using a variable needs a batch after its creation.
  batches.push_back(batch_of({
      op(Op::CREATE_IF_ABSENT, "m", floats({0, 0, 0, 0, 0, 0, 0, 0}, {4, 2})),
      op(Op::READ, "m"),
      op(Op::READ, "names"),
  }));
  batches.push_back(batch_of({
      op(Op::ASSIGN_ADD, "count", Tensor::scalar<int64_t>(10)),
      op(Op::ASSIGN_SUB, "m", floats({1, 1, 1, 1, 1, 1, 1, 1}, {4, 2})),
      op(Op::ASSIGN, "names", Tensor::from_strings({"x", "", "zzz"})),
      op(Op::ASSIGN, "big", big_matrix(7)),
      op(Op::READ, "count"),
      op(Op::READ, "names"),
      op(Op::READ, "big"),
  }));
  for (const Op::Kind kind : {Op::SCATTER_UPDATE, Op::SCATTER_ADD, Op::SCATTER_SUB, Op::SCATTER_MUL,
                              Op::SCATTER_DIV, Op::SCATTER_MIN, Op::SCATTER_MAX}) {
    batches.push_back(batch_of({op(kind, "m", rows, ids), op(Op::GATHER, "m", Tensor(), ids)}));
  }
  batches.push_back(batch_of(
      {apply(Op::APPLY_DENSE, "m", floats({1, -1, 2, -2, 3, -3, 4, -4}, {4, 2}), 0),
       apply(Op::APPLY_DENSE, "big", big_matrix(-2), 1), op(Op::READ, "m"), op(Op::READ, "big")},
      {sgd, momentum}));
  for (int step = 0; step < 3; ++step) {
    // Slots belong to one optimizer per variable: "m" has sgd's.
    const Tensor all_rows = Tensor::from_vector<int32_t>({3, 2, 1, 0});
    batches.push_back(batch_of(
        {apply(Op::APPLY_SPARSE, "emb", rows, 0, ids), op(Op::GATHER, "emb", Tensor(), all_rows)},
        {adagrad}));
  }
  batches.push_back(batch_of({op(Op::CREATE, "moments", floats({0.5f, -0.5f}, {2}))}));
  batches.push_back(
      batch_of({apply(Op::APPLY_DENSE, "moments", floats({1, 1}, {2}), 0),
                apply(Op::APPLY_DENSE, "moments", floats({-1, 2}, {2}), 0), op(Op::READ, "moments"),
                op(Op::DELETE, "moments"), op(Op::READ, "count")},
               {adam}));
  for (size_t i = 0; i < batches.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "batch " << i);
    std::vector<Tensor> expected = run(*local, batches[i]);
    // Alternate between the native and the proto interface.
    std::vector<Tensor> got;
    if (i % 2 == 0) {
      got = run(ps(0), batches[i]);
    } else {
      v1::ExecuteRequest request;
      batch_to_proto(batches[i], &request);
      absl::StatusOr<v1::ExecuteResponse> response =
          testing::execute_proto(ps(0), std::move(request), deadline());
      ASSERT_TRUE(response.ok()) << response.status();
      for (v1::TensorProto& proto : *response->mutable_results()) {
        absl::StatusOr<Tensor> t = tensor_from_proto(&proto);
        ASSERT_TRUE(t.ok()) << t.status();
        got.push_back(*std::move(t));
      }
    }
    ASSERT_EQ(got.size(), expected.size());
    for (size_t r = 0; r < got.size(); ++r) EXPECT_EQ(got[r], expected[r]) << "result " << r;
  }
  // Spot checks that do not rely on the oracle.
  EXPECT_EQ(read(ps(0), "count"), Tensor::scalar<int64_t>(15));
  EXPECT_EQ(read(ps(0), "names"), Tensor::from_strings({"x", "", "zzz"}));
  absl::StatusOr<std::vector<Tensor>> gone =
      ps(0).execute_batch(batch_of({op(Op::READ, "moments")}), deadline());
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound);
  // The other ps holds its own variables.
  EXPECT_EQ(ps(1).execute_batch(batch_of({op(Op::READ, "m")}), deadline()).status().code(),
            absl::StatusCode::kNotFound);
  run(ps(1), batch_of({op(Op::CREATE, "m", Tensor::scalar<double>(2.5))}));
  EXPECT_EQ(read(ps(1), "m"), Tensor::scalar<double>(2.5));
  run(ps(1), batch_of({op(Op::DELETE, "m")}));
}

TEST_F(VariableServiceTest, ListVariablesDescribesEachVariable) {
  OptimizerConfig adagrad;
  adagrad.kind = OptimizerConfig::Kind::kAdagrad;
  VariableOpArgs apply = op(Op::APPLY_DENSE, "list_w", floats({1, 1, 1, 1, 1, 1}, {2, 3}));
  apply.learning_rate = 0.5;
  run(ps(1), batch_of({op(Op::CREATE, "list_w", floats({0, 0, 0, 0, 0, 0}, {2, 3})),
                       op(Op::CREATE, "list_b", Tensor::scalar<int32_t>(1))}));
  run(ps(1), batch_of({apply, apply}, {adagrad}));
  auto stub = v1::VariableService::NewStub(create_channel(ps_address(*cluster_, 1)));
  grpc::ClientContext context;
  configure_context(context, deadline());
  v1::ListVariablesResponse response;
  ASSERT_TRUE(stub->ListVariables(&context, v1::ListVariablesRequest(), &response).ok());
  std::map<std::string, v1::VariableInfo> by_name;
  for (const v1::VariableInfo& info : response.variables()) by_name[info.name()] = info;
  ASSERT_EQ(by_name.count("list_w"), 1u);
  ASSERT_EQ(by_name.count("list_b"), 1u);
  EXPECT_EQ(by_name["list_w"].dtype(), v1::DT_FLOAT);
  EXPECT_THAT(by_name["list_w"].shape(), ::testing::ElementsAre(2, 3));
  EXPECT_EQ(by_name["list_w"].optimizer(), "adagrad");
  EXPECT_EQ(by_name["list_w"].optimizer_steps(), 2);
  EXPECT_EQ(by_name["list_b"].dtype(), v1::DT_INT32);
  EXPECT_TRUE(by_name["list_b"].shape().empty());
  EXPECT_EQ(by_name["list_b"].optimizer(), "");
  run(ps(1), batch_of({op(Op::DELETE, "list_w"), op(Op::DELETE, "list_b")}));
}

// One RPC per assign_add, from 8 threads at once: none is lost.
TEST_F(VariableServiceTest, ConcurrentAssignAddsFromManyThreadsAreExact) {
  constexpr int kThreads = 8;
  constexpr int kAddsPerThread = 10000;
  run(ps(0), batch_of({op(Op::CREATE, "counter", Tensor::scalar<int64_t>(0))}));
  std::atomic<int> failures{0};
  std::string first_error;
  std::atomic<bool> error_taken{false};
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kAddsPerThread; ++i) {
        absl::StatusOr<std::vector<Tensor>> r = ps(0).execute_batch(
            batch_of({op(Op::ASSIGN_ADD, "counter", Tensor::scalar<int64_t>(1))}), deadline());
        if (!r.ok()) {
          if (!error_taken.exchange(true)) first_error = r.status().ToString();
          ++failures;
          return;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0) << first_error;
  EXPECT_EQ(read(ps(0), "counter"), Tensor::scalar<int64_t>(int64_t{kThreads} * kAddsPerThread));
  std::cout << "[ info ] " << kThreads * kAddsPerThread << " assign_add RPCs took "
            << absl::FormatDuration(absl::Now() - start) << "\n";
}

// --- bad input ---------------------------------------------------------------

// The values of `names` on `client`, for before/after comparisons.
std::vector<Tensor> snapshot(VariableClient& client, const std::vector<std::string>& names) {
  ExecuteBatch b;
  for (const std::string& name : names) b.ops.push_back(op(Op::READ, name));
  absl::StatusOr<std::vector<Tensor>> r = client.execute_batch(std::move(b), deadline());
  EXPECT_TRUE(r.ok()) << r.status();
  return r.value_or(std::vector<Tensor>());
}

TEST_F(VariableServiceTest, BadRequestsGetClearErrorsAndChangeNothing) {
  run(ps(0), batch_of({op(Op::CREATE, "bad_w", floats({1, 2, 3, 4, 5, 6}, {3, 2})),
                       op(Op::CREATE, "bad_c", Tensor::scalar<int64_t>(3))}));
  const std::vector<std::string> names = {"bad_w", "bad_c"};
  const std::vector<Tensor> before = snapshot(ps(0), names);
  const Tensor good_delta = Tensor::scalar<int64_t>(100);
  OptimizerConfig bad_optimizer;
  bad_optimizer.beta_1 = 2;
  struct Case {
    std::string label;
    VariableOpArgs bad;
    absl::StatusCode code;
    std::string needle;
    std::vector<OptimizerConfig> optimizers = {};
  };
  VariableOpArgs unknown_kind = op(static_cast<Op::Kind>(99), "bad_w");
  VariableOpArgs missing_optimizer =
      op(Op::APPLY_DENSE, "bad_w", floats({1, 1, 1, 1, 1, 1}, {3, 2}));
  missing_optimizer.optimizer = 4;
  VariableOpArgs negative_rate = missing_optimizer;
  negative_rate.optimizer = 0;
  negative_rate.learning_rate = -1;
  const std::vector<Case> cases = {
      {"wrong shape", op(Op::ASSIGN, "bad_w", floats({1, 2}, {2})),
       absl::StatusCode::kInvalidArgument, "float32 [2] but variable 'bad_w' is float32 [3, 2]"},
      {"wrong dtype", op(Op::ASSIGN_ADD, "bad_c", Tensor::scalar<double>(1)),
       absl::StatusCode::kInvalidArgument, "is float64 []"},
      {"id out of range", op(Op::GATHER, "bad_w", Tensor(), Tensor::from_vector<int64_t>({0, 3})),
       absl::StatusCode::kInvalidArgument, "row id 3 at position 1 is out of range [0, 3)"},
      {"negative id",
       op(Op::SCATTER_ADD, "bad_w", floats({1, 1}, {1, 2}), Tensor::from_vector<int32_t>({-1})),
       absl::StatusCode::kInvalidArgument, "row id -1"},
      {"float ids", op(Op::GATHER, "bad_w", Tensor(), floats({0}, {1})),
       absl::StatusCode::kInvalidArgument, "1-D int32 or int64"},
      {"unknown variable", op(Op::ASSIGN_ADD, "nope", good_delta), absl::StatusCode::kNotFound,
       "no variable named 'nope'"},
      {"unknown op kind", unknown_kind, absl::StatusCode::kInvalidArgument,
       "unknown variable op kind 99"},
      {"missing value", op(Op::ASSIGN, "bad_w"), absl::StatusCode::kInvalidArgument,
       "ASSIGN needs a value tensor"},
      {"missing optimizer", missing_optimizer, absl::StatusCode::kInvalidArgument,
       "optimizer index 4 is out of range"},
      {"negative learning rate",
       negative_rate,
       absl::StatusCode::kInvalidArgument,
       "learning rate -1 is invalid",
       {OptimizerConfig()}},
      {"bad optimizer",
       negative_rate,
       absl::StatusCode::kInvalidArgument,
       "optimizer 0: optimizer beta_1 = 2 is invalid",
       {bad_optimizer}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    // A good op first: it must not be applied either.
    ExecuteBatch b = batch_of({op(Op::ASSIGN_ADD, "bad_c", good_delta), c.bad}, c.optimizers);
    absl::StatusOr<std::vector<Tensor>> r = ps(0).execute_batch(std::move(b), deadline());
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code) << r.status();
    const std::string message(r.status().message());
    EXPECT_THAT(message, HasSubstr(c.needle));
    EXPECT_THAT(message, HasSubstr("/job:ps/replica:0/task:0"));
    EXPECT_EQ(snapshot(ps(0), names), before);
  }
  EXPECT_TRUE(get_status(ps_address(*cluster_, 0), "ps", 0, deadline()).ok());
}

// Sends raw bytes to Execute, as a client in any language (or an attacker)
// could.
absl::Status call_with_bytes(const std::string& target, const std::string& bytes) {
  std::shared_ptr<grpc::Channel> channel = create_channel(target);
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  configure_context(context, deadline());
  grpc::Slice slice(bytes.data(), bytes.size());
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  absl::Notification done;
  grpc::Status status;
  stub.UnaryCall(&context, kExecuteMethod, grpc::StubOptions(), &request, &response,
                 [&](grpc::Status s) {
                   status = std::move(s);
                   done.Notify();
                 });
  done.WaitForNotification();
  return from_grpc_status(status);
}

TEST_F(VariableServiceTest, GarbageBytesAreRejectedAndTheTaskStaysUp) {
  run(ps(1), batch_of({op(Op::CREATE, "g", floats({1, 2}, {2}))}));
  const std::string target = ps_address(*cluster_, 1);
  // A valid request of the kind a non-C++ client would send, then broken.
  v1::ExecuteRequest valid;
  Op* o = valid.add_ops();
  o->set_kind(Op::ASSIGN);
  o->set_variable("g");
  tensor_to_proto(floats({7, 7}, {2}), o->mutable_value());
  const std::string good = valid.SerializeAsString();
  std::mt19937 rng(7);
  std::string random(4096, '\0');
  for (char& c : random) c = static_cast<char>(rng());
  v1::ExecuteRequest short_content = valid;
  short_content.mutable_ops(0)->mutable_value()->set_content("abc");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {random, ""},
      {good.substr(0, good.size() - 3), "malformed ExecuteRequest"},
      {std::string("\x0a\xff\xff\xff\xff\x0f", 6), "malformed ExecuteRequest"},
      {std::string("\x0a\x03\x12\x01\xc3", 5), "not valid UTF-8"},
      {short_content.SerializeAsString(), "tensor content is 3 bytes"},
  };
  for (const auto& [bytes, needle] : cases) {
    const absl::Status s = call_with_bytes(target, bytes);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(needle));
  }
  EXPECT_EQ(read(ps(1), "g"), floats({1, 2}, {2}));
  // The same bytes, intact, are a valid request from any protobuf client.
  EXPECT_TRUE(call_with_bytes(target, good).ok());
  EXPECT_EQ(read(ps(1), "g"), floats({7, 7}, {2}));
  EXPECT_TRUE(get_status(target, "ps", 1, deadline()).ok());
  run(ps(1), batch_of({op(Op::DELETE, "g")}));
}

TEST_F(VariableServiceTest, CallsPastTheirDeadlineFailNamingTheTask) {
  absl::StatusOr<std::vector<Tensor>> r =
      ps(0).execute_batch(batch_of({op(Op::READ, "anything")}), absl::Now() - absl::Seconds(1));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("/job:ps/replica:0/task:0"));
}

TEST_F(VariableServiceTest, DestroyingAClientWithCallsInFlightRunsEveryCallback) {
  run(ps(0), batch_of({op(Op::CREATE, "inflight", big_matrix(0))}));
  std::atomic<int> callbacks{0};
  {
    auto client = make_grpc_variable_client(ps_address(*cluster_, 0), task_name("ps", 0));
    for (int i = 0; i < 16; ++i) {
      client->execute_batch_async(
          batch_of({op(Op::READ, "inflight")}), deadline(),
          [&](absl::StatusOr<std::vector<Tensor>> r) {
            EXPECT_TRUE(r.ok() || r.status().code() == absl::StatusCode::kCancelled) << r.status();
            ++callbacks;
          });
    }
  }
  EXPECT_EQ(callbacks.load(), 16);
  run(ps(0), batch_of({op(Op::DELETE, "inflight")}));
}

// --- limits (an in-process ps with a small message limit) ---------------------

TEST(VariableServiceLimitsTest, OversizedRequestsAndResponsesAreRejected) {
  const ClusterSpec spec(std::map<std::string, std::vector<std::string>>{{"ps", {"127.0.0.1:0"}}});
  ServerOptions options;
  options.max_message_bytes = 1 << 20;
  absl::StatusOr<std::unique_ptr<Server>> server = Server::create(spec, "ps", 0, options);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->start().ok());
  auto client = make_grpc_variable_client((*server)->target(), task_name("ps", 0));
  // 600 KiB each: fine alone, too much together.
  const Tensor part(DType::kFloat32, {600 * 256});
  ASSERT_TRUE(client->execute_batch(batch_of({op(Op::CREATE, "a", part)}), deadline()).ok());
  ASSERT_TRUE(client->execute_batch(batch_of({op(Op::CREATE, "b", part)}), deadline()).ok());

  const Tensor two_mib(DType::kFloat32, {512 * 1024});
  absl::StatusOr<std::vector<Tensor>> r =
      client->execute_batch(batch_of({op(Op::CREATE, "c", two_mib)}), deadline());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("/job:ps/replica:0/task:0"));

  // The response of reading both would exceed the limit: refused before the
  // update in the same batch is applied.
  const Tensor ones = Tensor::from_vector<float>(std::vector<float>(600 * 256, 1.0f));
  r = client->execute_batch(
      batch_of({op(Op::SCATTER_UPDATE, "a", floats({5}, {1}), Tensor::from_vector<int64_t>({0})),
                op(Op::READ, "a"), op(Op::READ, "b")}),
      deadline());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("ExecuteResponse would be"));
  absl::StatusOr<std::vector<Tensor>> a =
      client->execute_batch(batch_of({op(Op::READ, "a")}), deadline());
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ((*a)[0], part);
  client.reset();
  (*server)->stop();
}

// Responses whose size the ps must not attempt: a gather of many rows of
// strings (each costs a std::string however short) and many snapshots of
// one variable in one request. Both are refused before anything runs and
// the ps keeps serving.
TEST(VariableServiceLimitsTest, GathersOfManyStringsAndRepeatedSnapshotsAreRefused) {
  const ClusterSpec spec(std::map<std::string, std::vector<std::string>>{{"ps", {"127.0.0.1:0"}}});
  ServerOptions options;
  options.max_message_bytes = 8 << 20;
  absl::StatusOr<std::unique_ptr<Server>> server = Server::create(spec, "ps", 0, options);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->start().ok());
  auto client = make_grpc_variable_client((*server)->target(), task_name("ps", 0));
  ASSERT_TRUE(
      client
          ->execute_batch(batch_of({op(Op::CREATE, "s", Tensor(DType::kString, {1, 1000}))}),
                          deadline())
          .ok());
  ASSERT_TRUE(
      client
          ->execute_batch(batch_of({op(Op::CREATE, "f", Tensor(DType::kFloat32, {1 << 19}))}),
                          deadline())
          .ok());
  // 1,000 ids of 1,000 empty strings: a few KiB on the wire, 32 MB of strings.
  absl::StatusOr<std::vector<Tensor>> r = client->execute_batch(
      batch_of({op(Op::GATHER, "s", Tensor(), Tensor(DType::kInt32, {1000}))}), deadline());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("ExecuteResponse would be"));
  // Ten snapshots of 2 MiB (value and slots): over the 8 MiB limit.
  std::vector<VariableOpArgs> snapshots(10, op(Op::SNAPSHOT, "f"));
  r = client->execute_batch(batch_of(snapshots), deadline());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  r = client->execute_batch(batch_of({op(Op::GATHER, "s", Tensor(), Tensor(DType::kInt32, {2}))}),
                            deadline());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].shape(), (Shape{2, 1000}));
  client.reset();
  (*server)->stop();
}

// --- a ps that dies -------------------------------------------------------------

TEST(VariableServiceFailureTest, CallsToAKilledPsFailFastWithUnavailableNamingIt) {
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(ps_only(2));
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto ps0 = make_grpc_variable_client(ps_address(**cluster, 0), task_name("ps", 0));
  auto ps1 = make_grpc_variable_client(ps_address(**cluster, 1), task_name("ps", 1));
  for (VariableClient* c : {ps0.get(), ps1.get()}) {
    ASSERT_TRUE(
        c->execute_batch(batch_of({op(Op::CREATE, "v", Tensor::scalar<float>(1))}), deadline())
            .ok());
  }
  absl::StatusOr<pid_t> pid = (*cluster)->pid("ps", 1);
  ASSERT_TRUE(pid.ok());
  ASSERT_TRUE((*cluster)->signal_task("ps", 1, SIGKILL).ok());
  ASSERT_TRUE(
      psflow::internal::testing::wait_for_process_exit(*pid, absl::Now() + absl::Seconds(30)));
  // Several calls: the first may meet the broken connection, later ones
  // the refused reconnection; all must fail fast, long before the deadline.
  for (int i = 0; i < 3; ++i) {
    const absl::Time start = absl::Now();
    absl::StatusOr<std::vector<Tensor>> r =
        ps1->execute_batch(batch_of({op(Op::READ, "v")}), start + absl::Seconds(60));
    EXPECT_LT(absl::Now() - start, absl::Seconds(5));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("/job:ps/replica:0/task:1"));
  }
  // The proto interface too, and the other ps is unaffected.
  v1::ExecuteRequest request;
  request.add_ops()->set_variable("v");
  EXPECT_EQ(testing::execute_proto(*ps1, std::move(request), deadline()).status().code(),
            absl::StatusCode::kUnavailable);
  absl::StatusOr<std::vector<Tensor>> alive =
      ps0->execute_batch(batch_of({op(Op::READ, "v")}), deadline());
  ASSERT_TRUE(alive.ok()) << alive.status();
  EXPECT_EQ((*alive)[0], Tensor::scalar<float>(1));
}

}  // namespace
}  // namespace psflow::internal

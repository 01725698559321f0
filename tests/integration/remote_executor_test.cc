// RemoteExecutor against a real worker process (LocalCluster: 1 ps, 1
// worker): round trips, calls, the fused call_function, structs and
// selections, chains, the error model, hostile bytes, dispose batching and
// stream_structs.
#include "psflow/remote_executor.h"

#include <grpcpp/generic/generic_stub.h>

#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "base/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/strategy.h"
#include "psflow/v1/task.grpc.pb.h"
#include "rpc/channel.h"
#include "rpc/grpc_status.h"
#include "tensor/codec.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

std::string message_of(const absl::Status& s) { return std::string(s.message()); }

Tensor floats(size_t n, float x) { return Tensor::from_vector(std::vector<float>(n, x)); }

class RemoteExecutorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    LocalClusterOptions options;
    options.num_ps = 1;
    options.num_workers = 1;
    options.binary_path = PSFLOW_TESTING_BINARY_PATH;
    auto cluster = LocalCluster::start(options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = cluster->release();
    target_ = new std::string(ok_value(cluster_->cluster_spec().task_address("worker", 0)));
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
    delete target_;
    target_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(cluster_, nullptr);
    ex_ = ok_value(RemoteExecutor::create(*target_));
  }

  std::unique_ptr<RemoteExecutor> executor(RemoteExecutorOptions options) {
    return ok_value(RemoteExecutor::create(*target_, options));
  }
  RemoteExecutorValue value(const Structure& s) { return ok_value(ex_->create_value(s)); }
  RemoteExecutorValue function(std::string_view name) {
    return ok_value(ex_->create_function(name));
  }
  Structure compute(const RemoteExecutorValue& v) { return ok_value(v.compute()); }
  int64_t live_values() { return ok_value(ex_->stats()).live_values; }

  // Sends raw bytes to an ExecutorService method, as a client in any
  // language (or an attacker) could.
  static absl::Status call_with_bytes(const std::string& method, const std::string& bytes) {
    grpc::GenericStub stub(create_channel(*target_));
    grpc::ClientContext context;
    configure_context(context, absl::Now() + absl::Seconds(30));
    grpc::Slice slice(bytes.data(), bytes.size());
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    absl::Notification done;
    grpc::Status status;
    stub.UnaryCall(&context, absl::StrCat("/psflow.v1.ExecutorService/", method),
                   grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
                     status = std::move(s);
                     done.Notify();
                   });
    done.WaitForNotification();
    return from_grpc_status(status);
  }

  static absl::Status raw_dispose(const std::vector<std::string>& ids) {
    v1::DisposeRequest request;
    for (const std::string& id : ids) request.add_value_refs()->set_id(id);
    return call_with_bytes("Dispose", request.SerializeAsString());
  }

  static LocalCluster* cluster_;
  static std::string* target_;
  std::unique_ptr<RemoteExecutor> ex_;
};

LocalCluster* RemoteExecutorTest::cluster_ = nullptr;
std::string* RemoteExecutorTest::target_ = nullptr;

TEST_F(RemoteExecutorTest, EveryLeafKindAndNestingRoundTrips) {
  const std::vector<Structure> values = {
      Structure(),
      Structure(int64_t{-7}),
      Structure(2.5),
      Structure(true),
      Structure(std::string("bytes\0with nul", 14)),
      Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}),
      Tensor::from_vector<double>({0.5, -1}),
      Tensor::from_vector<int32_t>({1, -2, 3}),
      Tensor::from_vector<int64_t>({int64_t{1} << 40}),
      Tensor::from_vector<uint8_t>({0, 255}),
      Tensor::from_vector<bool>({true, false, true}),
      Tensor::from_strings({"a", "", "ccc"}),
      Tensor::scalar(3.0f),
      Tensor(DType::kFloat32, {0, 3}),
      Structure::tuple({}),
      Structure::list({}),
      Structure::dict({}),
      Structure::tuple({2, Structure::tuple({3, 4}), Structure::list({5}),
                        Structure::dict({{"v", 1}, {"w", Structure::list({Structure(), "x"})}}),
                        Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2})}),
  };
  for (const Structure& v : values) {
    SCOPED_TRACE(v.debug_string());
    RemoteExecutorValue remote = value(v);
    EXPECT_FALSE(remote.id().empty());
    EXPECT_EQ(compute(remote), v);
    EXPECT_EQ(compute(remote), v);  // Computing does not consume.
  }
}

TEST_F(RemoteExecutorTest, CallsWithAndWithoutAnArgument) {
  RemoteExecutorValue add = function("testing/add");
  EXPECT_EQ(compute(ok_value(ex_->create_call(add, value(Structure::tuple({1, 2}))))),
            Structure(3));
  EXPECT_EQ(compute(ok_value(ex_->create_call(add, value(Structure::tuple({1, 0.5}))))),
            Structure(1.5));
  // Without an argument the function gets None.
  EXPECT_EQ(compute(ok_value(ex_->create_call(function("testing/echo")))), Structure());
  // Calls run one at a time in arrival order, sharing per-worker resources.
  RemoteExecutorValue count = function("testing/count");
  std::vector<RemoteExecutorValue> counts;
  for (int i = 0; i < 6; ++i) counts.push_back(ok_value(ex_->create_call(count)));
  std::vector<int64_t> seen(counts.size());
  for (size_t i = counts.size(); i-- > 0;) seen[i] = compute(counts[i]).int_value();
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_EQ(seen[i], seen[i - 1] + 1) << i;
  // A function reference has no value.
  absl::StatusOr<Structure> fn = add.compute();
  EXPECT_EQ(fn.status().code(), absl::StatusCode::kInvalidArgument) << fn.status();
  EXPECT_THAT(message_of(fn.status()), HasSubstr("reference to function 'testing/add'"));
}

// The test-only functions (testing/*, examples/*) are built into the test
// twin of the CLI, never into the psflow binary users run: a production
// worker offers no probe to whoever reaches it, while the training steps
// stay registered.
TEST(ProductionWorkerTest, OffersNoTestOnlyFunctions) {
  LocalClusterOptions options;
  options.num_ps = 1;
  options.num_workers = 1;
  options.binary_path = PSFLOW_BINARY_PATH;
  std::unique_ptr<LocalCluster> cluster = ok_value(LocalCluster::start(options));
  std::unique_ptr<RemoteExecutor> ex =
      ok_value(RemoteExecutor::create(ok_value(cluster->cluster_spec().task_address("worker", 0))));
  for (const char* name : {"testing/echo", "testing/hold", "examples/increment"}) {
    absl::StatusOr<Structure> out = ex->call_function(name);
    EXPECT_EQ(out.status().code(), absl::StatusCode::kNotFound) << name << ": " << out.status();
  }
  // The same request to the test twin runs (the refusal above is about the
  // binary, not the request).
  LocalClusterOptions twin = options;
  twin.binary_path = PSFLOW_TESTING_BINARY_PATH;
  std::unique_ptr<LocalCluster> testing_cluster = ok_value(LocalCluster::start(twin));
  std::unique_ptr<RemoteExecutor> testing_ex = ok_value(
      RemoteExecutor::create(ok_value(testing_cluster->cluster_spec().task_address("worker", 0))));
  EXPECT_EQ(ok_value(testing_ex->call_function("testing/echo", Structure(7))), Structure(7));
}

// Calls get the worker's WorkerContext as RunFunction builds it: here its
// ps clients, for the reference's worker_fn over variables on the ps.
TEST_F(RemoteExecutorTest, CallFunctionIsTheFusedCall) {
  // The same result as create_function + create_value + create_call +
  // compute, in one round trip that leaves nothing on the worker.
  const int64_t live_before = live_values();
  EXPECT_EQ(ok_value(ex_->call_function("testing/add", Structure::tuple({1, 2}))), Structure(3));
  EXPECT_EQ(ok_value(ex_->call_function("testing/add", Structure::tuple({1, 0.5}))),
            Structure(1.5));
  const Structure nested =
      Structure::tuple({Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}),
                        Structure::dict({{"v", 1}, {"w", Structure::list({Structure(), "x"})}})});
  EXPECT_EQ(ok_value(ex_->call_function("testing/echo", nested)), nested);
  // Without an argument the function gets None.
  EXPECT_EQ(ok_value(ex_->call_function("testing/echo")), Structure());
  EXPECT_EQ(live_values(), live_before);
  EXPECT_EQ(ok_value(ex_->call_function("testing/echo", nested)),
            compute(ok_value(ex_->create_call(function("testing/echo"), value(nested)))));

  // An unknown function: NOT_FOUND naming it, with close names and the worker.
  absl::StatusOr<Structure> unknown = ex_->call_function("testing/ecoh", 1);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound) << unknown.status();
  EXPECT_THAT(message_of(unknown.status()), HasSubstr("testing/ecoh"));
  EXPECT_THAT(message_of(unknown.status()), HasSubstr("testing/echo"));
  EXPECT_THAT(message_of(unknown.status()), HasSubstr("/job:worker/replica:0/task:0"));

  // The function's own error keeps its code and names the function.
  absl::StatusOr<Structure> failed = ex_->call_function("testing/fail", "bad step");
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInvalidArgument) << failed.status();
  EXPECT_THAT(message_of(failed.status()), HasSubstr("bad step"));
  EXPECT_THAT(message_of(failed.status()), HasSubstr("testing/fail"));
  EXPECT_THAT(message_of(failed.status()), HasSubstr(*target_));

  // An argument larger than one message is refused before sending.
  RemoteExecutorOptions small;
  small.max_message_bytes = 1 << 12;
  std::unique_ptr<RemoteExecutor> limited = executor(small);
  absl::StatusOr<Structure> too_big = limited->call_function("testing/echo", floats(4096, 1));
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kInvalidArgument) << too_big.status();
  EXPECT_THAT(message_of(too_big.status()), HasSubstr("max_message_bytes"));
  EXPECT_EQ(ok_value(limited->call_function("testing/echo", floats(4, 1))),
            Structure(floats(4, 1)));

  // A closed executor.
  ASSERT_TRUE(limited->close().ok());
  absl::StatusOr<Structure> closed = limited->call_function("testing/echo", 1);
  EXPECT_EQ(closed.status().code(), absl::StatusCode::kFailedPrecondition) << closed.status();
  EXPECT_THAT(message_of(closed.status()), HasSubstr("closed"));
}

TEST_F(RemoteExecutorTest, CallsReachTheParameterServers) {
  auto strategy = ok_value(
      ParameterServerStrategy::create(SimpleClusterResolver(cluster_->cluster_spec(), "chief", 0)));
  ShardedVariable v1, v2;
  {
    StrategyScope scope = strategy->scope();
    v1 = ok_value(create_variable(Tensor::scalar(0.0f), {.name = "rx_v1"}));
    v2 = ok_value(create_variable(Tensor::scalar(1.0f), {.name = "rx_v2"}));
  }
  RemoteExecutorValue handles =
      value(Structure::tuple({v1.handle().to_structure(), v2.handle().to_structure()}));
  RemoteExecutorValue result = ok_value(ex_->create_call(function("examples/worker_fn"), handles));
  Structure out = compute(result);
  ASSERT_TRUE(out.is_tensor()) << out;
  EXPECT_FLOAT_EQ(out.tensor().scalar_value<float>(), 0.125f);  // 0.1 / 0.8
  EXPECT_NEAR(ok_value(v1.read_value()).scalar_value<float>(), 0.1f, 1e-6);
}

TEST_F(RemoteExecutorTest, StructsAndSelections) {
  RemoteExecutorValue one = value(1);
  RemoteExecutorValue tensor = value(Tensor::from_vector<float>({1, 2}));
  RemoteExecutorValue tuple = ok_value(ex_->create_struct({one, tensor}));
  EXPECT_EQ(compute(tuple), Structure::tuple({1, Tensor::from_vector<float>({1, 2})}));
  EXPECT_EQ(compute(ok_value(ex_->create_selection(tuple, 1))),
            Structure(Tensor::from_vector<float>({1, 2})));
  EXPECT_EQ(compute(ok_value(ex_->create_struct({one, one}, /*as_list=*/true))),
            Structure::list({1, 1}));
  // Named elements make a dict, ordered by key; selection follows that order.
  RemoteExecutorValue dict = ok_value(ex_->create_struct({{"b", one}, {"a", tensor}}));
  EXPECT_EQ(compute(dict), Structure::dict({{"a", Tensor::from_vector<float>({1, 2})}, {"b", 1}}));
  EXPECT_EQ(compute(ok_value(ex_->create_selection(dict, 1))), Structure(1));
  // Selections of concrete values and of call results.
  RemoteExecutorValue concrete = value(Structure::tuple({"x", Structure::list({"y", "z"})}));
  RemoteExecutorValue inner = ok_value(ex_->create_selection(concrete, 1));
  EXPECT_EQ(compute(ok_value(ex_->create_selection(inner, 0))), Structure("y"));
  RemoteExecutorValue echoed = ok_value(ex_->create_call(function("testing/echo"), concrete));
  EXPECT_EQ(compute(ok_value(ex_->create_selection(echoed, 0))), Structure("x"));
  // Elements outlive their handles: the struct keeps what it needs.
  RemoteExecutorValue kept;
  {
    RemoteExecutorValue a = value(10), b = value(20);
    kept = ok_value(ex_->create_struct({a, b}));
  }
  EXPECT_EQ(compute(kept), Structure::tuple({10, 20}));
  // close() disposes of the values of live handles too; they are dead now.
  ASSERT_TRUE(ex_->close().ok());
  absl::StatusOr<Structure> closed = kept.compute();
  EXPECT_EQ(closed.status().code(), absl::StatusCode::kFailedPrecondition) << closed.status();
  EXPECT_EQ(ex_->create_value(1).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(RemoteExecutorTest, ChainedCalls) {
  RemoteExecutorValue add = function("testing/add");
  RemoteExecutorValue three = ok_value(ex_->create_call(add, value(Structure::tuple({1, 2}))));
  RemoteExecutorValue ten = value(10);
  // (3 + 10), then (13 + 3): every result is an argument of the next call,
  // created before any of them ran.
  RemoteExecutorValue thirteen =
      ok_value(ex_->create_call(add, ok_value(ex_->create_struct({three, ten}))));
  RemoteExecutorValue sixteen =
      ok_value(ex_->create_call(add, ok_value(ex_->create_struct({thirteen, three}))));
  RemoteExecutorValue total = std::move(sixteen);
  for (int i = 0; i < 20; ++i) {  // A longer chain: + 1 each step.
    total = ok_value(ex_->create_call(add, ok_value(ex_->create_struct({total, value(1)}))));
  }
  EXPECT_EQ(compute(total), Structure(36));
  EXPECT_EQ(compute(thirteen), Structure(13));
}

TEST_F(RemoteExecutorTest, ErrorsNameTheProblem) {
  // Unknown function: at create time, with close names.
  absl::StatusOr<RemoteExecutorValue> unknown = ex_->create_function("testing/ecoh");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound) << unknown.status();
  EXPECT_THAT(message_of(unknown.status()), HasSubstr("testing/echo"));
  EXPECT_THAT(message_of(unknown.status()), HasSubstr("/job:worker/replica:0/task:0"));
  // A call's error surfaces at compute, with the function's code, also
  // through values built from it.
  RemoteExecutorValue failing =
      ok_value(ex_->create_call(function("testing/fail"), value("bad step")));
  absl::StatusOr<Structure> r = failing.compute();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_THAT(message_of(r.status()), HasSubstr("bad step"));
  EXPECT_THAT(message_of(r.status()), HasSubstr("testing/fail"));
  RemoteExecutorValue downstream = ok_value(ex_->create_call(
      function("testing/echo"), ok_value(ex_->create_struct({failing, value(1)}))));
  EXPECT_EQ(downstream.compute().status(), r.status());
  // Selection out of range, known at create time.
  absl::StatusOr<RemoteExecutorValue> out_of_range =
      ex_->create_selection(value(Structure::tuple({1, 2})), 2);
  EXPECT_EQ(out_of_range.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message_of(out_of_range.status()), HasSubstr("index 2 is out of range"));
  absl::StatusOr<RemoteExecutorValue> of_scalar = ex_->create_selection(value(5), 0);
  EXPECT_EQ(of_scalar.status().code(), absl::StatusCode::kInvalidArgument);
  // A value disposed behind the handle's back: NOT_FOUND naming the id, for
  // compute and for a second dispose.
  RemoteExecutorValue gone = value(1);
  const std::string id = gone.release();
  ASSERT_TRUE(raw_dispose({id}).ok());
  absl::Status again = raw_dispose({id});
  EXPECT_EQ(again.code(), absl::StatusCode::kNotFound) << again;
  EXPECT_THAT(message_of(again), HasSubstr(id));
  v1::ComputeRequest compute_request;
  compute_request.mutable_value_ref()->set_id(id);
  absl::Status computed = call_with_bytes("Compute", compute_request.SerializeAsString());
  EXPECT_EQ(computed.code(), absl::StatusCode::kNotFound) << computed;
  EXPECT_THAT(message_of(computed), HasSubstr(id));
  // Handles: another executor's value, an empty handle.
  auto other = executor({});
  RemoteExecutorValue foreign = ok_value(other->create_value(1));
  EXPECT_EQ(ex_->create_selection(foreign, 0).status().code(), absl::StatusCode::kInvalidArgument);
  RemoteExecutorValue moved = value(1);
  RemoteExecutorValue target = std::move(moved);
  EXPECT_FALSE(moved.valid());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_EQ(moved.compute().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(compute(target), Structure(1));
}

TEST_F(RemoteExecutorTest, HostileBytesAreInvalidArgumentAndTheWorkerStaysUp) {
  std::mt19937 rng(7);
  std::string random(4096, '\0');
  for (char& c : random) c = static_cast<char>(rng());
  v1::CreateValueRequest valid;
  structure_to_proto(Structure::tuple({1, Tensor::from_vector<float>({1, 2})}),
                     valid.mutable_structure());
  const std::string good = valid.SerializeAsString();
  v1::CreateValueRequest short_content = valid;
  short_content.mutable_structure()
      ->mutable_tuple()
      ->mutable_items(1)
      ->mutable_tensor()
      ->set_content("abc");
  v1::CreateValueRequest empty;
  v1::CreateCallRequest empty_argument;
  empty_argument.mutable_function_ref()->set_id("x");
  empty_argument.mutable_argument_ref();
  v1::CreateSelectionRequest negative;
  negative.mutable_source_ref()->set_id("x");
  negative.set_index(-1);
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"CreateValue", random, ""},
      {"CreateValue", good.substr(0, good.size() - 3), "malformed psflow.v1.CreateValueRequest"},
      {"CreateValue", std::string("\x12\x01\xc3", 3), "malformed"},  // function_name not UTF-8
      {"CreateValue", short_content.SerializeAsString(), "malformed structure"},
      {"CreateValue", empty.SerializeAsString(), "needs a value"},
      {"CreateCall", random, ""},
      {"CreateCall", empty_argument.SerializeAsString(), "argument_ref is present but empty"},
      {"CreateCall", "", "needs function_ref"},
      {"CreateStruct", random, ""},
      {"CreateSelection", random, ""},
      {"CreateSelection", negative.SerializeAsString(), "negative"},
      {"Compute", random, ""},
      {"Compute", "", "needs value_ref"},
      {"Dispose", random, ""},
  };
  const int64_t before = live_values();
  for (const auto& [method, bytes, needle] : cases) {
    SCOPED_TRACE(absl::StrCat(method, " ", needle));
    const absl::Status s = call_with_bytes(method, bytes);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(message_of(s), HasSubstr(needle));
  }
  EXPECT_EQ(live_values(), before);
  // The same bytes, intact, are a valid request from any protobuf client,
  // and the worker still serves.
  EXPECT_TRUE(call_with_bytes("CreateValue", good).ok());
  EXPECT_EQ(live_values(), before + 1);
  EXPECT_EQ(compute(value(Structure::tuple({1, 2}))), Structure::tuple({1, 2}));
  EXPECT_TRUE(get_status(*target_, "worker", 0, absl::Now() + absl::Seconds(30)).ok());
}

TEST_F(RemoteExecutorTest, DisposalIsBatched) {
  RemoteExecutorOptions options;
  options.dispose_batch_size = 5;
  auto ex = executor(options);
  const int64_t base = live_values();
  {
    std::vector<RemoteExecutorValue> values;
    for (int i = 0; i < 12; ++i) values.push_back(ok_value(ex->create_value(i)));
    EXPECT_EQ(live_values(), base + 12);
    for (int i = 0; i < 4; ++i) values.pop_back();
    EXPECT_EQ(live_values(), base + 12);  // 4 queued: below the batch size.
    values.pop_back();
    EXPECT_EQ(live_values(), base + 7);  // The 5th sends the batch.
  }                                      // 7 more destroyed: one batch of 5 sent, 2 queued.
  EXPECT_EQ(live_values(), base + 2);
  EXPECT_TRUE(ex->close().ok());  // Flushes the rest.
  EXPECT_EQ(live_values(), base);
  EXPECT_TRUE(ex->close().ok());  // Idempotent.
  // Moving a handle moves ownership; assigning over one disposes its value.
  RemoteExecutorOptions one;
  one.dispose_batch_size = 1;
  auto ex1 = executor(one);
  RemoteExecutorValue a = ok_value(ex1->create_value(1));
  RemoteExecutorValue b = std::move(a);
  EXPECT_EQ(live_values(), base + 1);
  b = ok_value(ex1->create_value(2));
  EXPECT_EQ(live_values(), base + 1);
  EXPECT_EQ(ok_value(b.compute()), Structure(2));
}

TEST_F(RemoteExecutorTest, StreamStructsKeepsEachMessageSmall) {
  constexpr int kMaxMessage = 64 << 10;
  const Structure big = Structure::dict(
      {{"a", floats(12000, 1.0f)},
       {"b", Structure::tuple(
                 {floats(12000, 2.0f),
                  Structure::list({Tensor::from_vector<int32_t>(std::vector<int32_t>(10000, 3)),
                                   Structure::tuple({})}),
                  5})},
       {"c", "text"}});
  ASSERT_GT(encode_structure(big).size(), static_cast<size_t>(2 * kMaxMessage));

  RemoteExecutorOptions whole;
  whole.max_message_bytes = kMaxMessage;
  auto plain = executor(whole);
  absl::StatusOr<RemoteExecutorValue> refused = plain->create_value(big);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
  EXPECT_THAT(message_of(refused.status()), HasSubstr("stream_structs"));

  RemoteExecutorOptions streamed = whole;
  streamed.stream_structs = true;
  auto stream = executor(streamed);
  RemoteExecutorValue sent = ok_value(stream->create_value(big));
  EXPECT_EQ(ok_value(sent.compute()), big);
  // Through a call, too: the result is fetched element by element.
  RemoteExecutorValue echoed =
      ok_value(stream->create_call(ok_value(stream->create_function("testing/echo")), sent));
  EXPECT_EQ(ok_value(echoed.compute()), big);

  // A result too large for one message fails whole and streams in parts.
  RemoteExecutorValue fill = ok_value(plain->create_function("testing/fill"));
  RemoteExecutorValue part = ok_value(plain->create_call(
      fill, ok_value(plain->create_value(Structure::tuple({int64_t{10000}, 1.0})))));
  RemoteExecutorValue parts = ok_value(plain->create_struct({part, part, part}));
  absl::StatusOr<Structure> too_big = parts.compute();
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted) << too_big.status();
  RemoteExecutorValue stream_fill = ok_value(stream->create_function("testing/fill"));
  RemoteExecutorValue stream_part = ok_value(stream->create_call(
      stream_fill, ok_value(stream->create_value(Structure::tuple({int64_t{10000}, 1.0})))));
  RemoteExecutorValue stream_parts =
      ok_value(stream->create_struct({stream_part, stream_part, stream_part}));
  const Structure expected =
      Structure::tuple({floats(10000, 1.0f), floats(10000, 1.0f), floats(10000, 1.0f)});
  EXPECT_EQ(ok_value(stream_parts.compute()), expected);
  // The temporary selections were disposed of (batched, flushed by close).
  ASSERT_TRUE(stream->close().ok());
  ASSERT_TRUE(plain->close().ok());
}

TEST_F(RemoteExecutorTest, CreateChecksTargetAndOptions) {
  RemoteExecutorOptions bad;
  bad.dispose_batch_size = 0;
  EXPECT_EQ(RemoteExecutor::create(*target_, bad).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RemoteExecutor::create("").status().code(), absl::StatusCode::kInvalidArgument);
  // A port nobody listens on: fails fast.
  absl::StatusOr<std::unique_ptr<RemoteExecutor>> nobody = RemoteExecutor::create("127.0.0.1:1");
  EXPECT_EQ(nobody.status().code(), absl::StatusCode::kUnavailable) << nobody.status();
  EXPECT_THAT(message_of(nobody.status()), HasSubstr("127.0.0.1:1"));
  EXPECT_EQ(ex_->target(), *target_);
}

}  // namespace
}  // namespace psflow::internal

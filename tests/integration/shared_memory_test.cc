// The same-host shared-memory data path against real ps processes: a client
// on the ps's host moves its large tensor contents through a session's
// region and gets exactly what the message path gives; a ps with shared
// memory off, and a request naming a session the ps does not hold, still
// serve (over gRPC), and a refused request changes nothing.
#include <grpcpp/generic/generic_stub.h>
#include <signal.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/port_reservation.h"
#include "ps/client/variable_client.h"
#include "ps/request/grpc_execute_codec.h"
#include "psflow/local_cluster.h"
#include "psflow/v1/task.grpc.pb.h"
#include "rpc/channel.h"
#include "rpc/grpc_status.h"
#include "rpc/shared_memory_region.h"
#include "tensor/codec.h"
#include "test_process.h"

namespace psflow::internal {
namespace {

using Op = v1::VariableOp;
using ::testing::HasSubstr;
using testing::test_environment;
using testing::TestProcess;

absl::Time deadline() { return absl::Now() + absl::Seconds(30); }

VariableOpArgs op(Op::Kind kind, std::string name, Tensor value = Tensor()) {
  VariableOpArgs a;
  a.kind = kind;
  a.variable = std::move(name);
  a.value = std::move(value);
  return a;
}

ExecuteBatch batch_of(std::vector<VariableOpArgs> ops) {
  ExecuteBatch b;
  b.ops = std::move(ops);
  return b;
}

Tensor matrix(float seed) {
  Tensor t(DType::kFloat32, {512, 784});  // 1.6 MB
  absl::Span<float> v = t.mutable_flat<float>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = seed + static_cast<float>(i % 997) * 0.125f;
  return t;
}

// Calls READ until the client reports a session (it asks for one in the
// background on its first call), at most 200 calls or 20 seconds.
bool wait_for_session(VariableClient& client, const std::string& variable) {
  const absl::Time until = absl::Now() + absl::Seconds(20);
  for (int i = 0; i < 200 && absl::Now() < until; ++i) {
    if (client.uses_shared_memory()) return true;
    if (!client.execute_batch(batch_of({op(Op::READ, variable)}), deadline()).ok()) return false;
  }
  return client.uses_shared_memory();
}

std::string ps_address(const LocalCluster& cluster) {
  return cluster.cluster_spec().task_address("ps", 0).value_or("");
}

std::unique_ptr<LocalCluster> start_ps() {
  LocalClusterOptions options;
  options.num_ps = 1;
  options.num_workers = 0;
  options.include_chief = false;
  options.binary_path = PSFLOW_BINARY_PATH;
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(options);
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  return cluster.ok() ? *std::move(cluster) : nullptr;
}

// Pushes and pulls through the region give the values the message path
// gives: a dense assign, assign_add and an SGD apply, read back in full and
// into a reused destination buffer, in float32 and bfloat16.
TEST(SharedMemoryTest, ALocalClientMovesContentsThroughTheRegionExactly) {
  std::unique_ptr<LocalCluster> cluster = start_ps();
  ASSERT_NE(cluster, nullptr);
  auto client = make_grpc_variable_client(ps_address(*cluster), task_name("ps", 0));
  const Tensor a = matrix(1.0f);
  const Tensor b = matrix(-2.5f);
  ASSERT_TRUE(client->execute_batch(batch_of({op(Op::CREATE, "w", a)}), deadline()).ok());
  ASSERT_TRUE(wait_for_session(*client, "w"));

  // assign_add: w = a + b, computed here the same way.
  Tensor expected = a.clone();
  {
    absl::Span<float> e = expected.mutable_flat<float>();
    auto bv = b.flat<float>();
    for (size_t i = 0; i < e.size(); ++i) e[i] += bv[i];
  }
  absl::StatusOr<std::vector<Tensor>> r =
      client->execute_batch(batch_of({op(Op::ASSIGN_ADD, "w", b), op(Op::READ, "w")}), deadline());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0], expected);
  EXPECT_TRUE(client->uses_shared_memory());

  // A read into a destination buffer the caller reuses.
  VariableOpArgs read = op(Op::READ, "w");
  read.result_buffer = TensorBuffer::allocate(a.byte_size());
  r = client->execute_batch(batch_of({read}), deadline());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0], expected);
  EXPECT_EQ((*r)[0].raw_data(), read.result_buffer->data());

  // bfloat16 both ways equals what narrowing and widening give here.
  VariableOpArgs assign = op(Op::ASSIGN, "w", b);
  assign.wire_dtype = WireDType::kBFloat16;
  VariableOpArgs narrow_read = op(Op::READ, "w");
  narrow_read.wire_dtype = WireDType::kBFloat16;
  r = client->execute_batch(batch_of({assign, narrow_read}), deadline());
  ASSERT_TRUE(r.ok()) << r.status();
  std::string narrowed;
  encode_tensor(b, WireDType::kBFloat16, &narrowed);
  const Tensor rounded = decode_tensor(narrowed).value();
  EXPECT_EQ((*r)[0], rounded);
  r = client->execute_batch(batch_of({op(Op::READ, "w")}), deadline());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0], rounded);  // The ps keeps what it was sent, widened.
}

// With PSFLOW_SHARED_MEMORY=off the ps offers no session: the client keeps
// to the message path and every call still works.
TEST(SharedMemoryTest, APsWithSharedMemoryOffServesOverGrpc) {
  absl::StatusOr<PortReservation> port = PortReservation::reserve("127.0.0.1");
  ASSERT_TRUE(port.ok()) << port.status();
  TestProcess ps({PSFLOW_BINARY_PATH, "server", "--reuse-port", "--job", "ps", "--task", "0",
                  "--cluster-json", absl::StrCat(R"({"ps": [")", port->address(), R"("]})")},
                 test_environment({{"PSFLOW_SHARED_MEMORY", "off"}}));
  ASSERT_GT(ps.pid(), 0);
  ASSERT_TRUE(wait_for_healthy(port->address(), task_name("ps", 0), deadline()).ok());
  auto client = make_grpc_variable_client(port->address(), task_name("ps", 0));
  const Tensor a = matrix(0.5f);
  ASSERT_TRUE(client->execute_batch(batch_of({op(Op::CREATE, "w", a)}), deadline()).ok());
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<std::vector<Tensor>> r =
        client->execute_batch(batch_of({op(Op::READ, "w")}), deadline());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)[0], a);
  }
  EXPECT_FALSE(client->uses_shared_memory());
  client.reset();
  ASSERT_TRUE(ps.signal(SIGTERM));
  EXPECT_EQ(ps.wait_exit_code(deadline()), 143);
  EXPECT_THAT(ps.read_stderr(deadline()), ::testing::Not(HasSubstr("Check failed")));
}

// Hand-made requests: a session the ps never gave, a boot id of another
// host. Each is refused with a clear status, the value stays as it was, and
// the ps keeps serving.
TEST(SharedMemoryTest, UnknownSessionsAndOtherHostsAreRefused) {
  std::unique_ptr<LocalCluster> cluster = start_ps();
  ASSERT_NE(cluster, nullptr);
  const std::string address = ps_address(*cluster);
  auto client = make_grpc_variable_client(address, task_name("ps", 0));
  const Tensor a = matrix(3.0f);
  ASSERT_TRUE(client->execute_batch(batch_of({op(Op::CREATE, "w", a)}), deadline()).ok());
  auto stub = v1::VariableService::NewStub(create_channel(address));

  v1::ExecuteRequest request;
  v1::VariableOp* add = request.add_ops();
  add->set_kind(Op::ASSIGN_ADD);
  add->set_variable("w");
  add->mutable_value()->set_dtype(v1::DT_FLOAT);
  add->mutable_value()->add_shape(512);
  add->mutable_value()->add_shape(784);
  add->mutable_value()->mutable_shared()->set_offset(4096);
  add->mutable_value()->mutable_shared()->set_length(512 * 784 * 4);
  request.mutable_shared_memory()->set_session("not a session");
  {
    grpc::ClientContext context;
    configure_context(context, deadline());
    v1::ExecuteResponse response;
    const grpc::Status s = stub->Execute(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("no such shared-memory session"));
    EXPECT_EQ(context.GetServerTrailingMetadata().count(kUnknownSharedMemorySessionMetadata), 1u);
  }
  // The same shared reference without any session: INVALID_ARGUMENT.
  request.clear_shared_memory();
  {
    grpc::ClientContext context;
    configure_context(context, deadline());
    v1::ExecuteResponse response;
    const grpc::Status s = stub->Execute(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("no shared-memory session"));
  }
  // A raw 1 MiB OpenSharedMemory claiming `boot_id` and `pid_namespace`.
  auto open_raw = [&](const std::string& boot_id, const std::string& pid_namespace) {
    grpc::ClientContext context;
    configure_context(context, deadline());
    v1::OpenSharedMemoryRequest open;
    open.set_boot_id(boot_id);
    if (!pid_namespace.empty()) open.set_pid_namespace(pid_namespace);
    open.set_bytes(1 << 20);
    v1::OpenSharedMemoryResponse response;
    return stub->OpenSharedMemory(&context, open, &response);
  };
  // Another host's boot id: no session.
  {
    const grpc::Status s = open_raw("00000000-0000-0000-0000-000000000000", "");
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("another host"));
  }
  // Another PID namespace: no session (it could not open the region).
  {
    const grpc::Status s = open_raw(host_boot_id(), "pid:[1]");
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("another PID namespace"));
  }
  // Closing a session that does not exist says so.
  {
    grpc::ClientContext context;
    configure_context(context, deadline());
    v1::CloseSharedMemoryRequest close;
    close.set_session("nothing");
    v1::CloseSharedMemoryResponse response;
    EXPECT_EQ(stub->CloseSharedMemory(&context, close, &response).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  absl::StatusOr<std::vector<Tensor>> r =
      client->execute_batch(batch_of({op(Op::READ, "w")}), deadline());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0], a);
}

// A session granted to one caller, used by a raw client that maps it
// itself: references outside the region are refused and change nothing;
// inside it they apply.
TEST(SharedMemoryTest, ARawClientUsingItsSessionIsBoundedByTheRegion) {
  std::unique_ptr<LocalCluster> cluster = start_ps();
  ASSERT_NE(cluster, nullptr);
  const std::string address = ps_address(*cluster);
  auto client = make_grpc_variable_client(address, task_name("ps", 0));
  const Tensor a = matrix(3.0f);
  ASSERT_TRUE(client->execute_batch(batch_of({op(Op::CREATE, "w", a)}), deadline()).ok());
  auto stub = v1::VariableService::NewStub(create_channel(address));
  v1::OpenSharedMemoryResponse session;
  {
    grpc::ClientContext context;
    configure_context(context, deadline());
    v1::OpenSharedMemoryRequest open;
    open.set_boot_id(host_boot_id());
    open.set_bytes(4 << 20);
    const grpc::Status s = stub->OpenSharedMemory(&context, open, &session);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> region =
      SharedMemoryRegion::attach(session.pid(), session.fd(), session.bytes(), session.session());
  ASSERT_TRUE(region.ok()) << region.status();
  const uint64_t length = a.byte_size();
  std::vector<float> ones(static_cast<size_t>(a.num_elements()), 1.0f);
  std::memcpy((*region)->data() + 8192, ones.data(), length);

  auto execute = [&](uint64_t offset) {
    v1::ExecuteRequest request;
    v1::VariableOp* add = request.add_ops();
    add->set_kind(Op::ASSIGN_ADD);
    add->set_variable("w");
    add->mutable_value()->set_dtype(v1::DT_FLOAT);
    add->mutable_value()->add_shape(512);
    add->mutable_value()->add_shape(784);
    add->mutable_value()->mutable_shared()->set_offset(offset);
    add->mutable_value()->mutable_shared()->set_length(length);
    request.mutable_shared_memory()->set_session(session.session());
    grpc::ClientContext context;
    configure_context(context, deadline());
    v1::ExecuteResponse response;
    return stub->Execute(&context, request, &response);
  };
  grpc::Status s = execute(session.bytes() - length / 2);  // runs past the end
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("outside the session's region"));
  s = execute(0);  // the header
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  absl::StatusOr<std::vector<Tensor>> r =
      client->execute_batch(batch_of({op(Op::READ, "w")}), deadline());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0], a);  // Unchanged.

  s = execute(8192);
  ASSERT_TRUE(s.ok()) << s.error_message();
  r = client->execute_batch(batch_of({op(Op::READ, "w")}), deadline());
  ASSERT_TRUE(r.ok()) << r.status();
  auto got = (*r)[0].flat<float>();
  auto before = a.flat<float>();
  for (size_t i = 0; i < got.size(); i += 997) ASSERT_EQ(got[i], before[i] + 1.0f) << i;
}

}  // namespace
}  // namespace psflow::internal

// VariableService over gRPC against a real ps process of a LocalCluster.
//
// Dense pull (READ) and push (ASSIGN) throughput is compared with raw
// loopback TCP measured by this binary in the same run (BM_RawTcp: one
// thread writes the same byte count into a loopback socket, another reads
// it into a reused buffer and answers with one byte, so each iteration is
// one round trip like an RPC). Latency of small requests is reported as
// percentiles. Dense pulls and pushes also report the ps's CPU time,
// context switches and minor page faults per op, and the client's page
// faults (a buffer not reused costs one fault per page). Embedding gathers
// and sparse Adagrad updates are reported as rows/s, plus rows per second of
// the ps process's CPU time (user + system), which is the "per ps core"
// figure independent of how busy the client is. Those run
// with in_flight = 1 (one request at a time: the Time column is then one
// request's latency) and in_flight = 4 (four requests outstanding through
// the client's async API, as pipelined steps of several workers would
// keep them; still one ps process). BM_GatherKernel and
// BM_SparseAdagradKernel apply the same ops to a VariableShard in this
// process without RPC, which separates the ps's row kernels from transport;
// BM_NonFiniteScanKernel times the ps's NaN / infinity check of the same
// gradient rows.
//
// The *Proto benchmarks use the v1::ExecuteRequest interface (tensors copied
// into TensorProto strings and out again on the client); the others the
// Tensor-native interface (ExecuteBatch), which moves payloads without those
// copies. Both talk to the same server path.
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/time/clock.h"
#include "base/logging.h"
#include "optimizer/optimizer_kernels.h"
#include "ps/client/client_test_util.h"
#include "ps/client/variable_client.h"
#include "ps/server/execute.h"
#include "ps/server/variable_shard.h"
#include "psflow/dynamic_embedding_options.h"
#include "psflow/local_cluster.h"
#include "psflow/tensor.h"
#include "tensor/codec.h"

namespace psflow::internal {
namespace {

using Op = v1::VariableOp;

constexpr absl::Duration kCallTimeout = absl::Seconds(60);

// --insecure on the command line: the ps and the client talk plaintext
// rather than the local cluster's default mutual TLS. Set once in main,
// before any benchmark runs.
bool insecure_transport = false;

// One ps task for the whole run, started on first use.
struct Ps {
  std::unique_ptr<LocalCluster> cluster;
  std::unique_ptr<VariableClient> client;
  pid_t pid = 0;
};

Ps& ps() {
  static Ps* instance = [] {
    auto* p = new Ps;
    LocalClusterOptions options;
    options.num_ps = 1;
    options.num_workers = 0;
    options.include_chief = false;
    options.binary_path = PSFLOW_BINARY_PATH;
    options.insecure = insecure_transport;
    absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(options);
    PSFLOW_CHECK(cluster.ok(), cluster.status().ToString());
    p->cluster = *std::move(cluster);
    absl::StatusOr<std::string> target = p->cluster->cluster_spec().task_address("ps", 0);
    PSFLOW_CHECK(target.ok(), target.status().ToString());
    p->client = make_grpc_variable_client(*target, task_name("ps", 0));
    absl::StatusOr<pid_t> pid = p->cluster->pid("ps", 0);
    PSFLOW_CHECK(pid.ok(), pid.status().ToString());
    p->pid = *pid;
    return p;
  }();
  return *instance;
}

absl::Time deadline() { return absl::Now() + kCallTimeout; }

// The fields of /proc/<pid>/stat after the command name (which may contain
// spaces, hence the search for its closing paren): field N of the whole
// line is element N - 3 here.
std::vector<std::string> stat_fields(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  std::getline(in, line);
  std::vector<std::string> fields;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return fields;
  std::string field;
  for (size_t i = close + 2; i <= line.size(); ++i) {
    if (i == line.size() || line[i] == ' ') {
      fields.push_back(field);
      field.clear();
    } else {
      field.push_back(line[i]);
    }
  }
  return fields;
}

// CPU time (user + system) the process has used so far, in seconds.
double process_cpu_seconds(pid_t pid) {
  const std::vector<std::string> fields = stat_fields(pid);
  // utime and stime are fields 14 and 15.
  if (fields.size() < 13) return 0;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return (std::stod(fields[11]) + std::stod(fields[12])) / ticks;
}

// Minor page faults of the process so far (field 10): each is a page of
// fresh memory touched, the cost of a buffer that is not reused.
double process_minor_faults(pid_t pid) {
  const std::vector<std::string> fields = stat_fields(pid);
  return fields.size() < 8 ? 0 : std::stod(fields[7]);
}

// Context switches (voluntary and not) of all the process's threads so far:
// each is a thread put to sleep or woken, the cost gRPC's threading adds to
// a request beyond its copies.
double process_context_switches(pid_t pid) {
  double total = 0;
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator(absl::StrCat("/proc/", pid, "/task"), ec)) {
    std::ifstream in(task.path() / "status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0 ||
          line.rfind("nonvoluntary_ctxt_switches:", 0) == 0) {
        total += std::stod(line.substr(line.find(':') + 1));
      }
    }
  }
  return total;
}

// The ps process's CPU time and context switches per iteration of a
// benchmark, as counters.
class PsCost {
 public:
  PsCost()
      : cpu_(process_cpu_seconds(ps().pid)),
        switches_(process_context_switches(ps().pid)),
        ps_faults_(process_minor_faults(ps().pid)),
        client_faults_(process_minor_faults(::getpid())) {}

  // Sets the counters and returns the ps CPU seconds used since construction.
  double report(benchmark::State& state, double ops) const {
    const double cpu = process_cpu_seconds(ps().pid) - cpu_;
    if (ops <= 0) return cpu;
    state.counters["ps_cpu_us_per_op"] = cpu * 1e6 / ops;
    state.counters["ps_switches_per_op"] = (process_context_switches(ps().pid) - switches_) / ops;
    state.counters["ps_faults_per_op"] = (process_minor_faults(ps().pid) - ps_faults_) / ops;
    state.counters["client_faults_per_op"] =
        (process_minor_faults(::getpid()) - client_faults_) / ops;
    return cpu;
  }

 private:
  const double cpu_;
  const double switches_;
  const double ps_faults_;
  const double client_faults_;
};

Tensor make_floats(int64_t n, float seed) {
  Tensor t(DType::kFloat32, {n});
  absl::Span<float> v = t.mutable_flat<float>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = seed + static_cast<float>(i % 1000);
  return t;
}

void add_proto_op(v1::ExecuteRequest& request, Op::Kind kind, const std::string& name,
                  const Tensor* value = nullptr, const Tensor* ids = nullptr) {
  Op* op = request.add_ops();
  op->set_kind(kind);
  op->set_variable(name);
  if (value != nullptr) tensor_to_proto(*value, op->mutable_value());
  if (ids != nullptr) tensor_to_proto(*ids, op->mutable_ids());
}

bool check(benchmark::State& state, const absl::Status& status) {
  if (status.ok()) return true;
  state.SkipWithError(status.ToString().c_str());
  return false;
}

void create_variable(benchmark::State& state, const std::string& name, const Tensor& value) {
  v1::ExecuteRequest request;
  add_proto_op(request, Op::CREATE, name, &value);
  check(state, testing::execute_proto(*ps().client, std::move(request), deadline()).status());
}

// --- raw TCP baseline ------------------------------------------------------

// A connected loopback TCP pair; the peer thread reads `bytes` per round and
// answers with one byte.
class RawTcpPair {
 public:
  explicit RawTcpPair(size_t bytes) : bytes_(bytes) {
    const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    PSFLOW_CHECK(::bind(listener, reinterpret_cast<sockaddr*>(&addr), len) == 0);
    PSFLOW_CHECK(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    PSFLOW_CHECK(::listen(listener, 1) == 0);
    sender_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    PSFLOW_CHECK(::connect(sender_, reinterpret_cast<sockaddr*>(&addr), len) == 0);
    receiver_ = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    PSFLOW_CHECK(receiver_ >= 0);
    ::close(listener);
    const int one = 1;
    ::setsockopt(sender_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ::setsockopt(receiver_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    send_buffer_.assign(bytes_, 7);
    peer_ = std::thread([this] { serve(); });
  }

  ~RawTcpPair() {
    ::shutdown(sender_, SHUT_RDWR);
    peer_.join();
    ::close(sender_);
    ::close(receiver_);
  }

  // One round: send the bytes, wait for the answer.
  bool round() {
    size_t sent = 0;
    while (sent < bytes_) {
      const ssize_t n = ::send(sender_, send_buffer_.data() + sent, bytes_ - sent, MSG_NOSIGNAL);
      if (n <= 0) return false;
      sent += static_cast<size_t>(n);
    }
    char ack = 0;
    return ::recv(sender_, &ack, 1, MSG_WAITALL) == 1;
  }

 private:
  void serve() {
    std::vector<char> buffer(bytes_);
    for (;;) {
      size_t got = 0;
      while (got < bytes_) {
        const ssize_t n = ::recv(receiver_, buffer.data() + got, bytes_ - got, 0);
        if (n <= 0) return;
        got += static_cast<size_t>(n);
      }
      const char ack = 1;
      if (::send(receiver_, &ack, 1, MSG_NOSIGNAL) != 1) return;
    }
  }

  const size_t bytes_;
  int sender_ = -1;
  int receiver_ = -1;
  std::vector<char> send_buffer_;
  std::thread peer_;
};

void set_bytes(benchmark::State& state) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

void set_tcp_baseline(benchmark::State& state) {
  state.SetLabel(absl::StrCat("baseline=BM_RawTcp/", state.range(0), "/real_time"));
}

void BM_RawTcp(benchmark::State& state) {
  RawTcpPair pair(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    if (!pair.round()) {
      state.SkipWithError("loopback socket failed");
      break;
    }
  }
  set_bytes(state);
}

// --- dense pull and push ---------------------------------------------------

std::string dense_name(benchmark::State& state) { return absl::StrCat("dense_", state.range(0)); }

void BM_PullProto(benchmark::State& state) {
  const std::string name = dense_name(state);
  create_variable(state, name, make_floats(state.range(0) / 4, 1));
  for (auto _ : state) {
    v1::ExecuteRequest request;
    add_proto_op(request, Op::READ, name);
    absl::StatusOr<v1::ExecuteResponse> response =
        testing::execute_proto(*ps().client, std::move(request), deadline());
    if (!check(state, response.status())) break;
    absl::StatusOr<Tensor> value = tensor_from_proto(response->mutable_results(0));
    if (!check(state, value.status())) break;
    benchmark::DoNotOptimize(value->raw_data());
  }
  set_bytes(state);
  set_tcp_baseline(state);
}

void BM_PushProto(benchmark::State& state) {
  const std::string name = dense_name(state);
  const Tensor value = make_floats(state.range(0) / 4, 2);
  create_variable(state, name, value);
  for (auto _ : state) {
    v1::ExecuteRequest request;
    add_proto_op(request, Op::ASSIGN, name, &value);
    if (!check(state,
               testing::execute_proto(*ps().client, std::move(request), deadline()).status()))
      break;
  }
  set_bytes(state);
  set_tcp_baseline(state);
}

VariableOpArgs make_op(Op::Kind kind, const std::string& name, Tensor value = Tensor(),
                       Tensor ids = Tensor()) {
  VariableOpArgs op;
  op.kind = kind;
  op.variable = name;
  op.value = std::move(value);
  op.ids = std::move(ids);
  return op;
}

void BM_Pull(benchmark::State& state) {
  const std::string name = dense_name(state);
  create_variable(state, name, make_floats(state.range(0) / 4, 1));
  const PsCost cost;
  for (auto _ : state) {
    ExecuteBatch batch;
    batch.ops.push_back(make_op(Op::READ, name));
    absl::StatusOr<std::vector<Tensor>> results =
        ps().client->execute_batch(std::move(batch), deadline());
    if (!check(state, results.status())) break;
    benchmark::DoNotOptimize((*results)[0].raw_data());
  }
  cost.report(state, static_cast<double>(state.iterations()));
  set_bytes(state);
  set_tcp_baseline(state);
}

void BM_Push(benchmark::State& state) {
  const std::string name = dense_name(state);
  const Tensor value = make_floats(state.range(0) / 4, 2);
  create_variable(state, name, value);
  const PsCost cost;
  for (auto _ : state) {
    ExecuteBatch batch;
    batch.ops.push_back(make_op(Op::ASSIGN, name, value));
    if (!check(state, ps().client->execute_batch(std::move(batch), deadline()).status())) break;
  }
  cost.report(state, static_cast<double>(state.iterations()));
  set_bytes(state);
  set_tcp_baseline(state);
}

// Each iteration runs one raw loopback TCP round and one pull (or push) of
// the same size back to back, so both see the same moment's load on a
// shared host; the counter ratio_vs_raw_tcp is their summed times' ratio
// (raw / op: 1 means as fast as raw TCP). The separate BM_RawTcp and
// BM_Pull/BM_Push runs measure each alone, minutes apart, and their ratio
// swings by +-10% with the host's load; this one is the figure to compare
// with a target. Time and bytes/s are the op's alone.
void BM_PairedWithRawTcp(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  const bool push = state.range(1) == 1;
  const std::string name = absl::StrCat("paired_", bytes);
  const Tensor value = make_floats(bytes / 4, 3);
  create_variable(state, name, value);
  RawTcpPair pair(static_cast<size_t>(bytes));
  absl::Duration raw_total, op_total;
  const PsCost cost;
  for (auto _ : state) {
    const absl::Time t0 = absl::Now();
    if (!pair.round()) {
      state.SkipWithError("loopback socket failed");
      break;
    }
    const absl::Time t1 = absl::Now();
    ExecuteBatch batch;
    batch.ops.push_back(push ? make_op(Op::ASSIGN, name, value) : make_op(Op::READ, name));
    absl::StatusOr<std::vector<Tensor>> results =
        ps().client->execute_batch(std::move(batch), deadline());
    const absl::Time t2 = absl::Now();
    if (!check(state, results.status())) break;
    raw_total += t1 - t0;
    op_total += t2 - t1;
    state.SetIterationTime(absl::ToDoubleSeconds(t2 - t1));
  }
  cost.report(state, static_cast<double>(state.iterations()));
  set_bytes(state);
  if (op_total > absl::ZeroDuration()) {
    state.counters["ratio_vs_raw_tcp"] = absl::FDivDuration(raw_total, op_total);
  }
}

// --- small-request latency -------------------------------------------------

void set_percentiles(benchmark::State& state, std::vector<double>& micros) {
  if (micros.empty()) return;
  std::sort(micros.begin(), micros.end());
  auto at = [&](double q) {
    return micros[std::min(micros.size() - 1, static_cast<size_t>(q * micros.size()))];
  };
  state.counters["p50_us"] = at(0.50);
  state.counters["p99_us"] = at(0.99);
}

void BM_ReadScalarLatencyProto(benchmark::State& state) {
  create_variable(state, "scalar", Tensor::scalar<float>(1));
  std::vector<double> micros;
  for (auto _ : state) {
    const absl::Time start = absl::Now();
    v1::ExecuteRequest request;
    add_proto_op(request, Op::READ, "scalar");
    absl::StatusOr<v1::ExecuteResponse> response =
        testing::execute_proto(*ps().client, std::move(request), deadline());
    if (!check(state, response.status())) break;
    micros.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
  }
  set_percentiles(state, micros);
}

void BM_ReadScalarLatency(benchmark::State& state) {
  create_variable(state, "scalar", Tensor::scalar<float>(1));
  std::vector<double> micros;
  for (auto _ : state) {
    const absl::Time start = absl::Now();
    ExecuteBatch batch;
    batch.ops.push_back(make_op(Op::READ, "scalar"));
    absl::StatusOr<std::vector<Tensor>> results =
        ps().client->execute_batch(std::move(batch), deadline());
    if (!check(state, results.status())) break;
    micros.push_back(absl::ToDoubleMicroseconds(absl::Now() - start));
  }
  set_percentiles(state, micros);
}

// --- embeddings ------------------------------------------------------------

constexpr int64_t kTableRows = 100000;
constexpr int64_t kIdsPerRequest = 1024;

Tensor random_ids(uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> dist(0, kTableRows - 1);
  std::vector<int64_t> ids(kIdsPerRequest);
  for (int64_t& id : ids) id = dist(gen);
  return Tensor::from_vector<int64_t>(ids);
}

std::string table_name(int64_t dim) { return absl::StrCat("table_", dim); }

// A [kTableRows, dim] float32 table of 0.5.
Tensor table_value(int64_t dim) {
  Tensor table(DType::kFloat32, {kTableRows, dim});
  table.mutable_vec<float>().setConstant(0.5f);
  return table;
}

void create_table(benchmark::State& state, int64_t dim) {
  create_variable(state, table_name(dim), table_value(dim));
}

// What a sparse Adagrad request carries: 8 sets of random ids (seeds
// 100-107) and one gradient of 0.01s.
struct SparseAdagradInputs {
  explicit SparseAdagradInputs(int64_t dim) : grads(DType::kFloat32, {kIdsPerRequest, dim}) {
    for (uint32_t i = 0; i < 8; ++i) ids.push_back(random_ids(100 + i));
    grads.mutable_vec<float>().setConstant(0.01f);
    adagrad.kind = OptimizerConfig::Kind::kAdagrad;
  }
  std::vector<Tensor> ids;
  Tensor grads;
  OptimizerConfig adagrad;
};

// Keeps `in_flight` requests outstanding per iteration (made by `make`) and
// reports rows/s and rows per ps CPU second.
template <typename MakeRequest>
void run_rows(benchmark::State& state, MakeRequest make) {
  const int in_flight = static_cast<int>(state.range(1));
  const PsCost cost;
  std::atomic<bool> failed{false};
  std::string error;
  for (auto _ : state) {
    absl::BlockingCounter pending(in_flight);
    for (int i = 0; i < in_flight; ++i) {
      auto done = [&](const auto& r) {
        if (!r.ok() && !failed.exchange(true)) error = r.status().ToString();
        pending.DecrementCount();
      };
      auto request = make(i);
      if constexpr (std::is_same_v<decltype(request), ExecuteBatch>) {
        ps().client->execute_batch_async(
            std::move(request), deadline(),
            [done](absl::StatusOr<std::vector<Tensor>> r) { done(r); });
      } else {
        testing::execute_proto_async(*ps().client, std::move(request), deadline(),
                                     [done](absl::StatusOr<v1::ExecuteResponse> r) { done(r); });
      }
    }
    pending.Wait();
    if (failed) {
      state.SkipWithError(error.c_str());
      break;
    }
  }
  const double cpu = cost.report(state, static_cast<double>(state.iterations()) * in_flight);
  const double rows = static_cast<double>(state.iterations()) * in_flight * kIdsPerRequest;
  state.SetItemsProcessed(static_cast<int64_t>(rows));
  if (cpu > 0) state.counters["rows_per_ps_cpu_s"] = rows / cpu;
}

void BM_Gather(benchmark::State& state) {
  const int64_t dim = state.range(0);
  create_table(state, dim);
  std::vector<Tensor> ids;
  for (uint32_t i = 0; i < 8; ++i) ids.push_back(random_ids(i));
  run_rows(state, [&](int i) {
    ExecuteBatch batch;
    batch.ops.push_back(
        make_op(Op::GATHER, table_name(dim), Tensor(), ids[static_cast<size_t>(i)]));
    return batch;
  });
}

void BM_SparseAdagrad(benchmark::State& state) {
  const int64_t dim = state.range(0);
  create_table(state, dim);
  const SparseAdagradInputs in(dim);
  run_rows(state, [&](int i) {
    ExecuteBatch batch;
    batch.optimizers.push_back(in.adagrad);
    VariableOpArgs op =
        make_op(Op::APPLY_SPARSE, table_name(dim), in.grads, in.ids[static_cast<size_t>(i)]);
    op.learning_rate = 0.01;
    batch.ops.push_back(std::move(op));
    return batch;
  });
}

// The same requests on a dynamic embedding table (docs/embeddings.md)
// holding keys 0 .. kTableRows-1: DE_LOOKUP and DE_APPLY (Adagrad) of the
// same random keys, against BM_Gather and BM_SparseAdagrad on the static
// table of the same size in the same run.
std::string dynamic_table_name(int64_t dim) { return absl::StrCat("dynamic_", dim); }

void create_dynamic_table(benchmark::State& state, int64_t dim) {
  DynamicEmbeddingOptions options;
  options.dim = dim;
  options.optimizer.kind = OptimizerConfig::Kind::kAdagrad;
  ExecuteBatch create;
  VariableOpArgs op;
  op.kind = Op::DE_CREATE;
  op.variable = dynamic_table_name(dim);
  op.table = table_options_to_bytes(options);
  create.ops.push_back(std::move(op));
  if (!check(state, ps().client->execute_batch(std::move(create), deadline()).status())) return;
  std::vector<int64_t> all(kTableRows);
  for (int64_t i = 0; i < kTableRows; ++i) all[static_cast<size_t>(i)] = i;
  ExecuteBatch fill;
  VariableOpArgs lookup;
  lookup.kind = Op::DE_LOOKUP;
  lookup.variable = dynamic_table_name(dim);
  lookup.ids = Tensor::from_vector<int64_t>(all);
  fill.ops.push_back(std::move(lookup));
  (void)check(state, ps().client->execute_batch(std::move(fill), deadline()).status());
}

std::string rpc_baseline(const char* name, const benchmark::State& state) {
  return absl::StrCat("baseline=", name, "/dim:", state.range(0), "/in_flight:", state.range(1),
                      "/real_time");
}

void BM_DynamicLookup(benchmark::State& state) {
  const int64_t dim = state.range(0);
  create_dynamic_table(state, dim);
  std::vector<Tensor> ids;
  for (uint32_t i = 0; i < 8; ++i) ids.push_back(random_ids(i));
  int64_t step = 0;
  run_rows(state, [&](int i) {
    ExecuteBatch batch;
    VariableOpArgs op =
        make_op(Op::DE_LOOKUP, dynamic_table_name(dim), Tensor(), ids[static_cast<size_t>(i)]);
    op.step = ++step;
    batch.ops.push_back(std::move(op));
    return batch;
  });
  state.SetLabel(rpc_baseline("BM_Gather", state));
}

void BM_DynamicSparseAdagrad(benchmark::State& state) {
  const int64_t dim = state.range(0);
  create_dynamic_table(state, dim);
  const SparseAdagradInputs in(dim);
  int64_t step = 0;
  run_rows(state, [&](int i) {
    ExecuteBatch batch;
    batch.optimizers.push_back(in.adagrad);
    VariableOpArgs op =
        make_op(Op::DE_APPLY, dynamic_table_name(dim), in.grads, in.ids[static_cast<size_t>(i)]);
    op.learning_rate = 0.01;
    op.step = ++step;
    batch.ops.push_back(std::move(op));
    return batch;
  });
  state.SetLabel(rpc_baseline("BM_SparseAdagrad", state));
}

// --- the ps's row kernels alone -------------------------------------------

// The same gathers and sparse Adagrad updates applied to a VariableShard in
// this process, on one thread, without RPC: what the ps's per-row cost is
// made of when the transport is taken away (scattered rows of a table far
// larger than the caches, so mostly memory latency and bandwidth).
void BM_GatherKernel(benchmark::State& state) {
  const int64_t dim = state.range(0);
  VariableShard shard("table", table_value(dim));
  std::vector<Tensor> ids;
  for (uint32_t i = 0; i < 8; ++i) ids.push_back(random_ids(i));
  size_t i = 0;
  for (auto _ : state) {
    absl::StatusOr<Tensor> rows = shard.gather(ids[i++ % ids.size()]);
    if (!check(state, rows.status())) break;
    benchmark::DoNotOptimize(rows->raw_data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kIdsPerRequest);
}

void BM_SparseAdagradKernel(benchmark::State& state) {
  const int64_t dim = state.range(0);
  VariableShard shard("table", table_value(dim));
  const SparseAdagradInputs in(dim);
  size_t i = 0;
  for (auto _ : state) {
    if (!check(state, shard.apply_sparse_gradient(in.adagrad, 0.01, in.ids[i++ % in.ids.size()],
                                                  in.grads))) {
      break;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kIdsPerRequest);
}

// The ps's check of an update for NaN and infinity (NonFinitePolicy::
// kReject) over one sparse request's gradient rows (1,024 ids of `dim`
// floats): the cost it adds to BM_SparseAdagrad, next to the row kernel
// above.
void BM_NonFiniteScanKernel(benchmark::State& state) {
  const SparseAdagradInputs in(state.range(0));
  const float* rows = in.grads.flat<float>().data();
  const int64_t n = in.grads.num_elements();
  for (auto _ : state) benchmark::DoNotOptimize(internal::first_non_finite(rows, n));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kIdsPerRequest);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * n * 4);
}

void sizes(benchmark::internal::Benchmark* b) {
  b->Arg(4 << 10)->Arg(256 << 10)->Arg(4 << 20)->Arg(64 << 20)->UseRealTime();
}

void embedding_args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"dim", "in_flight"});
  for (int64_t dim : {16, 64}) {
    for (int64_t in_flight : {1, 4}) b->Args({dim, in_flight});
  }
  b->UseRealTime();
}

BENCHMARK(BM_RawTcp)->Apply(sizes);
BENCHMARK(BM_Pull)->Apply(sizes);
BENCHMARK(BM_Push)->Apply(sizes);
BENCHMARK(BM_PairedWithRawTcp)
    ->ArgNames({"bytes", "push"})
    ->ArgsProduct({{256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20}, {0, 1}})
    ->UseManualTime();
BENCHMARK(BM_ReadScalarLatency)->UseRealTime();
BENCHMARK(BM_Gather)->Apply(embedding_args);
BENCHMARK(BM_SparseAdagrad)->Apply(embedding_args);
BENCHMARK(BM_DynamicLookup)->Apply(embedding_args);
BENCHMARK(BM_DynamicSparseAdagrad)->Apply(embedding_args);
BENCHMARK(BM_GatherKernel)->ArgName("dim")->Arg(16)->Arg(64)->UseRealTime();
BENCHMARK(BM_SparseAdagradKernel)->ArgName("dim")->Arg(16)->Arg(64)->UseRealTime();
BENCHMARK(BM_NonFiniteScanKernel)->ArgName("dim")->Arg(16)->Arg(64)->UseRealTime();
BENCHMARK(BM_PullProto)->Apply(sizes);
BENCHMARK(BM_PushProto)->Apply(sizes);
BENCHMARK(BM_ReadScalarLatencyProto)->UseRealTime();

}  // namespace
}  // namespace psflow::internal

// Defaults for a shared, noisy host: five repetitions of every benchmark in
// random order, so that a burst of load elsewhere hits a baseline and the
// benchmarks compared with it alike; run_benchmarks.py reports medians.
// Flags on the command line override them. --insecure (not a benchmark
// flag) runs the ps and the client without TLS.
int main(int argc, char** argv) {
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && std::string(argv[i]) == "--insecure") {
      psflow::internal::insecure_transport = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  static char repetitions[] = "--benchmark_repetitions=5";
  static char interleave[] = "--benchmark_enable_random_interleaving=true";
  bool explicit_repetitions = false;
  for (int i = 1; i < argc; ++i) {
    explicit_repetitions |= std::string(argv[i]).rfind("--benchmark_repetitions", 0) == 0;
  }
  if (!explicit_repetitions) {
    args.insert(args.begin() + 1, {repetitions, interleave});
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

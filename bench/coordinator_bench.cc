// Coordinator overhead: how many no-op closures per second schedule() +
// fetch() sustain, and the round trip of one closure.
//
// In-process workers cost no network, so those figures are the ceiling the
// coordinator itself allows. BM_WorkerRoundTrip drives one in-process worker
// directly (no queue, no dispatcher): the floor for BM_RoundTrip.
//
// The BM_Grpc* benchmarks run real worker processes (a LocalCluster of
// 1 ps + 2 workers on loopback); targets: >= 50,000 closures/s with 32 in
// flight per worker, and a p50 round trip of at most 100 us where the
// host's own loopback round trip allows it. Their baseline is BM_GrpcUnaryFloor, one plain unary
// gRPC call (GetStatus) to the same worker: what an RPC per closure would cost (the coordinator
// sends closures on one stream per worker instead). BM_TcpPingPong is the floor under both: one
// byte each way over a raw loopback TCP connection between two threads, what this host's scheduler
// and loopback cost per round trip before any RPC layer.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "coordinator/in_process_worker.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/strategy.h"
#include "rpc/channel.h"

namespace psflow::internal {
namespace {

PSFLOW_FUNCTION(bench_noop, ctx, args) { return Structure::none(); }

std::unique_ptr<ClusterCoordinator> make_coordinator(benchmark::State& state, int workers) {
  absl::StatusOr<std::unique_ptr<ClusterCoordinator>> c =
      ClusterCoordinator::create_in_process(workers);
  if (!c.ok()) {
    state.SkipWithError(c.status().ToString().c_str());
    return nullptr;
  }
  return *std::move(c);
}

double micros_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
      .count();
}

void set_percentiles(benchmark::State& state, std::vector<double>& micros) {
  if (micros.empty()) return;
  std::sort(micros.begin(), micros.end());
  auto at = [&](double q) {
    return micros[std::min(micros.size() - 1, static_cast<size_t>(q * micros.size()))];
  };
  state.counters["p50_us"] = at(0.50);
  state.counters["p99_us"] = at(0.99);
}

// Schedules a batch of range(0) closures on 2 workers, then fetches each.
void BM_ScheduleFetchThroughput(benchmark::State& state) {
  auto coordinator = make_coordinator(state, 2);
  if (coordinator == nullptr) return;
  const auto batch = static_cast<size_t>(state.range(0));
  std::vector<RemoteValue> results;
  results.reserve(batch);
  for (auto _ : state) {
    results.clear();
    for (size_t i = 0; i < batch; ++i) {
      absl::StatusOr<RemoteValue> r = coordinator->schedule("bench_noop");
      if (!r.ok()) {
        state.SkipWithError(r.status().ToString().c_str());
        return;
      }
      results.push_back(*std::move(r));
    }
    for (const RemoteValue& r : results) {
      absl::StatusOr<Structure> v = r.fetch();
      if (!v.ok()) {
        state.SkipWithError(v.status().ToString().c_str());
        return;
      }
      benchmark::DoNotOptimize(v);
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * batch));
}
BENCHMARK(BM_ScheduleFetchThroughput)->Arg(1000)->UseRealTime();

// The usual training loop: schedule steps, then join (no fetch).
void BM_ScheduleJoinThroughput(benchmark::State& state) {
  auto coordinator = make_coordinator(state, 2);
  if (coordinator == nullptr) return;
  const auto batch = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    for (size_t i = 0; i < batch; ++i) {
      if (!coordinator->schedule("bench_noop").ok()) {
        state.SkipWithError("schedule failed");
        return;
      }
    }
    if (!coordinator->join().ok()) {
      state.SkipWithError("join failed");
      return;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * batch));
}
BENCHMARK(BM_ScheduleJoinThroughput)->Arg(1000)->UseRealTime();

// schedule() then fetch() of one closure at a time.
void BM_RoundTrip(benchmark::State& state) {
  auto coordinator = make_coordinator(state, 2);
  if (coordinator == nullptr) return;
  std::vector<double> micros;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<RemoteValue> r = coordinator->schedule("bench_noop");
    if (!r.ok() || !r->fetch().ok()) {
      state.SkipWithError("closure failed");
      return;
    }
    micros.push_back(micros_since(start));
  }
  set_percentiles(state, micros);
  state.SetLabel("baseline=BM_WorkerRoundTrip/real_time");
}
BENCHMARK(BM_RoundTrip)->UseRealTime();

// One in-process worker driven directly: the thread hand-offs alone.
void BM_WorkerRoundTrip(benchmark::State& state) {
  InProcessWorker worker(0, FunctionRegistry::global());
  std::vector<double> micros;
  uint64_t id = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    absl::Notification done;
    bool ok = false;
    worker.run_async(RunRequest{++id, "bench_noop", Structure()}, [&](RunResult result) {
      ok = result.transport.ok() && result.output.ok();
      done.Notify();
    });
    done.WaitForNotification();
    if (!ok) {
      state.SkipWithError("run failed");
      return;
    }
    micros.push_back(micros_since(start));
  }
  set_percentiles(state, micros);
}
BENCHMARK(BM_WorkerRoundTrip)->UseRealTime();

// One cluster of real processes for every gRPC benchmark of this binary.
LocalCluster* cluster(benchmark::State& state) {
  static LocalCluster* shared = [] {
    LocalClusterOptions options;
    options.num_ps = 1;
    options.num_workers = 2;
    options.binary_path = PSFLOW_TESTING_BINARY_PATH;
    absl::StatusOr<std::unique_ptr<LocalCluster>> c = LocalCluster::start(options);
    return c.ok() ? c->release() : nullptr;
  }();
  if (shared == nullptr) state.SkipWithError("the local cluster did not start");
  return shared;
}

struct GrpcCoordinator {
  std::unique_ptr<ParameterServerStrategy> strategy;
  std::unique_ptr<ClusterCoordinator> coordinator;
};

std::optional<GrpcCoordinator> make_grpc_coordinator(benchmark::State& state,
                                                     int max_in_flight = 1) {
  LocalCluster* c = cluster(state);
  if (c == nullptr) return std::nullopt;
  auto strategy =
      ParameterServerStrategy::create(SimpleClusterResolver(c->cluster_spec(), "chief", 0));
  if (!strategy.ok()) {
    state.SkipWithError(strategy.status().ToString().c_str());
    return std::nullopt;
  }
  ClusterCoordinatorOptions options;
  options.max_in_flight_per_worker = max_in_flight;
  auto coordinator = ClusterCoordinator::create(**strategy, options);
  if (!coordinator.ok()) {
    state.SkipWithError(coordinator.status().ToString().c_str());
    return std::nullopt;
  }
  return GrpcCoordinator{*std::move(strategy), *std::move(coordinator)};
}

// range(0) closures per round; range(1) closures in flight per worker (1 is
// TF's dispatch).
void BM_GrpcScheduleFetchThroughput(benchmark::State& state) {
  std::optional<GrpcCoordinator> g = make_grpc_coordinator(state, static_cast<int>(state.range(1)));
  if (!g.has_value()) return;
  const auto batch = static_cast<size_t>(state.range(0));
  std::vector<RemoteValue> results;
  results.reserve(batch);
  for (auto _ : state) {
    results.clear();
    for (size_t i = 0; i < batch; ++i) {
      absl::StatusOr<RemoteValue> r = g->coordinator->schedule("testing/echo");
      if (!r.ok()) {
        state.SkipWithError(r.status().ToString().c_str());
        return;
      }
      results.push_back(*std::move(r));
    }
    for (const RemoteValue& r : results) {
      if (!r.fetch().ok()) {
        state.SkipWithError(r.fetch().status().ToString().c_str());
        return;
      }
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * batch));
}
BENCHMARK(BM_GrpcScheduleFetchThroughput)
    ->Args({1000, 1})
    ->Args({1000, 8})
    ->Args({1000, 32})
    ->UseRealTime();

void BM_GrpcRoundTrip(benchmark::State& state) {
  std::optional<GrpcCoordinator> g = make_grpc_coordinator(state);
  if (!g.has_value()) return;
  std::vector<double> micros;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<RemoteValue> r = g->coordinator->schedule("testing/echo");
    if (!r.ok() || !r->fetch().ok()) {
      state.SkipWithError("closure failed");
      return;
    }
    micros.push_back(micros_since(start));
  }
  set_percentiles(state, micros);
  state.SetLabel("baseline=BM_GrpcUnaryFloor/real_time");
}
BENCHMARK(BM_GrpcRoundTrip)->UseRealTime();

// One unary GetStatus call to worker 0 over a kept channel.
void BM_GrpcUnaryFloor(benchmark::State& state) {
  LocalCluster* c = cluster(state);
  if (c == nullptr) return;
  absl::StatusOr<std::string> address = c->cluster_spec().task_address("worker", 0);
  if (!address.ok()) {
    state.SkipWithError(address.status().ToString().c_str());
    return;
  }
  std::shared_ptr<grpc::Channel> channel = create_channel(*address);
  std::vector<double> micros;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<v1::GetStatusResponse> status =
        get_status(channel, *address, "worker", 0, absl::Now() + absl::Seconds(10));
    if (!status.ok()) {
      state.SkipWithError(status.status().ToString().c_str());
      return;
    }
    micros.push_back(micros_since(start));
  }
  set_percentiles(state, micros);
  state.SetLabel("baseline=BM_TcpPingPong/real_time");
}
BENCHMARK(BM_GrpcUnaryFloor)->UseRealTime();

// A byte to an echo thread and back over loopback TCP (TCP_NODELAY both
// ends), blocking reads: the host's floor for any RPC round trip.
void BM_TcpPingPong(benchmark::State& state) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    state.SkipWithError("could not listen on loopback");
    if (listener >= 0) close(listener);
    return;
  }
  const int client = socket(AF_INET, SOCK_STREAM, 0);
  if (client < 0 || connect(client, reinterpret_cast<sockaddr*>(&address), length) != 0) {
    state.SkipWithError("could not connect on loopback");
    close(listener);
    if (client >= 0) close(client);
    return;
  }
  const int server = accept(listener, nullptr, nullptr);
  close(listener);
  const int one = 1;
  setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // Echoes until the client closes its end (a read of 0).
  std::thread echo([server] {
    char byte;
    while (read(server, &byte, 1) == 1) {
      if (write(server, &byte, 1) != 1) break;
    }
  });
  std::vector<double> micros;
  char byte = 'x';
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    if (write(client, &byte, 1) != 1 || read(client, &byte, 1) != 1) {
      state.SkipWithError("loopback ping-pong failed");
      break;
    }
    micros.push_back(micros_since(start));
  }
  shutdown(client, SHUT_WR);
  echo.join();
  close(client);
  close(server);
  set_percentiles(state, micros);
}
BENCHMARK(BM_TcpPingPong)->UseRealTime();

}  // namespace
}  // namespace psflow::internal

BENCHMARK_MAIN();

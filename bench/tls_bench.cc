// What mutual TLS costs: the same work over plaintext and over mTLS in the
// same run, interleaved so that both see the same moment's load on a shared
// host. Two local clusters of 1 ps and 1 worker each (one with
// LocalClusterOptions::insecure, one with its fresh CA, the default), and
// every benchmark alternates between them within each iteration. The
// reported time and rate are the mTLS side's; the counter ratio_vs_plaintext
// is the plaintext time over the mTLS time (the mTLS rate as a fraction of
// the plaintext one: 1 means free). run_benchmarks.py lists it as the ratio
// with baseline "plaintext (paired)".
//
//   BM_TlsPull / BM_TlsPush   a dense variable of range(0) bytes (4 MiB
//                             is the target's size), target >= 0.8
//   BM_TlsGather              a sparse read: 512 rows of a 64-wide table
//   BM_TlsDispatch            no-op closures (schedule + fetch), batch of 200
//   BM_TlsTrainMlp            one epoch of `make demo`'s mlp on 2 ps and 2
//                             workers per side, examples/s, target >= 0.9
#include <benchmark/benchmark.h>

#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/logging.h"
#include "ps/client/variable_client.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/strategy.h"
#include "psflow/tensor.h"
#include "rpc/transport_credentials.h"
#include "train/trainer.h"

namespace psflow::internal {
namespace {

using Op = v1::VariableOp;

constexpr absl::Duration kCallTimeout = absl::Seconds(60);
constexpr int64_t kTableRows = 1 << 16;
constexpr int64_t kTableDim = 64;
constexpr int64_t kGatherRows = 512;
constexpr int kDispatchBatch = 200;

absl::Time deadline() { return absl::Now() + kCallTimeout; }

// One cluster and this process's clients of it. The clients take the
// process's credentials when they are made (create_channel), so each side
// is made while the default credentials are its own.
// Thread-safety: made once, then used by the benchmark thread only.
struct Side {
  std::unique_ptr<LocalCluster> cluster;
  std::unique_ptr<VariableClient> ps;
  std::unique_ptr<ParameterServerStrategy> strategy;
  std::unique_ptr<ClusterCoordinator> coordinator;
};

absl::Status start_side(Side& side, bool tls) {
  LocalClusterOptions options;
  options.num_ps = 1;
  options.num_workers = 1;
  options.binary_path = PSFLOW_TESTING_BINARY_PATH;
  options.insecure = !tls;
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(options);
  if (!cluster.ok()) return cluster.status();
  side.cluster = *std::move(cluster);
  absl::StatusOr<std::string> target = side.cluster->cluster_spec().task_address("ps", 0);
  if (!target.ok()) return target.status();
  side.ps = make_grpc_variable_client(*target, task_name("ps", 0));
  absl::StatusOr<std::unique_ptr<ParameterServerStrategy>> strategy =
      ParameterServerStrategy::create(
          SimpleClusterResolver(side.cluster->cluster_spec(), "chief", 0));
  if (!strategy.ok()) return strategy.status();
  side.strategy = *std::move(strategy);
  ClusterCoordinatorOptions coordinator_options;
  coordinator_options.max_in_flight_per_worker = 8;
  absl::StatusOr<std::unique_ptr<ClusterCoordinator>> coordinator =
      ClusterCoordinator::create(*side.strategy, coordinator_options);
  if (!coordinator.ok()) return coordinator.status();
  side.coordinator = *std::move(coordinator);
  return absl::OkStatus();
}

// Thread-safety: as Side.
struct Sides {
  Side plain;
  Side tls;
};

// Started on first use and kept for the run: plaintext first (the default
// credentials are none then), then mTLS (whose cluster makes its chief's
// credentials the default).
Sides* sides(benchmark::State& state) {
  static Sides* shared = [] {
    auto* s = new Sides;
    set_default_tls(nullptr);
    absl::Status plain = start_side(s->plain, /*tls=*/false);
    PSFLOW_CHECK(plain.ok(), plain.ToString());
    absl::Status tls = start_side(s->tls, /*tls=*/true);
    PSFLOW_CHECK(tls.ok(), tls.ToString());
    PSFLOW_CHECK(default_tls() != nullptr, "the mTLS cluster set no credentials");
    return s;
  }();
  if (shared == nullptr) state.SkipWithError("the clusters did not start");
  return shared;
}

bool check(benchmark::State& state, const absl::Status& status) {
  if (status.ok()) return true;
  state.SkipWithError(status.ToString().c_str());
  return false;
}

ExecuteBatch one_op(Op::Kind kind, const std::string& name, Tensor value = Tensor(),
                    Tensor ids = Tensor()) {
  ExecuteBatch batch;
  VariableOpArgs op;
  op.kind = kind;
  op.variable = name;
  op.value = std::move(value);
  op.ids = std::move(ids);
  batch.ops.push_back(std::move(op));
  return batch;
}

Tensor floats(int64_t rows, int64_t cols, float seed) {
  Tensor t(DType::kFloat32, {rows, cols});
  absl::Span<float> v = t.mutable_flat<float>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = seed + static_cast<float>(i % 4099) * 0.25f;
  return t;
}

// Runs `op` on the plaintext side, then on the mTLS side, per iteration;
// reports the mTLS side's time and the paired ratio.
template <typename Op>
void run_paired(benchmark::State& state, Op op) {
  absl::Duration plain_total, tls_total;
  for (auto _ : state) {
    const absl::Time t0 = absl::Now();
    if (!check(state, op(sides(state)->plain))) return;
    const absl::Time t1 = absl::Now();
    if (!check(state, op(sides(state)->tls))) return;
    const absl::Time t2 = absl::Now();
    plain_total += t1 - t0;
    tls_total += t2 - t1;
    state.SetIterationTime(absl::ToDoubleSeconds(t2 - t1));
  }
  if (tls_total > absl::ZeroDuration()) {
    state.counters["ratio_vs_plaintext"] = absl::FDivDuration(plain_total, tls_total);
  }
}

absl::Status create_on_both(benchmark::State& state, const std::string& name, const Tensor& value) {
  for (Side* side : {&sides(state)->plain, &sides(state)->tls}) {
    absl::Status status =
        side->ps->execute_batch(one_op(Op::CREATE_IF_ABSENT, name, value), deadline()).status();
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

void BM_TlsPull(benchmark::State& state) {
  const std::string name = absl::StrCat("pull_", state.range(0));
  if (!check(state, create_on_both(state, name, floats(state.range(0) / 4, 1, 1)))) return;
  run_paired(state, [&](Side& side) {
    return side.ps->execute_batch(one_op(Op::READ, name), deadline()).status();
  });
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void BM_TlsPush(benchmark::State& state) {
  const std::string name = absl::StrCat("push_", state.range(0));
  const Tensor value = floats(state.range(0) / 4, 1, 2);
  if (!check(state, create_on_both(state, name, value))) return;
  run_paired(state, [&](Side& side) {
    return side.ps->execute_batch(one_op(Op::ASSIGN, name, value), deadline()).status();
  });
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void BM_TlsGather(benchmark::State& state) {
  const std::string name = "table";
  if (!check(state, create_on_both(state, name, floats(kTableRows, kTableDim, 3)))) return;
  std::mt19937_64 random(7);
  std::vector<Tensor> ids;
  for (int i = 0; i < 8; ++i) {
    std::vector<int64_t> rows(kGatherRows);
    for (int64_t& row : rows) row = static_cast<int64_t>(random() % kTableRows);
    ids.push_back(Tensor::from_vector<int64_t>(rows, {kGatherRows}));
  }
  size_t next = 0;
  run_paired(state, [&](Side& side) {
    const Tensor& batch_ids = ids[next++ % ids.size()];
    return side.ps->execute_batch(one_op(Op::GATHER, name, Tensor(), batch_ids), deadline())
        .status();
  });
  state.SetItemsProcessed(state.iterations() * kGatherRows);
}

void BM_TlsDispatch(benchmark::State& state) {
  std::vector<RemoteValue> results;
  run_paired(state, [&](Side& side) -> absl::Status {
    results.clear();
    for (int i = 0; i < kDispatchBatch; ++i) {
      absl::StatusOr<RemoteValue> r = side.coordinator->schedule("testing/echo");
      if (!r.ok()) return r.status();
      results.push_back(*std::move(r));
    }
    for (const RemoteValue& r : results) {
      if (!r.fetch().ok()) return r.fetch().status();
    }
    return absl::OkStatus();
  });
  state.SetItemsProcessed(state.iterations() * kDispatchBatch);
}

// One epoch of the mlp on a fresh cluster; examples/s of the training loop.
absl::StatusOr<double> train_epoch(bool tls) {
  LocalClusterOptions options;
  options.num_ps = 2;
  options.num_workers = 2;
  options.binary_path = PSFLOW_BINARY_PATH;
  options.insecure = !tls;
  // train() opens its channels with the default credentials: none for
  // the plaintext cluster (the shared mTLS one may have set some).
  std::shared_ptr<const TlsCredentials> previous = default_tls();
  if (!tls) set_default_tls(nullptr);
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(options);
  absl::StatusOr<TrainSummary> summary = absl::UnknownError("the cluster did not start");
  if (!cluster.ok()) {
    summary = cluster.status();
  } else {
    TrainOptions train;
    train.epochs = 1;
    train.out = nullptr;
    summary = psflow::internal::train((*cluster)->cluster_spec(), train);
    cluster->reset();
  }
  set_default_tls(previous);
  if (!summary.ok()) return summary.status();
  return summary->examples_per_sec;
}

// Both orders, so that neither side always runs second (warmer caches, or
// a host that got busier).
void BM_TlsTrainMlp(benchmark::State& state) {
  double plain = 0;
  double tls = 0;
  for (auto _ : state) {
    for (bool tls_first : {false, true}) {
      for (bool on : {tls_first, !tls_first}) {
        absl::StatusOr<double> rate = train_epoch(on);
        if (!check(state, rate.status())) return;
        (on ? tls : plain) += *rate;
      }
    }
  }
  state.counters["examples_per_sec"] = tls / 2;
  state.counters["plaintext_examples_per_sec"] = plain / 2;
  if (plain > 0) state.counters["ratio_vs_plaintext"] = tls / plain;
}

BENCHMARK(BM_TlsPull)->Arg(256 << 10)->Arg(4 << 20)->UseManualTime();
BENCHMARK(BM_TlsPush)->Arg(256 << 10)->Arg(4 << 20)->UseManualTime();
BENCHMARK(BM_TlsGather)->UseManualTime();
BENCHMARK(BM_TlsDispatch)->UseManualTime();
BENCHMARK(BM_TlsTrainMlp)->Iterations(1)->UseRealTime()->Unit(benchmark::kSecond);

}  // namespace
}  // namespace psflow::internal

BENCHMARK_MAIN();

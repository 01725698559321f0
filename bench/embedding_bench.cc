// Dynamic embedding tables (docs/embeddings.md) against the static sharded
// embedding of the same size, on one ps's data structures in this process
// (no RPC, one thread): lookups of 1,024 random keys and sparse Adagrad
// updates of 1,024 random rows, at dim 16 and 64, in a table of 100,000
// rows. The static table is a VariableShard of [100000, dim] (what
// APPLY_SPARSE and GATHER run on); each dynamic benchmark names it as its
// baseline. BM_DynamicTableBytesPerRow reports the table's memory per row against
// the raw key + value + slots + last-seen bytes.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "embedding/dynamic_table.h"
#include "ps/server/variable_shard.h"

namespace psflow::internal {
namespace {

constexpr int64_t kRows = 100000;
constexpr int64_t kKeysPerRequest = 1024;

std::vector<Tensor> random_keys(int sets) {
  std::vector<Tensor> out;
  for (int s = 0; s < sets; ++s) {
    std::mt19937 gen(static_cast<uint32_t>(100 + s));
    std::uniform_int_distribution<int64_t> dist(0, kRows - 1);
    std::vector<int64_t> ids(kKeysPerRequest);
    for (int64_t& id : ids) id = dist(gen);
    out.push_back(Tensor::from_vector<int64_t>(ids, {kKeysPerRequest}));
  }
  return out;
}

OptimizerConfig adagrad() {
  OptimizerConfig c;
  c.kind = OptimizerConfig::Kind::kAdagrad;
  return c;
}

// A table holding keys 0 .. kRows-1; with `ttl` > 0 it keeps the recency
// list that expiry needs (never evicting here: the steps stay far below).
std::unique_ptr<DynamicTable> full_table(int64_t dim, int64_t ttl) {
  DynamicEmbeddingOptions o;
  o.dim = dim;
  o.ttl_steps = ttl;
  o.optimizer = adagrad();
  std::unique_ptr<DynamicTable> t = *DynamicTable::create(o);
  std::vector<int64_t> all(kRows);
  for (int64_t i = 0; i < kRows; ++i) all[static_cast<size_t>(i)] = i;
  (void)t->lookup(Tensor::from_vector(all, {kRows}), 0, false);
  return t;
}

Tensor static_value(int64_t dim) {
  Tensor t(DType::kFloat32, {kRows, dim});
  t.mutable_vec<float>().setConstant(0.5f);
  return t;
}

std::string baseline(const char* name, int64_t dim) {
  return absl::StrCat("baseline=", name, "/dim:", dim, "/real_time");
}

void BM_StaticTableGather(benchmark::State& state) {
  const int64_t dim = state.range(0);
  VariableShard shard("table", static_value(dim));
  const std::vector<Tensor> keys = random_keys(8);
  size_t i = 0;
  for (auto _ : state) {
    absl::StatusOr<Tensor> rows = shard.gather(keys[i++ % keys.size()]);
    benchmark::DoNotOptimize(rows->raw_data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kKeysPerRequest);
}

void BM_DynamicTableLookup(benchmark::State& state) {
  const int64_t dim = state.range(0);
  std::unique_ptr<DynamicTable> table = full_table(dim, state.range(1));
  const std::vector<Tensor> keys = random_keys(8);
  size_t i = 0;
  int64_t step = 1;
  for (auto _ : state) {
    Tensor rows = table->lookup(keys[i++ % keys.size()], step++, false);
    benchmark::DoNotOptimize(rows.raw_data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kKeysPerRequest);
  state.SetLabel(baseline("BM_StaticTableGather", dim));
}

void BM_StaticTableSparseAdagrad(benchmark::State& state) {
  const int64_t dim = state.range(0);
  VariableShard shard("table", static_value(dim));
  const std::vector<Tensor> keys = random_keys(8);
  Tensor grads(DType::kFloat32, {kKeysPerRequest, dim});
  grads.mutable_vec<float>().setConstant(0.01f);
  size_t i = 0;
  for (auto _ : state) {
    absl::Status s = shard.apply_sparse_gradient(adagrad(), 0.01, keys[i++ % keys.size()], grads);
    if (!s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      break;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kKeysPerRequest);
}

void BM_DynamicTableSparseAdagrad(benchmark::State& state) {
  const int64_t dim = state.range(0);
  std::unique_ptr<DynamicTable> table = full_table(dim, state.range(1));
  const std::vector<Tensor> keys = random_keys(8);
  Tensor grads(DType::kFloat32, {kKeysPerRequest, dim});
  grads.mutable_vec<float>().setConstant(0.01f);
  size_t i = 0;
  int64_t step = 1;
  for (auto _ : state) table->apply(adagrad(), 0.01, keys[i++ % keys.size()], grads, step++);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kKeysPerRequest);
  state.SetLabel(baseline("BM_StaticTableSparseAdagrad", dim));
}

// Memory of a table of 1,000,000 Adagrad rows: the table's own count
// (chunks, index, recency list; no sketch) per row, and the raw size.
void BM_DynamicTableBytesPerRow(benchmark::State& state) {
  const int64_t dim = state.range(0);
  constexpr int64_t kMany = 1000000;
  DynamicEmbeddingOptions o;
  o.dim = dim;
  o.optimizer = adagrad();
  double per_row = 0;
  for (auto _ : state) {
    std::unique_ptr<DynamicTable> t = *DynamicTable::create(o);
    std::vector<int64_t> keys(kMany);
    for (int64_t i = 0; i < kMany; ++i) keys[static_cast<size_t>(i)] = i * 2654435761LL;
    (void)t->lookup(Tensor::from_vector(keys, {kMany}), 0, false);
    const DynamicTableStats s = t->stats();
    per_row = static_cast<double>(s.bytes - s.sketch_bytes) / static_cast<double>(s.rows);
  }
  const double raw = 8.0 + 4.0 * static_cast<double>(dim) * 2 + 8.0;
  state.counters["bytes_per_row"] = per_row;
  state.counters["raw_bytes_per_row"] = raw;
  state.counters["bytes_vs_raw"] = per_row / raw;
}

BENCHMARK(BM_StaticTableGather)->ArgName("dim")->Arg(16)->Arg(64)->UseRealTime();
BENCHMARK(BM_DynamicTableLookup)
    ->ArgNames({"dim", "ttl"})
    ->ArgsProduct({{16, 64}, {0, 1 << 30}})
    ->UseRealTime();
BENCHMARK(BM_StaticTableSparseAdagrad)->ArgName("dim")->Arg(16)->Arg(64)->UseRealTime();
BENCHMARK(BM_DynamicTableSparseAdagrad)
    ->ArgNames({"dim", "ttl"})
    ->ArgsProduct({{16, 64}, {0, 1 << 30}})
    ->UseRealTime();
BENCHMARK(BM_DynamicTableBytesPerRow)
    ->ArgName("dim")
    ->Arg(16)
    ->Arg(64)
    ->Iterations(1)
    ->UseRealTime();

}  // namespace
}  // namespace psflow::internal

BENCHMARK_MAIN();

// Training throughput of the main job: examples/s of the Fashion-MNIST mlp
// (batch 32, as `make demo`) over a LocalCluster of 2 ps and 1 or 2
// workers, one epoch each. The 2-worker figure names the 1-worker one as
// its baseline, so the ratio is the scaling from one to two workers on
// this machine (where ps, workers and coordinator share 2 cores).
#include <benchmark/benchmark.h>

#include <memory>

#include "psflow/local_cluster.h"
#include "train/trainer.h"

namespace psflow::internal {
namespace {

void BM_TrainMlpEpoch(benchmark::State& state) {
  LocalClusterOptions options;
  options.num_ps = 2;
  options.num_workers = static_cast<int>(state.range(0));
  options.binary_path = PSFLOW_BINARY_PATH;
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(options);
  if (!cluster.ok()) {
    state.SkipWithError(cluster.status().ToString().c_str());
    return;
  }
  TrainOptions train;
  train.epochs = 1;
  train.out = nullptr;
  double examples_per_sec = 0;
  int64_t examples = 0;
  for (auto _ : state) {
    absl::StatusOr<TrainSummary> summary =
        psflow::internal::train((*cluster)->cluster_spec(), train);
    if (!summary.ok()) {
      state.SkipWithError(summary.status().ToString().c_str());
      return;
    }
    examples_per_sec = summary->examples_per_sec;
    examples += summary->steps * train.batch_size;
    state.counters["test_accuracy"] = summary->test_accuracy;
  }
  // items/s: examples over the whole call (data loading and per-epoch
  // evaluation included); examples_per_sec: the training loop alone.
  state.SetItemsProcessed(examples);
  state.counters["examples_per_sec"] = examples_per_sec;
  if (state.range(0) == 2) state.SetLabel("baseline=BM_TrainMlpEpoch/1/iterations:1/real_time");
}
BENCHMARK(BM_TrainMlpEpoch)->Arg(1)->Arg(2)->Iterations(1)->UseRealTime()->Unit(benchmark::kSecond);

}  // namespace
}  // namespace psflow::internal

BENCHMARK_MAIN();

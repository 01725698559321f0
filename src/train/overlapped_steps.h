// The classifier's training closure with communication overlapped with
// computation (internal; `psflow train --overlap on`).
//
// Within a closure of several steps, the gradients of each bucket of
// layers (layer_buckets) are pushed as soon as the backward pass produces
// them (the last bucket first), and the next step's parameters are read,
// bucket 0 first, while this step's pushes are in flight (optionally from
// the start of its computation: read_during_compute); the forward pass
// takes each bucket's parameters as they arrive. The last step reads for
// the next closure's first (carried_read.h). docs/overlap.md.
//
// Consistency: asynchronous training already reads parameters that other
// workers are updating. With overlap a read may also miss this worker's
// own updates of the step just before it, never older ones: the read for
// step i + 1 starts only once every push of step i - 1 has been answered,
// so it reflects all of this worker's updates up to step i - 1 and
// possibly some or all of step i's (a staleness of at most one step of the
// worker's own updates; zero without overlap). The same holds across
// closures: the read carried to the next closure starts once the
// next-to-last step's pushes are answered, and a closure returns only once
// all its pushes are answered.
//
// Exactly-once: every push goes through one thread in the order the
// backward passes produce them, so a retried closure's pushes get the same
// update keys; the optimizer's `iterations` advances once per step, with
// the step's last push (that of the bucket holding layer 0). Errors: a failed push fails the
// closure (the later pushes are dropped unsent; the retry sends them), as
// does a failed read.
#ifndef PSFLOW_TRAIN_OVERLAPPED_STEPS_H_
#define PSFLOW_TRAIN_OVERLAPPED_STEPS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "psflow/structure.h"
#include "psflow/worker_context.h"
#include "train/mlp_streamed.h"
#include "train/parameter_prefetch.h"
#include "train/step_runner.h"
#include "train/train_step.h"

namespace psflow::internal {

// Consecutive layers [first, end) read together and pushed together: a
// layer smaller than a round trip is worth joins its neighbour.
// Thread-safety: a value type.
struct LayerBucket {
  size_t first = 0;
  size_t end = 0;
  friend bool operator==(const LayerBucket&, const LayerBucket&) = default;
};

// Buckets of layers in forward order, each closed once it holds at least
// `min_bytes` (a last bucket smaller than that joins the one before it).
// min_bytes 0: one bucket per layer.
[[nodiscard]] std::vector<LayerBucket> layer_buckets(const std::vector<int64_t>& layer_bytes,
                                                     int64_t min_bytes);

// The bucket size of `psflow train --overlap on`: TF's tutorial shard size
// (MinSizePartitioner's 256 KiB), below which a separate request costs
// more than the overlap it buys (measured: docs/benchmarks.md).
inline constexpr int64_t kOverlapBucketBytes = 256 * 1024;

// The staleness `psflow train --overlap` allows (OverlapReads::
// max_staleness). With 1 the next step's read waits for the pushes of the
// step before this one; 2 would not wait, but measured no faster across
// 1 Gbit/s links and lost accuracy (docs/benchmarks.md), so 1.
inline constexpr int64_t kOverlapStaleness = 1;

// Whether `psflow train --overlap` starts a step's read while the step
// before computes (OverlapReads::read_during_compute). Measured across
// 1 Gbit/s links at batch 32: 1.08x the examples/s of starting it after the
// computation, but the read then always misses the step before, and on one
// machine, where that step's pushes usually won the race, test accuracy
// fell by about 0.01 (docs/benchmarks.md). So off.
inline constexpr bool kOverlapReadDuringCompute = false;

// How late, in the carrying closure's mean step times after its end, the
// next closure on the worker may start and still use the read carried to
// it: with a closure already waiting on the worker it starts at once; a
// later one reads afresh, so a carried read is never much older than the
// read of a step within a closure.
inline constexpr int64_t kCarriedReadSteps = 2;

// How overlapped steps reach the ps: read a bucket's parameters (kernel and
// bias of each layer, in layer order), push its gradients (same order;
// `last`: the step's last push, which counts the step).
// Thread-safety: a value type; `read` runs on the prefetch thread, `push` on
// the push thread, each one call at a time.
struct OverlapIo {
  std::function<absl::StatusOr<std::vector<Tensor>>(const LayerBucket& bucket)> read;
  std::function<absl::Status(const LayerBucket& bucket, std::vector<Tensor> gradients, bool last)>
      push;
};

// One step's computation: takes each layer's parameters from `stream` (in
// forward order) and hands it each layer's gradients (last layer first).
// Runs on the caller's thread.
using OverlapCompute = std::function<absl::Status(int64_t step, const LayerStream& stream)>;

// Where a closure's reads come from when they cross closures: `prefetch`
// (its group b reads bucket b) outlives the closure; `first_started`: it
// already has the read of step 0 in flight (carried from the closure
// before; made again if it failed); `carry_next`: the last step starts the
// read of the next closure's first step on it, as any step starts the
// read of the step after it. Null `prefetch`: the closure reads through
// its OverlapIo on a prefetch of its own.
// Thread-safety: a value type.
struct OverlapReads {
  ParameterPrefetch* prefetch = nullptr;
  bool first_started = false;
  bool carry_next = false;
  // The most steps of this worker's own updates a read may miss (>= 1): the
  // read of step i + 1 starts once step i - max_staleness's pushes are
  // answered.
  int64_t max_staleness = 1;
  // Whether the next step's read starts once this step has its parameters
  // (while it computes) rather than once it has computed and queued its
  // pushes. Earlier keeps the link busier; later lets the read race this
  // step's pushes, which on a fast link often land first (staleness 0).
  bool read_during_compute = false;
};

// `steps` steps with the schedule above over `buckets` (covering layers 0
// to the last, in order): the first error of a read, a push or `compute`
// is the result, after every push already queued has been answered. Each
// step's read starts once the step before it has taken its last bucket
// (while that step computes; or once it has computed, see
// read_during_compute) and step i - max_staleness's pushes are answered.
[[nodiscard]] absl::Status run_overlapped(int64_t steps, const std::vector<LayerBucket>& buckets,
                                          const OverlapIo& io, const OverlapCompute& compute,
                                          const OverlapReads& reads = {});

// run_train_steps with overlap: config.steps steps of the classifier on
// ctx's worker. `closure` names the closure and its per-worker state.
[[nodiscard]] absl::StatusOr<Structure> run_overlapped_train_steps(WorkerContext& ctx,
                                                                   const TrainStepConfig& config,
                                                                   const TrainingClosure& closure);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_OVERLAPPED_STEPS_H_

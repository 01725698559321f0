#include "train/overlapped_steps.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/request/update_key.h"
#include "psflow/optimizer.h"
#include "psflow/strategy.h"
#include "strategy/partial_apply.h"
#include "strategy/strategy_test_util.h"
#include "strategy/update_binding.h"
#include "train/parameter_prefetch.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::LocalPsCluster;
using ::psflow::internal::testing::value_or_fail;

// A compute that takes every layer's parameters in forward order, then
// hands back gradients {step + 1, layer} (as 1-element tensors), last
// layer first, as a backward pass would.
OverlapCompute fake_backward(size_t num_layers, std::vector<std::string>* events, absl::Mutex* mu) {
  return [=](int64_t step, const LayerStream& stream) -> absl::Status {
    for (size_t l = 0; l < num_layers; ++l) {
      absl::StatusOr<std::vector<Tensor>> p = stream.parameters(l);
      if (!p.ok()) return p.status();
    }
    for (size_t l = num_layers; l-- > 0;) {
      {
        absl::MutexLock lock(mu);
        events->push_back(absl::StrCat("grad s", step, " l", l));
      }
      std::vector<Tensor> g = {Tensor::from_vector<float>({static_cast<float>(step + 1)}),
                               Tensor::from_vector<float>({static_cast<float>(l)})};
      absl::Status s = stream.gradients(l, std::move(g));
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  };
}

std::vector<LayerBucket> per_layer(size_t num_layers) {
  return layer_buckets(std::vector<int64_t>(num_layers, 1), 0);
}

TEST(OverlappedStepsTest, BucketsCloseAtTheSizeAndASmallTailJoinsThePreviousOne) {
  EXPECT_EQ(per_layer(3), (std::vector<LayerBucket>{{0, 1}, {1, 2}, {2, 3}}));
  // The mlp 784-256-10: 803 KB then 10 KB, one bucket.
  EXPECT_EQ(layer_buckets({803840, 10280}, kOverlapBucketBytes),
            (std::vector<LayerBucket>{{0, 2}}));
  EXPECT_EQ(layer_buckets({100, 200, 300, 50, 400, 10}, 300),
            (std::vector<LayerBucket>{{0, 2}, {2, 3}, {3, 6}}));
  EXPECT_EQ(layer_buckets({}, 300), std::vector<LayerBucket>{});
}

// Two layers per bucket: one read and one push per bucket, the gradients in
// layer order.
TEST(OverlappedStepsTest, ABucketIsOneReadAndOnePush) {
  absl::Mutex mu;
  std::vector<std::string> grads;
  std::vector<std::string> events;
  OverlapIo io;
  io.read = [&](const LayerBucket& b) -> absl::StatusOr<std::vector<Tensor>> {
    absl::MutexLock lock(&mu);
    events.push_back(absl::StrCat("read ", b.first, "-", b.end));
    return std::vector<Tensor>(2 * (b.end - b.first));
  };
  io.push = [&](const LayerBucket& b, std::vector<Tensor> g, bool last) {
    absl::MutexLock lock(&mu);
    std::string layers;
    for (size_t j = 1; j < g.size(); j += 2) absl::StrAppend(&layers, g[j].flat<float>()[0]);
    events.push_back(
        absl::StrCat("push ", b.first, "-", b.end, " layers ", layers, last ? " last" : ""));
    return absl::OkStatus();
  };
  ASSERT_TRUE(run_overlapped(1, {{0, 2}, {2, 4}}, io, fake_backward(4, &grads, &mu)).ok());
  EXPECT_EQ(events, (std::vector<std::string>{"read 0-2", "read 2-4", "push 2-4 layers 23",
                                              "push 0-2 layers 01 last"}));
}

// A read whose groups were not all taken (a step that failed half-way) is
// finished and dropped before the next one starts: the next read's groups
// are its own.
TEST(OverlappedStepsTest, APrefetchStartedBeforeTheLastWasTakenDropsIt) {
  std::atomic<int> reads{0};
  ParameterPrefetch prefetch(2, [&reads](size_t g) -> absl::StatusOr<std::vector<Tensor>> {
    return std::vector<Tensor>{
        Tensor::from_vector<float>({static_cast<float>(reads++), static_cast<float>(g)})};
  });
  prefetch.start(nullptr);
  ASSERT_TRUE(prefetch.take(0).ok());
  prefetch.start(nullptr);
  for (size_t g = 0; g < 2; ++g) {
    absl::StatusOr<std::vector<Tensor>> got = prefetch.take(g);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ((*got)[0].flat<float>()[0], static_cast<float>(2 + g)) << "group " << g;
    EXPECT_EQ((*got)[0].flat<float>()[1], static_cast<float>(g));
  }
  EXPECT_EQ(prefetch.take(1).status().code(), absl::StatusCode::kInternal);  // taken twice
}

TEST(OverlappedStepsTest, ReadsInForwardOrderAndPushesLastLayerFirstOncePerStep) {
  constexpr size_t kLayers = 3;
  constexpr int64_t kSteps = 4;
  absl::Mutex mu;
  std::vector<std::string> reads;
  std::vector<std::string> pushes;
  std::vector<std::string> grads;
  int read_round = 0;
  OverlapIo io;
  io.read = [&](const LayerBucket& b) -> absl::StatusOr<std::vector<Tensor>> {
    absl::MutexLock lock(&mu);
    if (b.first == 0) ++read_round;
    reads.push_back(absl::StrCat("r", read_round - 1, " l", b.first));
    return std::vector<Tensor>{Tensor(), Tensor()};
  };
  io.push = [&](const LayerBucket& b, std::vector<Tensor> g, bool last) {
    absl::MutexLock lock(&mu);
    pushes.push_back(
        absl::StrCat("s", g[0].flat<float>()[0] - 1, " l", b.first, last ? " last" : ""));
    return absl::OkStatus();
  };
  ASSERT_TRUE(
      run_overlapped(kSteps, per_layer(kLayers), io, fake_backward(kLayers, &grads, &mu)).ok());
  std::vector<std::string> want_reads;
  std::vector<std::string> want_pushes;
  for (int64_t s = 0; s < kSteps; ++s) {
    for (size_t l = 0; l < kLayers; ++l) want_reads.push_back(absl::StrCat("r", s, " l", l));
    for (size_t l = kLayers; l-- > 0;) {
      want_pushes.push_back(absl::StrCat("s", s, " l", l, l == 0 ? " last" : ""));
    }
  }
  EXPECT_EQ(reads, want_reads);
  EXPECT_EQ(pushes, want_pushes);
}

// What a run whose pushes were held saw: for each step's read, how many
// steps had been applied when it began.
struct HeldPushesRun {
  std::vector<int64_t> seen;
  bool overlapped = true;  // false when a held push timed out
  int64_t applied_steps = 0;
};

// Runs `steps` overlapped steps of 2 layers under `reads`. A push of step s
// (only its last one with `hold_last_only`) is held until the read of step
// s + `distance` has started, bounded by a deadline: a read that waited for
// those pushes shows as a timeout (overlapped false).
HeldPushesRun run_holding_pushes(int64_t steps, int64_t distance, bool hold_last_only,
                                 const OverlapReads& reads) {
  constexpr size_t kLayers = 2;
  absl::Mutex mu;
  std::vector<std::string> grads;
  std::vector<std::unique_ptr<absl::Notification>> read_started;
  for (int64_t s = 0; s <= steps; ++s)
    read_started.push_back(std::make_unique<absl::Notification>());
  std::atomic<int64_t> applied_steps{0};
  std::atomic<int> read_round{0};
  HeldPushesRun run;
  OverlapIo io;
  io.read = [&](const LayerBucket& b) -> absl::StatusOr<std::vector<Tensor>> {
    if (b.first == 0) {
      const int round = read_round++;
      {
        absl::MutexLock lock(&mu);
        run.seen.push_back(applied_steps.load());
      }
      read_started[static_cast<size_t>(round)]->Notify();
    }
    return std::vector<Tensor>{Tensor(), Tensor()};
  };
  io.push = [&](const LayerBucket&, std::vector<Tensor> g, bool last) {
    const auto step = static_cast<int64_t>(g[0].flat<float>()[0]) - 1;
    if ((last || !hold_last_only) && step + distance < steps &&
        !read_started[static_cast<size_t>(step + distance)]->WaitForNotificationWithTimeout(
            absl::Seconds(20))) {
      absl::MutexLock lock(&mu);
      run.overlapped = false;
    }
    if (last) ++applied_steps;
    return absl::OkStatus();
  };
  EXPECT_TRUE(
      run_overlapped(steps, per_layer(kLayers), io, fake_backward(kLayers, &grads, &mu), reads)
          .ok());
  run.applied_steps = applied_steps.load();
  return run;
}

// The bound of the header: the read of step s + 1 sees every push of steps
// <= s - 1, and may start while step s's pushes are still in flight. Step
// s's pushes are held until step s + 1's read has started (bounded by a
// deadline), so the read sees exactly s steps: one step of staleness, and
// proof that the read did not wait for them.
TEST(OverlappedStepsTest, ReadMissesAtMostTheWorkersOwnPreviousStep) {
  constexpr int64_t kSteps = 6;
  const HeldPushesRun run =
      run_holding_pushes(kSteps, /*distance=*/1, /*hold_last_only=*/false, OverlapReads{});
  EXPECT_TRUE(run.overlapped) << "a read waited for the previous step's pushes";
  ASSERT_EQ(run.seen.size(), static_cast<size_t>(kSteps));
  for (int64_t s = 1; s < kSteps; ++s) {
    EXPECT_GE(run.seen[static_cast<size_t>(s)], s - 1) << "step " << s << " read too stale";
    EXPECT_EQ(run.seen[static_cast<size_t>(s)], s - 1) << "step " << s;
  }
  EXPECT_EQ(run.applied_steps, kSteps);
}

// With max_staleness 2 the read of step s + 1 waits only for step s - 2's
// pushes: step s's last push is held until step s + 2's read has started
// (bounded by a deadline), and each read sees exactly the steps up to two
// before it.
TEST(OverlappedStepsTest, ReadMissesAtMostTwoStepsWithStalenessTwo) {
  constexpr int64_t kSteps = 7;
  OverlapReads reads;
  reads.max_staleness = 2;
  const HeldPushesRun run =
      run_holding_pushes(kSteps, /*distance=*/2, /*hold_last_only=*/true, reads);
  EXPECT_TRUE(run.overlapped) << "a read waited for the pushes of the step two before it";
  ASSERT_EQ(run.seen.size(), static_cast<size_t>(kSteps));
  for (int64_t s = 2; s < kSteps; ++s) {
    EXPECT_EQ(run.seen[static_cast<size_t>(s)], s - 2) << "step " << s;
  }
  EXPECT_EQ(run.applied_steps, kSteps);
}

TEST(OverlappedStepsTest, FailuresOfReadsPushesAndComputePropagate) {
  constexpr size_t kLayers = 2;
  absl::Mutex mu;
  std::vector<std::string> grads;
  OverlapIo ok_io;
  ok_io.read = [](const LayerBucket&) -> absl::StatusOr<std::vector<Tensor>> {
    return std::vector<Tensor>{Tensor(), Tensor()};
  };
  ok_io.push = [](const LayerBucket&, std::vector<Tensor>, bool) { return absl::OkStatus(); };

  OverlapIo bad_read = ok_io;
  bad_read.read = [](const LayerBucket& b) -> absl::StatusOr<std::vector<Tensor>> {
    if (b.first == 1) return absl::UnavailableError("ps 1 gone (read)");
    return std::vector<Tensor>{Tensor(), Tensor()};
  };
  absl::Status s =
      run_overlapped(3, per_layer(kLayers), bad_read, fake_backward(kLayers, &grads, &mu));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("(read)"));

  std::atomic<int> pushes_after_failure{0};
  std::atomic<bool> failed{false};
  OverlapIo bad_push = ok_io;
  bad_push.push = [&](const LayerBucket& b, std::vector<Tensor> g, bool) {
    if (failed) ++pushes_after_failure;
    if (g[0].flat<float>()[0] == 2.0f && b.first == 0) {
      failed = true;
      return absl::UnavailableError("ps 0 gone (push)");
    }
    return absl::OkStatus();
  };
  s = run_overlapped(5, per_layer(kLayers), bad_push, fake_backward(kLayers, &grads, &mu));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("(push)"));
  EXPECT_EQ(pushes_after_failure.load(), 0) << "pushes after a failed one must stay unsent";

  auto bad_compute = [](int64_t step, const LayerStream& stream) -> absl::Status {
    for (size_t l = 0; l < kLayers; ++l) {
      absl::StatusOr<std::vector<Tensor>> p = stream.parameters(l);
      if (!p.ok()) return p.status();
    }
    if (step == 1) return absl::InvalidArgumentError("bad batch (compute)");
    return stream.gradients(0, {Tensor::from_vector<float>({1.0f}), Tensor()});
  };
  s = run_overlapped(3, per_layer(kLayers), ok_io, bad_compute);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("(compute)"));
}

// Real ps tasks and update keys: a closure whose fourth push is applied
// but answered with an error (a lost response) fails; its retry (same
// closure id, the same pushes in the same order) leaves every update
// applied exactly once and `iterations` counting each step once.
TEST(OverlappedStepsTest, RetriedClosureAppliesEveryPushExactlyOnce) {
  constexpr size_t kLayers = 2;
  constexpr int64_t kSteps = 4;
  constexpr double kLr = 0.5;
  LocalPsCluster cluster(2);
  std::vector<ShardedVariable> vars;
  std::optional<Optimizer> optimizer;
  {
    StrategyScope scope = cluster.strategy->scope();
    for (size_t l = 0; l < kLayers; ++l) {
      vars.push_back(value_or_fail(
          create_variable(Tensor::from_vector<float>({0.0f}), {.name = absl::StrCat("k", l)})));
      vars.push_back(value_or_fail(
          create_variable(Tensor::from_vector<float>({0.0f}), {.name = absl::StrCat("b", l)})));
    }
    optimizer = value_or_fail(Optimizer::create(OptimizerConfig{}, kLr));
  }
  auto run_once = [&](int fail_push) {
    const Optimizer bound =
        bind_update_keys(*optimizer, std::make_shared<UpdateKeys>(/*session=*/7, /*closure=*/3));
    std::atomic<int> pushed{0};
    OverlapIo io;
    io.read = [&](const LayerBucket& b) -> absl::StatusOr<std::vector<Tensor>> {
      return read_values({vars[2 * b.first], vars[2 * b.first + 1]});
    };
    io.push = [&](const LayerBucket& b, std::vector<Tensor> g, bool last) -> absl::Status {
      const size_t layer = b.first;
      // Gradients of 1 for every parameter, scaled by the step.
      std::vector<GradientAndVariable> part = {
          {g[0], vars[2 * layer]}, {Tensor::from_vector<float>({1.0f}), vars[2 * layer + 1]}};
      absl::Status s = apply_gradients_part(bound, part, last);
      if (pushed++ == fail_push && s.ok()) return absl::UnavailableError("response lost");
      return s;
    };
    absl::Mutex mu;
    std::vector<std::string> grads;
    return run_overlapped(kSteps, per_layer(kLayers), io, fake_backward(kLayers, &grads, &mu));
  };
  EXPECT_EQ(run_once(3).code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(run_once(-1).ok());
  // Kernels: sum over steps of (step + 1) = 10; biases: 1 per step = 4.
  for (size_t l = 0; l < kLayers; ++l) {
    EXPECT_FLOAT_EQ(value_or_fail(vars[2 * l].read_value()).flat<float>()[0], -kLr * 10)
        << "layer " << l;
    EXPECT_FLOAT_EQ(value_or_fail(vars[2 * l + 1].read_value()).flat<float>()[0], -kLr * 4)
        << "layer " << l;
  }
  EXPECT_EQ(value_or_fail(optimizer->iterations().read_value()).scalar_value<int64_t>(), kSteps);
}

}  // namespace
}  // namespace psflow::internal

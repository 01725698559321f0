#include "train/carried_read.h"

#include <atomic>
#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "train/overlapped_steps.h"
#include "train/parameter_prefetch.h"

namespace psflow::internal {
namespace {

// A prefetch of `groups` groups whose reads count their rounds: group g of
// round r is the 1-element tensor {r}. `fail_round` fails that round.
std::unique_ptr<ParameterPrefetch> counting_prefetch(size_t groups, std::atomic<int>* rounds,
                                                     int fail_round = -1) {
  return std::make_unique<ParameterPrefetch>(
      groups, [rounds, fail_round](size_t g) -> absl::StatusOr<std::vector<Tensor>> {
        const int round = g == 0 ? (*rounds)++ : rounds->load() - 1;
        if (round == fail_round) return absl::UnavailableError("ps restarted (carried read)");
        return std::vector<Tensor>{Tensor::from_vector<float>({static_cast<float>(round)}),
                                   Tensor::from_vector<float>({0.0f})};
      });
}

// Takes every layer's parameters (recording the round each came from),
// then pushes gradients {step + 1} for each layer, last layer first.
OverlapCompute recording_compute(size_t layers, std::vector<float>* rounds_seen, absl::Mutex* mu) {
  return [=](int64_t step, const LayerStream& stream) -> absl::Status {
    for (size_t l = 0; l < layers; ++l) {
      absl::StatusOr<std::vector<Tensor>> p = stream.parameters(l);
      if (!p.ok()) return p.status();
      absl::MutexLock lock(mu);
      rounds_seen->push_back((*p)[0].flat<float>()[0]);
    }
    for (size_t l = layers; l-- > 0;) {
      absl::Status s = stream.gradients(
          l, {Tensor::from_vector<float>({static_cast<float>(step + 1)}), Tensor()});
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  };
}

TEST(CarriedReadTest, HandsTheReadOnlyToTheSameRunInTime) {
  std::atomic<int> rounds{0};
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  CarriedRead carry;
  EXPECT_EQ(carry.take("run", t0), nullptr);  // nothing kept

  auto read = counting_prefetch(1, &rounds);
  read->start(nullptr);
  carry.put("run", std::move(read), t0 + absl::Milliseconds(10));
  EXPECT_EQ(carry.take("other run", t0), nullptr);
  EXPECT_EQ(carry.take("run", t0), nullptr) << "a read dropped by a foreign take is gone";

  read = counting_prefetch(1, &rounds);
  read->start(nullptr);
  carry.put("run", std::move(read), t0 + absl::Milliseconds(10));
  EXPECT_EQ(carry.take("run", t0 + absl::Milliseconds(11)), nullptr) << "late";

  read = counting_prefetch(1, &rounds);
  read->start(nullptr);
  carry.put("run", std::move(read), t0 + absl::Milliseconds(10));
  std::unique_ptr<ParameterPrefetch> got = carry.take("run", t0 + absl::Milliseconds(10));
  ASSERT_NE(got, nullptr);
  absl::StatusOr<std::vector<Tensor>> values = got->take(0);
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_EQ((*values)[0].flat<float>()[0], 2.0f);  // the third read made
  EXPECT_EQ(carry.take("run", t0), nullptr) << "handed over once";
}

// With read_during_compute each step's read starts while the step before
// it computes: step 0's computation does not end until step 1's read has
// begun (bounded by a deadline), which reading only after the computation
// never allows.
TEST(CarriedReadTest, TheNextStepsReadOverlapsThisStepsComputation) {
  constexpr size_t kLayers = 2;
  absl::Notification second_read;
  std::atomic<int> rounds{0};
  OverlapIo io;
  io.read = [&](const LayerBucket& b) -> absl::StatusOr<std::vector<Tensor>> {
    if (b.first == 0 && rounds++ == 1) second_read.Notify();
    return std::vector<Tensor>{Tensor(), Tensor()};
  };
  io.push = [](const LayerBucket&, std::vector<Tensor>, bool) { return absl::OkStatus(); };
  bool overlapped = false;
  auto compute = [&](int64_t step, const LayerStream& stream) -> absl::Status {
    for (size_t l = 0; l < kLayers; ++l) {
      absl::StatusOr<std::vector<Tensor>> p = stream.parameters(l);
      if (!p.ok()) return p.status();
    }
    if (step == 0) overlapped = second_read.WaitForNotificationWithTimeout(absl::Seconds(20));
    for (size_t l = kLayers; l-- > 0;) {
      absl::Status s = stream.gradients(l, {Tensor::from_vector<float>({1.0f}), Tensor()});
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  };
  OverlapReads reads;
  reads.read_during_compute = true;
  ASSERT_TRUE(run_overlapped(2, layer_buckets({1, 1}, 0), io, compute, reads).ok());
  EXPECT_TRUE(overlapped) << "step 1's read waited for step 0's computation";
  EXPECT_EQ(rounds.load(), 2);
}

// A closure hands the read of the next closure's first step on: that read
// starts once the closure's next-to-last step's pushes are answered (one
// step of staleness, as within a closure), and the next closure takes it
// instead of reading again.
TEST(CarriedReadTest, TheNextClosuresFirstReadIsCarriedAcrossClosures) {
  constexpr size_t kLayers = 2;
  const std::vector<LayerBucket> buckets = layer_buckets({1, 1}, 0);
  std::atomic<int> rounds{0};
  std::atomic<int64_t> applied{0};
  absl::Mutex mu;
  std::vector<int64_t> applied_at_read;  // applied steps when each round began
  auto prefetch = std::make_unique<
      ParameterPrefetch>(buckets.size(), [&](size_t g) -> absl::StatusOr<std::vector<Tensor>> {
    int round = rounds.load() - 1;
    if (g == 0) {
      round = rounds++;
      absl::MutexLock lock(&mu);
      applied_at_read.push_back(applied.load());
    }
    return std::vector<Tensor>{Tensor::from_vector<float>({static_cast<float>(round)}), Tensor()};
  });
  OverlapIo io;  // reads go through `prefetch`
  io.push = [&](const LayerBucket&, std::vector<Tensor>, bool last) {
    if (last) ++applied;
    return absl::OkStatus();
  };
  std::vector<float> seen;
  ASSERT_TRUE(run_overlapped(3, buckets, io, recording_compute(kLayers, &seen, &mu),
                             {prefetch.get(), /*first_started=*/false, /*carry_next=*/true})
                  .ok());
  EXPECT_EQ(applied.load(), 3);
  ASSERT_TRUE(run_overlapped(2, buckets, io, recording_compute(kLayers, &seen, &mu),
                             {prefetch.get(), /*first_started=*/true, /*carry_next=*/false})
                  .ok());
  EXPECT_EQ(rounds.load(), 5) << "the second closure read its first step again";
  EXPECT_EQ(seen, (std::vector<float>{0, 0, 1, 1, 2, 2, 3, 3, 4, 4}));
  EXPECT_EQ(applied.load(), 5);
  // Rounds 0-2 for the first closure's steps, round 3 carried (begun once
  // step 1's pushes were answered, perhaps after the first closure had
  // returned), round 4 the second closure's step 1.
  absl::MutexLock lock(&mu);
  ASSERT_EQ(applied_at_read.size(), 5u);
  EXPECT_GE(applied_at_read[3], 2) << "the carried read misses more than one step";
  EXPECT_LE(applied_at_read[3], 3);
}

// A carried read that failed (a ps restarted between the closures) is
// made again; the closure does not fail.
TEST(CarriedReadTest, AFailedCarriedReadIsMadeAgain) {
  constexpr size_t kLayers = 1;
  std::atomic<int> rounds{0};
  std::unique_ptr<ParameterPrefetch> prefetch = counting_prefetch(1, &rounds, /*fail_round=*/0);
  prefetch->start(nullptr);  // the carried read, which fails
  OverlapIo io;
  io.push = [](const LayerBucket&, std::vector<Tensor>, bool) { return absl::OkStatus(); };
  absl::Mutex mu;
  std::vector<float> seen;
  absl::Status s =
      run_overlapped(2, layer_buckets({1}, 0), io, recording_compute(kLayers, &seen, &mu),
                     {prefetch.get(), /*first_started=*/true, /*carry_next=*/false});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(seen, (std::vector<float>{1, 2}));
}

}  // namespace
}  // namespace psflow::internal

#include "psflow/dataset.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "data/dataset_internal.h"
#include "data/idx_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

// Every element of one pass; fails (rather than hangs) past `limit`.
absl::StatusOr<std::vector<Structure>> collect(const Dataset& ds, size_t limit = 100000) {
  DatasetIterator it = ds.make_iterator();
  std::vector<Structure> out;
  for (size_t i = 0; i <= limit; ++i) {
    absl::StatusOr<std::optional<Structure>> next = it.get_next();
    if (!next.ok()) return next.status();
    if (!next->has_value()) return out;
    out.push_back(**next);
  }
  return absl::OutOfRangeError("more elements than the test's limit");
}

int64_t as_int(const Structure& s) { return s.tensor().scalar_value<int64_t>(); }

std::vector<int64_t> ints(const Dataset& ds, size_t limit = 100000) {
  absl::StatusOr<std::vector<Structure>> elems = collect(ds, limit);
  EXPECT_TRUE(elems.ok()) << elems.status();
  std::vector<int64_t> out;
  if (!elems.ok()) return out;
  for (const Structure& e : *elems) out.push_back(as_int(e));
  return out;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// uint8 [n, 2, 3] with element (i, r, c) = 6 i + 3 r + c (mod 256).
Tensor images(int64_t n) {
  std::vector<uint8_t> v(static_cast<size_t>(n * 6));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>(i);
  return Tensor::from_vector<uint8_t>(v, {n, 2, 3});
}

// ---- sources ----

TEST(DatasetSourcesTest, FromTensorSlicesOverImagesAndLabelsSharesBuffers) {
  const Tensor x = images(5);
  const Tensor y = Tensor::from_vector<int32_t>({10, 11, 12, 13, 14});
  Dataset ds = Dataset::from_tensor_slices(Structure::tuple({x, y}));
  ASSERT_TRUE(ds.status().ok()) << ds.status();
  EXPECT_EQ(ds.cardinality(), 5);
  absl::StatusOr<std::vector<Structure>> elems = collect(ds);
  ASSERT_TRUE(elems.ok()) << elems.status();
  ASSERT_EQ(elems->size(), 5u);
  for (int64_t i = 0; i < 5; ++i) {
    const Structure& e = (*elems)[static_cast<size_t>(i)];
    ASSERT_EQ(e.kind(), Structure::Kind::kTuple);
    ASSERT_EQ(e.size(), 2u);
    EXPECT_EQ(e[0].tensor(), *x.slice(i, i + 1).reshape({2, 3}));
    EXPECT_EQ(e[1].tensor(), Tensor::scalar<int32_t>(static_cast<int32_t>(10 + i)));
    // A view into the original buffer, not a copy.
    EXPECT_EQ(e[0].tensor().buffer(), x.buffer());
    EXPECT_EQ(e[0].tensor().raw_data(), static_cast<const uint8_t*>(x.raw_data()) + 6 * i);
  }
}

TEST(DatasetSourcesTest, FromTensorSlicesKeepsDictNesting) {
  Dataset ds = Dataset::from_tensor_slices(
      Structure::dict({{"a", Tensor::from_vector<float>({1, 2})},
                       {"b", Structure::list({Tensor::from_strings({"x", "y"})})}}));
  absl::StatusOr<std::vector<Structure>> elems = collect(ds);
  ASSERT_TRUE(elems.ok()) << elems.status();
  ASSERT_EQ(elems->size(), 2u);
  EXPECT_EQ((*elems)[1], Structure::dict({{"a", Tensor::scalar<float>(2)},
                                          {"b", Structure::list({Tensor::scalar_string("y")})}}));
}

TEST(DatasetSourcesTest, FromTensorSlicesRejectsUnequalFirstDimensionsNamingTheLeaf) {
  Dataset ds = Dataset::from_tensor_slices(Structure::dict(
      {{"images", images(60)}, {"labels", Tensor::from_vector<int32_t>({1, 2, 3})}}));
  EXPECT_EQ(ds.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ds.status().message(), HasSubstr("['labels'] has 3"));
  EXPECT_THAT(ds.status().message(), HasSubstr("['images'] has 60"));
  // The same error comes back from iterating, and from transforms of it.
  auto next = ds.batch(2).make_iterator().get_next();
  EXPECT_EQ(next.status(), ds.status());

  EXPECT_EQ(
      Dataset::from_tensor_slices(Structure::tuple({Tensor::scalar<float>(1)})).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Dataset::from_tensor_slices(Structure::tuple({images(2), 3})).status().message(),
              HasSubstr("leaf [1]"));
}

TEST(DatasetSourcesTest, FromTensorsIsOneElement) {
  const Structure s = Structure::tuple({images(3), 7});
  Dataset ds = Dataset::from_tensors(s);
  EXPECT_EQ(ds.cardinality(), 1);
  absl::StatusOr<std::vector<Structure>> elems = collect(ds);
  ASSERT_TRUE(elems.ok());
  EXPECT_THAT(*elems, ElementsAre(s));
}

TEST(DatasetSourcesTest, RangeFollowsPython) {
  EXPECT_THAT(ints(Dataset::range(5)), ElementsAre(0, 1, 2, 3, 4));
  EXPECT_THAT(ints(Dataset::range(10, 0, -3)), ElementsAre(10, 7, 4, 1));
  EXPECT_THAT(ints(Dataset::range(2, 9, 3)), ElementsAre(2, 5, 8));
  EXPECT_THAT(ints(Dataset::range(5, 5)), ElementsAre());
  EXPECT_THAT(ints(Dataset::range(5, 0)), ElementsAre());
  EXPECT_EQ(Dataset::range(10, 0, -3).cardinality(), 4);
  EXPECT_EQ(Dataset::range(2, 9, 3).cardinality(), 3);
  // No overflow at the edges of int64.
  constexpr int64_t kMax = INT64_MAX;
  EXPECT_THAT(ints(Dataset::range(kMax - 2, kMax)), ElementsAre(kMax - 2, kMax - 1));
  EXPECT_EQ(Dataset::range(INT64_MIN, kMax, kMax).cardinality(), 3);

  absl::Status bad = Dataset::range(0, 10, 0).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("step"));
}

TEST(DatasetSourcesTest, FromGeneratorRestartsEveryPass) {
  int factory_calls = 0;
  Dataset ds = Dataset::from_generator([&factory_calls] {
    ++factory_calls;
    return Dataset::Generator([i = 0]() mutable -> absl::StatusOr<std::optional<Structure>> {
      if (i == 3) return std::nullopt;
      return std::optional<Structure>(Structure(Tensor::scalar<int64_t>(i++)));
    });
  });
  EXPECT_EQ(ds.cardinality(), kUnknownCardinality);
  EXPECT_THAT(ints(ds.repeat(2)), ElementsAre(0, 1, 2, 0, 1, 2));
  EXPECT_EQ(factory_calls, 2);
}

TEST(DatasetTest, DefaultDatasetAndMovedFromIteratorFailCleanly) {
  Dataset none;
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition);
  // The first error wins over later argument errors.
  EXPECT_EQ(none.batch(0).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Dataset::range(3).batch(0).shard(2, 5).status().message(), HasSubstr("batch_size"));

  DatasetIterator it = Dataset::range(3).make_iterator();
  DatasetIterator moved = std::move(it);
  EXPECT_EQ(it.get_next().status().code(),  // NOLINT(bugprone-use-after-move)
            absl::StatusCode::kFailedPrecondition);
  auto first = moved.get_next();
  ASSERT_TRUE(first.ok() && first->has_value());
  EXPECT_EQ(as_int(**first), 0);
}

// ---- shuffle ----

TEST(DatasetShuffleTest, SeededShuffleIsADeterministicPermutation) {
  for (int64_t buffer : {1, 10, 100, 1000}) {
    const std::vector<int64_t> a = ints(Dataset::range(100).shuffle(buffer, 42));
    // A separately built Dataset (as in another process) gives the same order.
    const std::vector<int64_t> b = ints(Dataset::range(100).shuffle(buffer, 42));
    EXPECT_EQ(a, b) << "buffer " << buffer;
    std::vector<int64_t> sorted = a;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, iota(100)) << "buffer " << buffer;
    if (buffer == 1) {
      EXPECT_EQ(a, iota(100));  // a one-element buffer cannot reorder
    } else {
      EXPECT_NE(a, iota(100)) << "buffer " << buffer;
    }
  }
}

TEST(DatasetShuffleTest, DifferentSeedsGiveDifferentOrders) {
  EXPECT_NE(ints(Dataset::range(100).shuffle(100, 1)), ints(Dataset::range(100).shuffle(100, 2)));
}

TEST(DatasetShuffleTest, ReshuffleEachIterationIsStillReproducible) {
  const Dataset a = Dataset::range(50).shuffle(50, 7);
  const Dataset b = Dataset::range(50).shuffle(50, 7);
  const std::vector<int64_t> a1 = ints(a), a2 = ints(a);
  EXPECT_NE(a1, a2);  // each pass reshuffles
  EXPECT_EQ(ints(b), a1);
  EXPECT_EQ(ints(b), a2);

  // Under repeat each epoch is a permutation, and epochs differ.
  const std::vector<int64_t> epochs = ints(Dataset::range(50).shuffle(50, 7).repeat(2));
  ASSERT_EQ(epochs.size(), 100u);
  EXPECT_EQ(std::vector<int64_t>(epochs.begin(), epochs.begin() + 50), a1);
  EXPECT_EQ(std::vector<int64_t>(epochs.begin() + 50, epochs.end()), a2);

  const Dataset fixed = Dataset::range(50).shuffle(50, 7, /*reshuffle_each_iteration=*/false);
  EXPECT_EQ(ints(fixed), ints(fixed));
}

TEST(DatasetShuffleTest, UnseededShufflesDifferPerDataset) {
  // Two unseeded Datasets stand for two workers: 1 in 100! to collide.
  EXPECT_NE(ints(Dataset::range(100).shuffle(100)), ints(Dataset::range(100).shuffle(100)));
  const Dataset fixed = Dataset::range(100).shuffle(100, std::nullopt, false);
  EXPECT_EQ(ints(fixed), ints(fixed));
}

TEST(DatasetShuffleTest, RejectsNonPositiveBuffer) {
  absl::Status st = Dataset::range(3).shuffle(0).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("buffer_size must be >= 1, got 0"));
}

TEST(DatasetShuffleTest, ConcurrentPassesOverOneDatasetArePermutations) {
  const Dataset ds = Dataset::range(500).shuffle(64, 3);
  std::vector<std::vector<int64_t>> results(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&ds, &results, t] { results[t] = ints(ds); });
  }
  for (std::thread& t : threads) t.join();
  for (std::vector<int64_t>& r : results) {
    std::sort(r.begin(), r.end());
    EXPECT_EQ(r, iota(500));
  }
}

// ---- shard ----

TEST(DatasetShardTest, ShardsPartitionExactly) {
  constexpr int64_t kN = 103;
  constexpr int64_t kShards = 4;
  std::multiset<int64_t> all;
  for (int64_t index = 0; index < kShards; ++index) {
    const Dataset shard = Dataset::range(kN).shard(kShards, index);
    const std::vector<int64_t> got = ints(shard);
    EXPECT_EQ(shard.cardinality(), static_cast<int64_t>(got.size()));
    for (int64_t v : got) EXPECT_EQ(v % kShards, index);
    all.insert(got.begin(), got.end());
  }
  // Union is everything, and no element twice (disjoint).
  EXPECT_EQ(std::vector<int64_t>(all.begin(), all.end()), iota(kN));
  // More shards than elements: the extra shards are empty.
  EXPECT_THAT(ints(Dataset::range(2).shard(5, 3)), ElementsAre());
  EXPECT_EQ(Dataset::range(2).shard(5, 3).cardinality(), 0);
}

TEST(DatasetShardTest, RejectsBadArgumentsNamingThem) {
  absl::Status st = Dataset::range(10).shard(4, 4).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("index must be in [0, 4), got 4"));
  EXPECT_THAT(Dataset::range(10).shard(4, -1).status().message(), HasSubstr("got -1"));
  EXPECT_THAT(Dataset::range(10).shard(0, 0).status().message(),
              HasSubstr("num_shards must be >= 1, got 0"));
}

// ---- batch ----

TEST(DatasetBatchTest, RemainderKeptOrDropped) {
  absl::StatusOr<std::vector<Structure>> kept = collect(Dataset::range(10).batch(4));
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->size(), 3u);
  EXPECT_EQ((*kept)[0].tensor(), Tensor::from_vector<int64_t>({0, 1, 2, 3}));
  EXPECT_EQ((*kept)[1].tensor(), Tensor::from_vector<int64_t>({4, 5, 6, 7}));
  EXPECT_EQ((*kept)[2].tensor(), Tensor::from_vector<int64_t>({8, 9}));
  EXPECT_EQ(Dataset::range(10).batch(4).cardinality(), 3);

  absl::StatusOr<std::vector<Structure>> dropped =
      collect(Dataset::range(10).batch(4, /*drop_remainder=*/true));
  ASSERT_TRUE(dropped.ok());
  ASSERT_EQ(dropped->size(), 2u);
  EXPECT_EQ((*dropped)[1].tensor(), Tensor::from_vector<int64_t>({4, 5, 6, 7}));
  EXPECT_EQ(Dataset::range(10).batch(4, true).cardinality(), 2);
  EXPECT_EQ(Dataset::range(8).batch(4, true).cardinality(), 2);
  EXPECT_EQ(Dataset::range(3).batch(4, true).cardinality(), 0);
  EXPECT_THAT(ints(Dataset::range(3).batch(4, true)), ElementsAre());
}

TEST(DatasetBatchTest, StacksTupleLeavesContiguously) {
  const Tensor x = images(7);
  const Tensor y = Tensor::from_vector<int32_t>({0, 1, 2, 3, 4, 5, 6});
  absl::StatusOr<std::vector<Structure>> batches =
      collect(Dataset::from_tensor_slices(Structure::tuple({x, y})).batch(3));
  ASSERT_TRUE(batches.ok()) << batches.status();
  ASSERT_EQ(batches->size(), 3u);
  EXPECT_EQ((*batches)[0][0].tensor(), x.slice(0, 3).clone());
  EXPECT_EQ((*batches)[1][0].tensor(), x.slice(3, 6).clone());
  EXPECT_EQ((*batches)[2][0].tensor(), x.slice(6, 7).clone());
  EXPECT_EQ((*batches)[1][1].tensor(), Tensor::from_vector<int32_t>({3, 4, 5}));
  // A fresh contiguous tensor, not a view of the source.
  EXPECT_NE((*batches)[0][0].tensor().buffer(), x.buffer());
}

TEST(DatasetBatchTest, PythonScalarsBecomeOneDimensionalTensors) {
  Dataset ds = Dataset::range(3).map([](Structure s) -> absl::StatusOr<Structure> {
    const int64_t i = as_int(s);
    return Structure::dict({{"i", i},
                            {"f", 0.5 * static_cast<double>(i)},
                            {"b", i % 2 == 0},
                            {"s", std::string(1, static_cast<char>('a' + i))},
                            {"t", Tensor::from_strings({"p", "q"})}});
  });
  absl::StatusOr<std::vector<Structure>> batches = collect(ds.batch(3));
  ASSERT_TRUE(batches.ok()) << batches.status();
  ASSERT_EQ(batches->size(), 1u);
  const Structure& b = (*batches)[0];
  EXPECT_EQ(b["i"].tensor(), Tensor::from_vector<int64_t>({0, 1, 2}));
  EXPECT_EQ(b["f"].tensor(), Tensor::from_vector<double>({0, 0.5, 1}));
  EXPECT_EQ(b["b"].tensor(), Tensor::from_vector<bool>({true, false, true}));
  EXPECT_EQ(b["s"].tensor(), Tensor::from_strings({"a", "b", "c"}));
  EXPECT_EQ(b["t"].tensor(), Tensor::from_strings({"p", "q", "p", "q", "p", "q"}, {3, 2}));
}

TEST(DatasetBatchTest, MismatchedElementsAreInvalidArgumentNamingTheLeaf) {
  Dataset ds = Dataset::range(4).map([](Structure s) -> absl::StatusOr<Structure> {
    const int64_t n = as_int(s) == 2 ? 3 : 2;
    return Structure::tuple({1, Tensor(DType::kFloat32, {n})});
  });
  DatasetIterator it = ds.batch(4).make_iterator();
  auto next = it.get_next();
  EXPECT_EQ(next.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(next.status().message(), HasSubstr("element 2"));
  EXPECT_THAT(next.status().message(), HasSubstr("leaf [1]"));
  EXPECT_THAT(next.status().message(), HasSubstr("float32 [3] vs float32 [2]"));

  auto kinds = internal::stack_elements({Structure(1), Structure(1.5)});
  EXPECT_EQ(kinds.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(kinds.status().message(), HasSubstr("a float vs an int"));
}

TEST(DatasetBatchTest, RejectsNonPositiveBatchSize) {
  for (int64_t bad : {0, -3}) {
    absl::Status st = Dataset::range(3).batch(bad).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(st.message(), HasSubstr("batch_size must be >= 1, got " + std::to_string(bad)));
  }
}

// ---- repeat, take, skip ----

TEST(DatasetRepeatTest, RepeatThenBatchCrossesEpochBoundaries) {
  Dataset ds = Dataset::range(5).repeat(2).batch(4);
  EXPECT_EQ(ds.cardinality(), 3);
  absl::StatusOr<std::vector<Structure>> batches = collect(ds);
  ASSERT_TRUE(batches.ok());
  ASSERT_EQ(batches->size(), 3u);
  EXPECT_EQ((*batches)[0].tensor(), Tensor::from_vector<int64_t>({0, 1, 2, 3}));
  EXPECT_EQ((*batches)[1].tensor(), Tensor::from_vector<int64_t>({4, 0, 1, 2}));
  EXPECT_EQ((*batches)[2].tensor(), Tensor::from_vector<int64_t>({3, 4}));
}

TEST(DatasetRepeatTest, ForeverRepeatAndItsEdges) {
  EXPECT_EQ(Dataset::range(3).repeat().cardinality(), kInfiniteCardinality);
  EXPECT_EQ(Dataset::range(3).repeat().take(7).cardinality(), 7);
  EXPECT_THAT(ints(Dataset::range(3).repeat().take(7)), ElementsAre(0, 1, 2, 0, 1, 2, 0));
  // An empty input ends instead of spinning.
  EXPECT_THAT(ints(Dataset::range(0).repeat()), ElementsAre());
  EXPECT_EQ(Dataset::range(0).repeat().cardinality(), 0);
  EXPECT_THAT(ints(Dataset::range(3).repeat(0)), ElementsAre());
  EXPECT_THAT(Dataset::range(3).repeat(-2).status().message(),
              HasSubstr("count must be >= 0, or -1 to repeat forever, got -2"));
}

TEST(DatasetRepeatTest, TakeAndSkip) {
  EXPECT_THAT(ints(Dataset::range(10).skip(3).take(4)), ElementsAre(3, 4, 5, 6));
  EXPECT_EQ(Dataset::range(10).skip(3).take(4).cardinality(), 4);
  EXPECT_EQ(ints(Dataset::range(10).take(-1)), iota(10));
  EXPECT_THAT(ints(Dataset::range(10).take(0)), ElementsAre());
  EXPECT_THAT(ints(Dataset::range(10).skip(-1)), ElementsAre());
  EXPECT_THAT(ints(Dataset::range(10).skip(20)), ElementsAre());
  EXPECT_EQ(Dataset::range(10).skip(20).cardinality(), 0);
  EXPECT_EQ(Dataset::range(10).take(20).cardinality(), 10);
  EXPECT_EQ(Dataset::range(10).skip(-1).cardinality(), 0);
  EXPECT_EQ(Dataset::range(10).take(-5).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Dataset::range(10).skip(-5).status().code(), absl::StatusCode::kInvalidArgument);
}

// ---- map, filter ----

Dataset::MapFn fail_at(std::set<int64_t> bad) {
  return [bad](Structure s) -> absl::StatusOr<Structure> {
    const int64_t i = as_int(s);
    if (bad.count(i) > 0) return absl::DataLossError("bad element " + std::to_string(i));
    return Structure(Tensor::scalar<int64_t>(10 * i));
  };
}

// One pass as strings: "10", "err:bad element 2", ...; bounded.
std::vector<std::string> trace(const Dataset& ds) {
  std::vector<std::string> out;
  DatasetIterator it = ds.make_iterator();
  for (int i = 0; i < 1000; ++i) {
    auto next = it.get_next();
    if (!next.ok()) {
      out.push_back("err:" + std::string(next.status().message()));
      continue;
    }
    if (!next->has_value()) return out;
    const Tensor& t = (**next).tensor();
    std::vector<int64_t> values(t.flat<int64_t>().begin(), t.flat<int64_t>().end());
    out.push_back(absl::StrJoin(values, ","));
  }
  ADD_FAILURE() << "pass did not end";
  return out;
}

TEST(DatasetMapTest, MapErrorsPropagateAndThePassContinues) {
  EXPECT_THAT(trace(Dataset::range(5).map(fail_at({2}))),
              ElementsAre("0", "10", "err:bad element 2", "30", "40"));
  // Through batch: the error comes first, the batch completes afterwards.
  EXPECT_THAT(trace(Dataset::range(6).map(fail_at({2})).batch(2)),
              ElementsAre("0,10", "err:bad element 2", "30,40", "50"));
  EXPECT_EQ(Dataset::range(5).map(fail_at({})).cardinality(), 5);
}

TEST(DatasetMapTest, FilterKeepsMatchingElements) {
  Dataset even = Dataset::range(10).filter(
      [](const Structure& s) -> absl::StatusOr<bool> { return as_int(s) % 2 == 0; });
  EXPECT_THAT(ints(even), ElementsAre(0, 2, 4, 6, 8));
  EXPECT_EQ(even.cardinality(), kUnknownCardinality);
  Dataset failing = Dataset::range(3).filter([](const Structure& s) -> absl::StatusOr<bool> {
    if (as_int(s) == 1) return absl::InvalidArgumentError("no");
    return true;
  });
  EXPECT_THAT(trace(failing), ElementsAre("0", "err:no", "2"));
}

// ---- prefetch ----

TEST(DatasetPrefetchTest, SameSequenceAsWithoutPrefetch) {
  auto pipeline = [] {
    return Dataset::range(1000).shuffle(100, 5).map(fail_at({17, 400})).batch(16);
  };
  const std::vector<std::string> plain = trace(pipeline());
  ASSERT_EQ(plain.size(), 65u);  // 998 good elements: 62 batches of 16, one of 6; 2 errors
  for (int64_t buffer : {1, 2, 8}) {
    EXPECT_EQ(trace(pipeline().prefetch(buffer)), plain) << "buffer " << buffer;
  }
  EXPECT_EQ(trace(pipeline().prefetch(0)), plain);
  EXPECT_EQ(pipeline().prefetch(4).cardinality(), pipeline().cardinality());
  // Prefetching inside a repeat restarts a producer every epoch.
  EXPECT_EQ(ints(Dataset::range(5).prefetch(2).repeat(3).prefetch(1)),
            ints(Dataset::range(5).repeat(3)));
}

TEST(DatasetPrefetchTest, EarlyDestroyedIteratorStopsItsThread) {
  auto produced = std::make_shared<std::atomic<int64_t>>(0);
  Dataset endless = Dataset::from_generator([produced] {
    return Dataset::Generator([produced]() -> absl::StatusOr<std::optional<Structure>> {
      return std::optional<Structure>(Structure(Tensor::scalar<int64_t>(produced->fetch_add(1))));
    });
  });
  {
    DatasetIterator it = endless.prefetch(3).make_iterator();
    for (int64_t i = 0; i < 5; ++i) {
      auto next = it.get_next();
      ASSERT_TRUE(next.ok() && next->has_value());
      EXPECT_EQ(as_int(**next), i);
    }
  }  // destroying the iterator joins the producer, which must not hang
  // Bounded buffer: at most 5 consumed + 3 buffered + 1 in flight.
  EXPECT_LE(produced->load(), 9);
  const int64_t after = produced->load();
  // Iterators that are never read, or read from an endless repeat, also stop.
  { DatasetIterator unused = endless.prefetch(2).make_iterator(); }
  EXPECT_EQ(produced->load(), after);
  {
    DatasetIterator it =
        Dataset::range(3).repeat().prefetch(4).batch(2).prefetch(2).make_iterator();
    ASSERT_TRUE(it.get_next().ok());
  }
}

TEST(DatasetPrefetchTest, RejectsNegativeBuffer) {
  absl::Status st = Dataset::range(3).prefetch(-1).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("buffer_size must be >= 0"));
  EXPECT_THAT(st.message(), HasSubstr("got -1"));
}

// ---- a real pipeline ----

TEST(DatasetPipelineTest, FashionMnistEpochOfShuffledBatches) {
  absl::StatusOr<FashionMnist> data = load_fashion_mnist();
  // The install script installs the dataset package: its absence is a
  // broken setup, not a reason to skip.
  ASSERT_TRUE(data.ok()) << data.status();
  const Dataset ds =
      Dataset::from_tensor_slices(Structure::tuple({data->train_images, data->train_labels}))
          .shard(2, 1)
          .shuffle(10000, 1)
          .batch(256, /*drop_remainder=*/true)
          .prefetch(2);
  ASSERT_TRUE(ds.status().ok()) << ds.status();
  EXPECT_EQ(ds.cardinality(), 30000 / 256);
  DatasetIterator it = ds.make_iterator();
  int64_t batches = 0;
  int64_t label_sum = 0;
  for (int i = 0; i < 1000; ++i) {
    auto next = it.get_next();
    ASSERT_TRUE(next.ok()) << next.status();
    if (!next->has_value()) break;
    const Structure& b = **next;
    ASSERT_EQ(b[0].tensor().shape(), (Shape{256, 28, 28}));
    ASSERT_EQ(b[1].tensor().shape(), (Shape{256}));
    for (uint8_t label : b[1].tensor().flat<uint8_t>()) label_sum += label;
    ++batches;
  }
  EXPECT_EQ(batches, 30000 / 256);
  // Mean label of a shuffled sample of the balanced 0..9 classes.
  const double mean = static_cast<double>(label_sum) / static_cast<double>(batches * 256);
  EXPECT_NEAR(mean, 4.5, 0.2);
}

}  // namespace
}  // namespace psflow::internal

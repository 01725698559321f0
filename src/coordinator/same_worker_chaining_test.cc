// Same-worker RemoteValue chaining: the worker's bounded result cache, and
// the dispatcher sending references instead of values (with the fallback
// to values when the worker no longer holds a result), against a fake
// worker that keeps results the way ExecutorService does.
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "coordinator/cluster_coordinator_internal.h"
#include "coordinator/coordinator_test_util.h"
#include "coordinator/worker_connection.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/status_macros.h"
#include "worker/function_runner.h"
#include "worker/result_cache.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

PSFLOW_FUNCTION(swc_test_add, ctx, args) {
  int64_t sum = 0;
  for (const Structure& item : args.flatten()) sum += item.int_value();
  return Structure(sum);
}

TEST(ResultCacheTest, KeepsWithinEntryAndByteBoundsLeastRecentlyUsedFirst) {
  ResultCache cache(ResultCacheOptions{.max_entries = 3, .max_bytes = 100});
  EXPECT_TRUE(cache.put(1, 1, Structure(1), 10));
  EXPECT_TRUE(cache.put(1, 2, Structure(2), 10));
  EXPECT_TRUE(cache.put(1, 3, Structure(3), 10));
  EXPECT_EQ(cache.get(1, 1), Structure(1));        // 1 is now the most recent.
  EXPECT_TRUE(cache.put(1, 4, Structure(4), 10));  // Evicts 2.
  EXPECT_EQ(cache.get(1, 2), std::nullopt);
  EXPECT_EQ(cache.get(1, 1), Structure(1));
  EXPECT_EQ(cache.get(1, 4), Structure(4));
  // Another coordinator's session is another key.
  EXPECT_EQ(cache.get(2, 4), std::nullopt);
  // Bytes: a result of 95 bytes leaves room for nothing else.
  EXPECT_TRUE(cache.put(1, 5, Structure(5), 95));
  EXPECT_EQ(cache.stats().entries, 1);
  EXPECT_EQ(cache.stats().bytes, 95);
  // Larger than the whole cache: not kept, nothing evicted.
  EXPECT_FALSE(cache.put(1, 6, Structure(6), 101));
  EXPECT_EQ(cache.get(1, 5), Structure(5));
  // A retried closure replaces its result.
  EXPECT_TRUE(cache.put(1, 5, Structure(55), 20));
  EXPECT_EQ(cache.get(1, 5), Structure(55));
  EXPECT_EQ(cache.stats().bytes, 20);
  const ResultCacheStats stats = cache.stats();
  EXPECT_EQ(stats.hits, 5);
  EXPECT_EQ(stats.misses, 2);

  ResultCache disabled(ResultCacheOptions{.max_entries = 0});
  EXPECT_FALSE(disabled.put(1, 1, Structure(1), 1));
}

TEST(ResultCacheTest, ReplaceAtPath) {
  const Structure args = Structure::tuple(
      {1, Structure::dict({{"a", Structure()}, {"b", Structure::list({2, Structure()})}})});
  auto replaced = replace_at_path(args, {int64_t{1}, std::string("a")}, Structure(7));
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  replaced = replace_at_path(*replaced, {int64_t{1}, std::string("b"), int64_t{1}}, Structure(8));
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_EQ(*replaced,
            Structure::tuple({1, Structure::dict({{"a", 7}, {"b", Structure::list({2, 8})}})}));
  EXPECT_EQ(*replace_at_path(Structure(), {}, Structure(3)), Structure(3));
  const absl::Status bad = replace_at_path(args, {int64_t{5}}, Structure(1)).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("args[5]"));
  EXPECT_FALSE(replace_at_path(args, {std::string("x")}, Structure(1)).ok());
}

// A worker that keeps results and resolves references as ExecutorService
// does, runs functions inline, and records what it was sent.
// Thread-safety: thread-safe.
class CachingFakeWorker final : public WorkerConnection {
 public:
  struct Seen {
    uint64_t closure_id;
    Structure args;
    std::vector<RunRequest::InputRef> refs;
  };

  bool supports_result_refs() const override { return true; }
  std::string task_name() const override { return "/job:worker/replica:0/task:0"; }
  void cancel(uint64_t) override {}

  void run_async(RunRequest request, Done done) override {
    RunResult result;
    {
      absl::MutexLock lock(&mu_);
      seen_.push_back(Seen{request.closure_id, request.args, request.input_refs});
      result.incarnation = incarnation_;
    }
    Structure args = request.args;
    for (const RunRequest::InputRef& ref : request.input_refs) {
      std::optional<Structure> value = get_result(request.result_session, ref.closure_id);
      if (!value.has_value()) {
        result.input_refs_missing = true;
        std::move(done)(std::move(result));
        return;
      }
      args = *replace_at_path(args, ref.path, *std::move(value));
    }
    std::atomic<bool> cancelled{false};
    WorkerResources resources;
    WorkerContext ctx(0, request.closure_id, resources, cancelled);
    result.output =
        run_registered_function(FunctionRegistry::global(), request.function_name, ctx, args);
    if (result.output.ok() && request.result_session != 0) {
      result.result_kept = put_result(request.result_session, request.closure_id, *result.output);
    }
    std::move(done)(std::move(result));
  }

  // A restart: a new process, which holds no results.
  void restart() {
    absl::MutexLock lock(&mu_);
    ++incarnation_;
    cache_ = std::make_unique<ResultCache>();
  }
  // Drops every result, as eviction would.
  void evict() {
    absl::MutexLock lock(&mu_);
    cache_ = std::make_unique<ResultCache>();
  }
  std::vector<Seen> seen() {
    absl::MutexLock lock(&mu_);
    return seen_;
  }

 private:
  std::optional<Structure> get_result(uint64_t session, uint64_t id) {
    absl::MutexLock lock(&mu_);
    return cache_->get(session, id);
  }
  bool put_result(uint64_t session, uint64_t id, Structure value) {
    absl::MutexLock lock(&mu_);
    return cache_->put(session, id, std::move(value), 8);
  }

  absl::Mutex mu_;
  uint64_t incarnation_ ABSL_GUARDED_BY(mu_) = 1;
  std::unique_ptr<ResultCache> cache_ ABSL_GUARDED_BY(mu_) = std::make_unique<ResultCache>();
  std::vector<Seen> seen_ ABSL_GUARDED_BY(mu_);
};

class SameWorkerChainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto worker = std::make_unique<CachingFakeWorker>();
    worker_ = worker.get();
    std::vector<std::unique_ptr<WorkerConnection>> workers;
    workers.push_back(std::move(worker));
    ClusterCoordinatorOptions options;
    options.same_worker_chaining = chaining_;
    auto c = internal::create_coordinator(std::move(workers), options);
    ASSERT_TRUE(c.ok()) << c.status();
    coordinator_ = *std::move(c);
  }

  // The requests of closure `id`, in order.
  std::vector<CachingFakeWorker::Seen> requests_of(uint64_t id) {
    std::vector<CachingFakeWorker::Seen> out;
    for (auto& s : worker_->seen()) {
      if (s.closure_id == id) out.push_back(s);
    }
    return out;
  }

  bool chaining_ = true;
  CachingFakeWorker* worker_ = nullptr;
  std::unique_ptr<ClusterCoordinator> coordinator_;
};

TEST_F(SameWorkerChainingTest, InputOfTheSameWorkerTravelsAsAReference) {
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue a,
                              coordinator_->schedule("swc_test_add", Structure::tuple({1, 2})));
  PSFLOW_ASSERT_OK_AND_ASSIGN(
      RemoteValue b,
      coordinator_->schedule("swc_test_add",
                             RemoteStructure::tuple({10, RemoteStructure::dict({{"x", a}})})));
  ASSERT_TRUE(coordinator_->join().ok());
  EXPECT_EQ(*b.fetch(), Structure(int64_t{13}));
  const auto sent = requests_of(b.closure_id());
  ASSERT_EQ(sent.size(), 1u);
  // The value stayed on the worker: None in its place, and a reference.
  EXPECT_EQ(sent[0].args, Structure::tuple({10, Structure::dict({{"x", Structure()}})}));
  ASSERT_EQ(sent[0].refs.size(), 1u);
  EXPECT_EQ(sent[0].refs[0].closure_id, a.closure_id());
  EXPECT_EQ(sent[0].refs[0].path, (StructurePath{int64_t{1}, std::string("x")}));
}

TEST_F(SameWorkerChainingTest, AnEvictedInputIsResentAsAValue) {
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue a,
                              coordinator_->schedule("swc_test_add", Structure::tuple({1, 2})));
  ASSERT_TRUE(coordinator_->join().ok());
  worker_->evict();
  PSFLOW_ASSERT_OK_AND_ASSIGN(
      RemoteValue b, coordinator_->schedule("swc_test_add", RemoteStructure::tuple({a, 4})));
  ASSERT_TRUE(coordinator_->join().ok());  // The miss never reaches the user.
  EXPECT_EQ(*b.fetch(), Structure(int64_t{7}));
  const auto sent = requests_of(b.closure_id());
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].refs.size(), 1u);
  EXPECT_TRUE(sent[1].refs.empty());
  EXPECT_EQ(sent[1].args, Structure::tuple({int64_t{3}, 4}));
}

TEST_F(SameWorkerChainingTest, AfterARestartValuesAreSentWithoutTrying) {
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue a,
                              coordinator_->schedule("swc_test_add", Structure::tuple({1, 2})));
  ASSERT_TRUE(coordinator_->join().ok());
  worker_->restart();
  // The first closure after the restart learns the new incarnation...
  PSFLOW_ASSERT_OK_AND_ASSIGN(
      RemoteValue b, coordinator_->schedule("swc_test_add", RemoteStructure::tuple({a, 1})));
  ASSERT_TRUE(coordinator_->join().ok());
  EXPECT_EQ(*b.fetch(), Structure(int64_t{4}));
  EXPECT_EQ(requests_of(b.closure_id()).size(), 2u);  // Reference missed, then values.
  // ...so later closures send the old process's results as values at once,
  // and those of the new process by reference.
  PSFLOW_ASSERT_OK_AND_ASSIGN(
      RemoteValue c, coordinator_->schedule("swc_test_add", RemoteStructure::tuple({a, b})));
  ASSERT_TRUE(coordinator_->join().ok());
  EXPECT_EQ(*c.fetch(), Structure(int64_t{7}));
  const auto sent = requests_of(c.closure_id());
  ASSERT_EQ(sent.size(), 1u);
  ASSERT_EQ(sent[0].refs.size(), 1u);
  EXPECT_EQ(sent[0].refs[0].closure_id, b.closure_id());
  EXPECT_EQ(sent[0].args, Structure::tuple({int64_t{3}, Structure()}));
}

class SameWorkerChainingOffTest : public SameWorkerChainingTest {
 protected:
  void SetUp() override {
    chaining_ = false;
    SameWorkerChainingTest::SetUp();
  }
};

TEST_F(SameWorkerChainingOffTest, ValuesOnly) {
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue a,
                              coordinator_->schedule("swc_test_add", Structure::tuple({1, 2})));
  PSFLOW_ASSERT_OK_AND_ASSIGN(
      RemoteValue b, coordinator_->schedule("swc_test_add", RemoteStructure::tuple({a, 4})));
  ASSERT_TRUE(coordinator_->join().ok());
  EXPECT_EQ(*b.fetch(), Structure(int64_t{7}));
  const auto sent = requests_of(b.closure_id());
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_TRUE(sent[0].refs.empty());
  EXPECT_EQ(sent[0].args, Structure::tuple({int64_t{3}, 4}));
}

}  // namespace
}  // namespace psflow::internal

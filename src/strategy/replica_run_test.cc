// ReplicaGroup::run and ReplicaContext collectives: TF's strategy.run
// examples, a barrier all-reduce over real threads, and the failure modes
// (mismatches, early errors, early returns, timeouts) that must not hang.
#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/replica_group.h"
#include "strategy/replica_test_util.h"
#include "strategy/strategy_test_util.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::printed;
using ::psflow::internal::testing::test_group;
using ::testing::HasSubstr;
using ::testing::StartsWith;

using Args = std::vector<Structure>;
using Result = absl::StatusOr<Structure>;

std::string per_replica_text(const std::vector<std::string>& values) {
  std::string out = "PerReplica:{\n";
  for (size_t i = 0; i < values.size(); ++i) {
    out += "  " + std::to_string(i) + ": " + values[i] + (i + 1 < values.size() ? ",\n" : "\n");
  }
  return out + "}";
}

class ReplicaGroupRunTest : public ::testing::TestWithParam<int> {};

// strategy.run example 1: constant tensor input.
TEST_P(ReplicaGroupRunTest, ExampleConstantTensorInput) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  Tensor tensor_input = Tensor::scalar(3.0f);
  absl::StatusOr<PerReplica> result = group.run(
      [](const ReplicaContext&, const Args& args) -> Result {
        return Tensor::scalar(args[0].tensor().scalar_value<float>() * 2.0f);
      },
      {tensor_input});
  EXPECT_EQ(printed(result),
            per_replica_text(std::vector<std::string>(n, "Tensor<float32, []> 6")));
}

// strategy.run example 2: DistributedValues input (value_fn returns
// num_replicas_in_sync, replica_fn doubles it).
TEST_P(ReplicaGroupRunTest, ExampleDistributedValuesInput) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  PSFLOW_DV_ASSIGN(
      PerReplica distributed_values,
      group.experimental_distribute_values_from_function(
          [](const ValueContext& ctx) -> Result { return ctx.num_replicas_in_sync(); }));
  PSFLOW_DV_ASSIGN(PerReplica result,
                   group.run([](const ReplicaContext&,
                                const Args& args) -> Result { return args[0].int_value() * 2; },
                             {distributed_values}));
  EXPECT_EQ(result.debug_string(),
            per_replica_text(std::vector<std::string>(n, std::to_string(2 * n))));
}

// strategy.run example 3: all_reduce("sum") of the replica ids; TF prints
// PerReplica:{ 0: 1, 1: 1 } for two replicas.
TEST_P(ReplicaGroupRunTest, ExampleAllReduceReplicaIds) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  PSFLOW_DV_ASSIGN(
      PerReplica distributed_values,
      group.experimental_distribute_values_from_function([](const ValueContext& ctx) -> Result {
        return Tensor::scalar<int32_t>(ctx.replica_id_in_sync_group());
      }));
  absl::StatusOr<PerReplica> result = group.run(
      [](const ReplicaContext&, const Args& args) -> Result {
        return get_replica_context()->all_reduce("sum", args[0]);
      },
      {distributed_values});
  const int total = n * (n - 1) / 2;
  EXPECT_EQ(printed(result), per_replica_text(std::vector<std::string>(
                                 n, "Tensor<int32, []> " + std::to_string(total))));
}

TEST_P(ReplicaGroupRunTest, EachReplicaRunsOnItsOwnThread) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  std::vector<std::thread::id> ids(n);
  std::vector<int> seen_ids(n, -1);
  std::vector<int> seen_counts(n, -1);
  absl::StatusOr<PerReplica> result =
      group.run([&](const ReplicaContext& ctx, const Args&) -> Result {
        const int r = ctx.replica_id_in_sync_group();
        ids[r] = std::this_thread::get_id();
        seen_ids[r] = r;
        seen_counts[r] = ctx.num_replicas_in_sync();
        if (get_replica_context() != &ctx) return absl::InternalError("wrong context");
        // A barrier: completes only if all replicas run at the same time.
        return ctx.all_reduce(ReduceOp::kSum, Tensor::scalar<int64_t>(1));
      });
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(std::set<std::thread::id>(ids.begin(), ids.end()).size(), static_cast<size_t>(n));
  EXPECT_EQ(ids[0], std::this_thread::get_id());  // Replica 0 runs on the caller.
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(seen_ids[r], r);
    EXPECT_EQ(seen_counts[r], n);
    EXPECT_EQ((*result)[r], Structure(Tensor::scalar<int64_t>(n)));
  }
  EXPECT_EQ(get_replica_context(), nullptr);
}

TEST_P(ReplicaGroupRunTest, PerReplicaArgumentsAtAnyDepthPlainValuesUnchanged) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  std::vector<Structure> xs;
  std::vector<Structure> ys;
  for (int r = 0; r < n; ++r) {
    xs.push_back(r * 10);
    ys.push_back(Tensor::from_vector<float>({static_cast<float>(r), 0.5f}));
  }
  PerReplica x(xs);
  PerReplica y(ys);
  absl::StatusOr<PerReplica> result = group.run(
      [](const ReplicaContext&, const Args& args) -> Result { return Structure::tuple(args); },
      {x, Tensor::scalar(7.0), DistributedNest::tuple({y, DistributedNest::dict({{"k", x}})})});
  ASSERT_TRUE(result.ok()) << result.status();
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ((*result)[r],
              Structure::tuple({r * 10, Tensor::scalar(7.0),
                                Structure::tuple({ys[r], Structure::dict({{"k", r * 10}})})}));
  }
}

TEST_P(ReplicaGroupRunTest, ArgumentWithWrongReplicaCountFailsBeforeRunning) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  std::atomic<int> calls{0};
  absl::StatusOr<PerReplica> result = group.run(
      [&](const ReplicaContext&, const Args&) -> Result {
        ++calls;
        return 0;
      },
      {1, DistributedNest::list({PerReplica({1, 2, 3})})});
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(),
              HasSubstr("run: argument 1: at [0]: PerReplica has 3 values but there are"));
  EXPECT_EQ(calls.load(), 0);
}

// TF's testRunAndReduce: input 3, variable 1, replica_fn -> (x+v, x-v);
// SUM across replicas gives (4n, 2n).
TEST_P(ReplicaGroupRunTest, RunAndReduce) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  absl::StatusOr<PerReplica> result = group.run(
      [](const ReplicaContext&, const Args& args) -> Result {
        const float x = args[0].tensor().scalar_value<float>();
        const float v = args[1].tensor().scalar_value<float>();
        return Structure::tuple({Tensor::scalar(x + v), Tensor::scalar(x - v)});
      },
      {Tensor::scalar(3.0f), Tensor::scalar(1.0f)});
  ASSERT_TRUE(result.ok()) << result.status();
  absl::StatusOr<Structure> total = group.reduce(ReduceOp::kSum, *result, std::nullopt);
  EXPECT_EQ(printed(total),
            printed(Structure::tuple({Tensor::scalar(4.0f * n), Tensor::scalar(2.0f * n)})));
}

// Many rounds over 4 threads: every replica gets every round's sum / mean.
TEST_P(ReplicaGroupRunTest, AllReduceManyRoundsEveryReplicaGetsTheResult) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  constexpr int kRounds = 200;
  absl::StatusOr<PerReplica> result =
      group.run([&](const ReplicaContext& ctx, const Args&) -> Result {
        const int r = ctx.replica_id_in_sync_group();
        double checksum = 0;
        for (int round = 0; round < kRounds; ++round) {
          const ReduceOp op = round % 2 == 0 ? ReduceOp::kSum : ReduceOp::kMean;
          Tensor mine =
              Tensor::from_vector<float>({static_cast<float>(r + 1), static_cast<float>(round)});
          absl::StatusOr<Structure> got = ctx.all_reduce(op, mine);
          if (!got.ok()) return got.status();
          const float ids = n * (n + 1) / 2.0f;
          Tensor want = op == ReduceOp::kSum
                            ? Tensor::from_vector<float>({ids, static_cast<float>(n * round)})
                            : Tensor::from_vector<float>({ids / n, static_cast<float>(round)});
          absl::Status close = all_close(got->tensor(), want);
          if (!close.ok()) return close;
          checksum += got->tensor().flat<float>()[1];
        }
        return checksum;
      });
  ASSERT_TRUE(result.ok()) << result.status();
  for (int r = 1; r < n; ++r) EXPECT_EQ((*result)[r], (*result)[0]);
}

TEST_P(ReplicaGroupRunTest, AllReduceDtypesAndNests) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  absl::StatusOr<PerReplica> result =
      group.run([&](const ReplicaContext& ctx, const Args&) -> Result {
        const int r = ctx.replica_id_in_sync_group();
        Structure value =
            Structure::dict({{"f64", Tensor::from_vector<double>({r * 1.0, 2.0}, {1, 2})},
                             {"i32", Tensor::scalar<int32_t>(r)},
                             {"i64", Tensor::from_vector<int64_t>({r, -r})},
                             {"py", Structure::tuple({r, 0.5})}});
        absl::StatusOr<Structure> sum = ctx.all_reduce(ReduceOp::kSum, value);
        if (!sum.ok()) return sum.status();
        absl::StatusOr<Structure> mean = ctx.all_reduce("MeAn", value);
        if (!mean.ok()) return mean.status();
        return Structure::tuple({*sum, *mean});
      });
  ASSERT_TRUE(result.ok()) << result.status();
  const int64_t ids = n * (n - 1) / 2;
  Structure want_sum = Structure::dict(
      {{"f64", Tensor::from_vector<double>({static_cast<double>(ids), 2.0 * n}, {1, 2})},
       {"i32", Tensor::scalar<int32_t>(static_cast<int32_t>(ids))},
       {"i64", Tensor::from_vector<int64_t>({ids, -ids})},
       {"py", Structure::tuple({Tensor::scalar<int64_t>(ids), Tensor::scalar(0.5 * n)})}});
  const double mean_id = static_cast<double>(ids) / n;
  // MEAN of integers is float64 (true division).
  Structure want_mean =
      Structure::dict({{"f64", Tensor::from_vector<double>({mean_id, 2.0}, {1, 2})},
                       {"i32", Tensor::scalar(mean_id)},
                       {"i64", Tensor::from_vector<double>({mean_id, -mean_id})},
                       {"py", Structure::tuple({Tensor::scalar(mean_id), Tensor::scalar(0.5)})}});
  for (int r = 0; r < n; ++r) {
    EXPECT_TRUE(all_close((*result)[r], Structure::tuple({want_sum, want_mean})).ok())
        << (*result)[r];
  }
}

TEST_P(ReplicaGroupRunTest, AllGatherConcatenatesInReplicaOrder) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  absl::StatusOr<PerReplica> result =
      group.run([&](const ReplicaContext& ctx, const Args&) -> Result {
        const int32_t r = ctx.replica_id_in_sync_group();
        return ctx.all_gather(Tensor::from_vector<int32_t>({r, r}, {1, 2}), 0);
      });
  ASSERT_TRUE(result.ok()) << result.status();
  std::vector<int32_t> want;
  for (int32_t r = 0; r < n; ++r) want.insert(want.end(), {r, r});
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ((*result)[r], Structure(Tensor::from_vector<int32_t>(want, {n, 2})));
  }
}

// Mismatched shapes: every replica gets INVALID_ARGUMENT, nobody hangs.
TEST_P(ReplicaGroupRunTest, AllReduceShapeMismatchFailsOnEveryReplica) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  std::vector<absl::Status> statuses(n);
  absl::StatusOr<PerReplica> result =
      group.run([&](const ReplicaContext& ctx, const Args&) -> Result {
        const int r = ctx.replica_id_in_sync_group();
        Tensor mine(DType::kFloat32, r == 1 ? Shape{3} : Shape{2});
        absl::StatusOr<Structure> got = ctx.all_reduce(ReduceOp::kSum, mine);
        statuses[r] = got.status();
        return got;
      });
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(result.status().message()), StartsWith("replica "));
  EXPECT_THAT(result.status().message(),
              HasSubstr("all_reduce(SUM) #0: replica 1 has float32 [3] but replica 0 has "
                        "float32 [2]"));
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(statuses[r].code(), absl::StatusCode::kInvalidArgument) << r;
  }
}

TEST_P(ReplicaGroupRunTest, AllReduceDtypeMismatchFailsOnEveryReplica) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  std::vector<absl::Status> statuses(n);
  absl::StatusOr<PerReplica> result =
      group.run([&](const ReplicaContext& ctx, const Args&) -> Result {
        const int r = ctx.replica_id_in_sync_group();
        Tensor mine = r == n - 1 ? Tensor::scalar<int32_t>(1) : Tensor::scalar(1.0f);
        absl::StatusOr<Structure> got = ctx.all_reduce(ReduceOp::kMean, mine);
        statuses[r] = got.status();
        return got;
      });
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("int32 [] but replica 0 has float32 []"));
  for (int r = 0; r < n; ++r) EXPECT_EQ(statuses[r].code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(ReplicaGroupRunTest, DifferentCollectivesInOneRoundFail) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  std::vector<absl::Status> statuses(n);
  absl::StatusOr<PerReplica> result =
      group.run([&](const ReplicaContext& ctx, const Args&) -> Result {
        const int r = ctx.replica_id_in_sync_group();
        Tensor mine = Tensor::from_vector<float>({1});
        absl::StatusOr<Structure> got =
            r == 1 ? ctx.all_gather(mine, 0) : ctx.all_reduce(ReduceOp::kSum, mine);
        statuses[r] = got.status();
        return got;
      });
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      result.status().message(),
      HasSubstr("replica 0 called all_reduce(SUM) but replica 1 called all_gather(axis=0)"));
  for (int r = 0; r < n; ++r) EXPECT_EQ(statuses[r].code(), absl::StatusCode::kInvalidArgument);
}

// One replica fails before its collective: the others, waiting in (or
// arriving at) all_reduce, are woken with ABORTED; run returns the
// original error. Repeated so that both orders (waiting first, failing
// first) occur.
TEST_P(ReplicaGroupRunTest, EarlyErrorInOneReplicaDoesNotDeadlockTheOthers) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  for (int attempt = 0; attempt < 50; ++attempt) {
    std::vector<absl::Status> statuses(n);
    absl::StatusOr<PerReplica> result =
        group.run([&](const ReplicaContext& ctx, const Args&) -> Result {
          const int r = ctx.replica_id_in_sync_group();
          if (r == 1) return absl::InternalError("boom");
          absl::StatusOr<Structure> got = ctx.all_reduce(ReduceOp::kSum, Tensor::scalar(1.0f));
          if (got.ok()) got = ctx.all_reduce(ReduceOp::kSum, *got);
          statuses[r] = got.status();
          return got;
        });
    ASSERT_EQ(result.status().code(), absl::StatusCode::kInternal) << result.status();
    EXPECT_EQ(result.status().message(), "replica 1: boom");
    for (int r = 0; r < n; ++r) {
      if (r == 1) continue;
      ASSERT_EQ(statuses[r].code(), absl::StatusCode::kAborted) << statuses[r];
      EXPECT_THAT(statuses[r].message(),
                  HasSubstr("all_reduce(SUM) #0: cannot complete: replica 1 failed: boom"));
    }
  }
}

// A replica that fails after a few rounds: the rounds before it complete.
TEST_P(ReplicaGroupRunTest, ErrorAfterSomeRoundsAbortsOnlyTheRest) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  std::vector<int> completed(n, 0);
  absl::StatusOr<PerReplica> result =
      group.run([&](const ReplicaContext& ctx, const Args&) -> Result {
        const int r = ctx.replica_id_in_sync_group();
        for (int round = 0; round < 10; ++round) {
          if (r == n - 1 && round == 3) return absl::UnavailableError("lost device");
          absl::StatusOr<Structure> got = ctx.all_reduce(ReduceOp::kSum, Tensor::scalar(1.0f));
          if (!got.ok()) return got.status();
          ++completed[r];
        }
        return 0;
      });
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(result.status().message(), "replica " + std::to_string(n - 1) + ": lost device");
  for (int r = 0; r < n; ++r) EXPECT_EQ(completed[r], 3) << r;
}

// A replica that returns successfully without joining a collective that
// the others make: they get FAILED_PRECONDITION instead of hanging.
TEST_P(ReplicaGroupRunTest, ReplicaReturningWithoutTheCollectiveFailsTheOthers) {
  const int n = GetParam();
  ReplicaGroup group = test_group(n);
  std::vector<absl::Status> statuses(n);
  absl::StatusOr<PerReplica> result =
      group.run([&](const ReplicaContext& ctx, const Args&) -> Result {
        const int r = ctx.replica_id_in_sync_group();
        if (r == 0) return 0;
        absl::StatusOr<Structure> got = ctx.all_reduce(ReduceOp::kSum, Tensor::scalar(1.0f));
        statuses[r] = got.status();
        return got;
      });
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(result.status().message(),
              HasSubstr("replica 0 returned from its function without making this call"));
  for (int r = 1; r < n; ++r) {
    EXPECT_EQ(statuses[r].code(), absl::StatusCode::kFailedPrecondition);
  }
}

// A replica that is stuck: the others give up after collective_timeout
// with DEADLINE_EXCEEDED naming it. The stuck replica is released by
// replica 0 once that has failed (bounded by the test's own timeout).
TEST(ReplicaRunTest, CollectiveTimesOutNamingTheMissingReplica) {
  ReplicaGroup group = test_group(3, absl::Milliseconds(50));
  absl::Notification released;
  std::vector<absl::Status> statuses(3);
  absl::StatusOr<PerReplica> result =
      group.run([&](const ReplicaContext& ctx, const Args&) -> Result {
        const int r = ctx.replica_id_in_sync_group();
        if (r == 2) {
          if (!released.WaitForNotificationWithTimeout(absl::Seconds(30))) {
            return absl::InternalError("never released");
          }
        }
        absl::StatusOr<Structure> got = ctx.all_reduce(ReduceOp::kSum, Tensor::scalar(1.0f));
        statuses[r] = got.status();
        if (r == 0) released.Notify();
        return got;
      });
  EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(result.status().message(), HasSubstr("2 to join"));
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(statuses[r].code(), absl::StatusCode::kDeadlineExceeded) << statuses[r];
  }
}

TEST(ReplicaRunTest, BadReduceOpStringIsInvalidArgument) {
  ReplicaGroup group = test_group(2);
  absl::StatusOr<PerReplica> result =
      group.run([&](const ReplicaContext& ctx, const Args&) -> Result {
        return ctx.all_reduce("max", Tensor::scalar(1.0f));
      });
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("'max' is not a valid ReduceOp"));
}

TEST(ReplicaRunTest, CrossReplicaCallsAreRejectedInsideReplicaFunctions) {
  ReplicaGroup group = test_group(2);
  std::vector<absl::Status> nested(2), reduced(2), gathered(2);
  absl::StatusOr<PerReplica> result =
      group.run([&](const ReplicaContext& ctx, const Args&) -> Result {
        const int r = ctx.replica_id_in_sync_group();
        nested[r] =
            group.run([](const ReplicaContext&, const Args&) -> Result { return 0; }).status();
        reduced[r] = group.reduce(ReduceOp::kSum, PerReplica({1, 2}), std::nullopt).status();
        gathered[r] = group.gather(PerReplica({1, 2}), 0).status();
        return 0;
      });
  ASSERT_TRUE(result.ok()) << result.status();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(nested[r].code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(reduced[r].code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(reduced[r].message(), HasSubstr("all_reduce"));
    EXPECT_EQ(gathered[r].code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(gathered[r].message(), HasSubstr("all_gather"));
  }
}

TEST(ReplicaRunTest, OneReplicaRunsOnTheCallingThread) {
  ReplicaGroup group = test_group(1);
  std::thread::id id;
  absl::StatusOr<PerReplica> result =
      group.run([&](const ReplicaContext& ctx, const Args&) -> Result {
        id = std::this_thread::get_id();
        return ctx.all_reduce(ReduceOp::kMean, Tensor::scalar(4.0f));
      });
  EXPECT_EQ(printed(result), "PerReplica:{\n  0: Tensor<float32, []> 4\n}");
  EXPECT_EQ(id, std::this_thread::get_id());
}

TEST(ReplicaRunTest, StrategyScopeIsInEffectOnEveryReplicaThread) {
  testing::LocalPsCluster cluster(1);
  ASSERT_NE(cluster.strategy, nullptr);
  ReplicaGroup group = test_group(4);
  std::vector<ParameterServerStrategy*> seen(4, nullptr);
  {
    StrategyScope scope = cluster.strategy->scope();
    ASSERT_TRUE(group
                    .run([&](const ReplicaContext& ctx, const Args&) -> Result {
                      seen[ctx.replica_id_in_sync_group()] = get_strategy();
                      return 0;
                    })
                    .ok());
  }
  for (ParameterServerStrategy* s : seen) EXPECT_EQ(s, cluster.strategy.get());
}

TEST(ReplicaRunTest, EmptyFunctionIsInvalidArgument) {
  ReplicaGroup group = test_group(2);
  EXPECT_EQ(group.run(nullptr).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ReplicaRunTest, CreateValidatesOptions) {
  EXPECT_EQ(ReplicaGroup::create(0).status().code(), absl::StatusCode::kInvalidArgument);
  ReplicaGroupOptions bad_pipeline;
  bad_pipeline.num_input_pipelines = 2;
  bad_pipeline.input_pipeline_id = 2;
  EXPECT_EQ(ReplicaGroup::create(2, bad_pipeline).status().code(),
            absl::StatusCode::kInvalidArgument);
  ReplicaGroupOptions bad_timeout;
  bad_timeout.collective_timeout = absl::ZeroDuration();
  EXPECT_EQ(ReplicaGroup::create(2, bad_timeout).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<ReplicaGroup> ok = ReplicaGroup::create(3);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->num_replicas_in_sync(), 3);
}

INSTANTIATE_TEST_SUITE_P(Replicas, ReplicaGroupRunTest, ::testing::Values(2, 4));

}  // namespace
}  // namespace psflow::internal

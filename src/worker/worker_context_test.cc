#include "psflow/worker_context.h"

#include <atomic>
#include <optional>
#include <vector>

#include "gtest/gtest.h"
#include "psflow/partitioners.h"
#include "psflow/strategy.h"
#include "strategy/strategy_test_util.h"

namespace psflow::internal {
namespace {

using testing::LocalPsCluster;
using testing::value_or_fail;

// A retry of a closure reaches the ps with the keys of the first run: the
// variables and optimizers that a WorkerContext hands out (variable(),
// bind()) carry its call's update keys, and the ps applies each key once.
class WorkerContextUpdateKeysTest : public ::testing::Test {
 protected:
  static constexpr uint64_t kSession = 77;

  WorkerContextUpdateKeysTest() : cluster_(2, value_or_fail(fixed_shards_partitioner(2))) {
    StrategyScope scope = cluster_.strategy->scope();
    counter_ = value_or_fail(create_variable(Tensor::from_vector(std::vector<float>{0, 0})));
    sgd_ =
        value_or_fail(Optimizer::create(OptimizerConfig{.kind = OptimizerConfig::Kind::kSgd}, 0.5));
    lookup_ = cluster_.strategy->client_lookup();
  }

  // The context a worker builds for one run of closure `closure_id`.
  WorkerContext context(uint64_t closure_id, uint64_t session = kSession) {
    WorkerContext ctx(0, closure_id, resources_, cancelled_, 1, &lookup_);
    ctx.set_update_session(session);
    return ctx;
  }

  std::vector<float> counter() {
    const Tensor t = value_or_fail(counter_.read_value());
    return std::vector<float>(t.flat<float>().begin(), t.flat<float>().end());
  }

  LocalPsCluster cluster_;
  ShardedVariable counter_;
  std::optional<Optimizer> sgd_;
  VariableClientLookup lookup_;
  WorkerResources resources_;
  std::atomic<bool> cancelled_{false};
};

TEST_F(WorkerContextUpdateKeysTest, ARetriedRunOfAClosureAppliesItsUpdatesOnce) {
  const Tensor one = Tensor::from_vector(std::vector<float>{1, 1});
  {
    WorkerContext first = context(5);
    ShardedVariable v = value_or_fail(first.variable(counter_.handle().to_structure()));
    ASSERT_TRUE(v.assign_add(one).ok());
    ASSERT_TRUE(v.assign_add(one).ok());
  }
  EXPECT_EQ(counter(), (std::vector<float>{2, 2}));
  {
    // The retry: the same closure makes the same updates in the same order.
    WorkerContext retry = context(5);
    ShardedVariable v = retry.bind(counter_);
    ASSERT_TRUE(v.assign_add(one).ok());
    ASSERT_TRUE(v.assign_add(one).ok());
  }
  EXPECT_EQ(counter(), (std::vector<float>{2, 2}));
  {
    // Another closure's updates are new.
    WorkerContext next = context(6);
    ASSERT_TRUE(next.bind(counter_).assign_add(one).ok());
  }
  EXPECT_EQ(counter(), (std::vector<float>{3, 3}));
}

TEST_F(WorkerContextUpdateKeysTest, UnboundHandlesAndRunsWithoutASessionCarryNoKeys) {
  const Tensor one = Tensor::from_vector(std::vector<float>{1, 1});
  WorkerContext ctx = context(5);
  ShardedVariable bound = ctx.bind(counter_);
  ASSERT_TRUE(bound.assign_add(one).ok());
  // The handle kept outside the call stays unbound: sent twice, applied twice.
  ASSERT_TRUE(counter_.assign_add(one).ok());
  ASSERT_TRUE(counter_.assign_add(one).ok());
  EXPECT_EQ(counter(), (std::vector<float>{3, 3}));
  // Without a coordinator session (session 0) nothing is keyed either.
  for (int run = 0; run < 2; ++run) {
    WorkerContext unkeyed = context(5, /*session=*/0);
    ASSERT_TRUE(unkeyed.bind(counter_).assign_add(one).ok());
  }
  EXPECT_EQ(counter(), (std::vector<float>{5, 5}));
}

TEST_F(WorkerContextUpdateKeysTest, ABoundOptimizerKeysTheWholeStep) {
  const Optimizer& sgd = *sgd_;
  const Tensor grad = Tensor::from_vector(std::vector<float>{2, 4});
  for (int run = 0; run < 3; ++run) {
    // Three runs of one closure: the step applies once, iterations counts 1.
    WorkerContext ctx = context(9);
    ASSERT_TRUE(ctx.bind(sgd).apply_gradients({{grad, counter_}}).ok());
  }
  EXPECT_EQ(counter(), (std::vector<float>{-1, -2}));
  EXPECT_EQ(value_or_fail(sgd.iterations().read_value()).scalar_value<int64_t>(), 1);
  // The unbound optimizer is TF's: every call applies.
  ASSERT_TRUE(sgd.apply_gradients({{grad, counter_}}).ok());
  EXPECT_EQ(counter(), (std::vector<float>{-2, -4}));
  EXPECT_EQ(value_or_fail(sgd.iterations().read_value()).scalar_value<int64_t>(), 2);
}

}  // namespace
}  // namespace psflow::internal

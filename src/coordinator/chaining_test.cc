// RemoteValues as arguments of later closures (beyond TF, which rejects
// them): ordering, no worker held while waiting, and input errors.
#include <atomic>
#include <vector>

#include "absl/strings/str_cat.h"
#include "coordinator/coordinator_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/cluster_coordinator.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::Gate;
using ::psflow::internal::testing::kTestTimeout;
using ::psflow::internal::testing::make_coordinator;
using ::testing::HasSubstr;
using ::testing::Not;

Gate g_gate;
Gate g_fail_gate;

PSFLOW_FUNCTION(ch_test_double, ctx, args) { return Structure(args.int_value() * 2); }

PSFLOW_FUNCTION(ch_test_add_one, ctx, args) { return Structure(args.int_value() + 1); }

PSFLOW_FUNCTION(ch_test_sum, ctx, args) {
  int64_t sum = 0;
  for (const Structure& item : args.flatten()) sum += item.int_value();
  return Structure(sum);
}

PSFLOW_FUNCTION(ch_test_gated, ctx, args) {
  g_gate.pass();
  return Structure(5);
}

PSFLOW_FUNCTION(ch_test_gated_fail, ctx, args) {
  g_fail_gate.pass();
  return absl::InvalidArgumentError("boom");
}

PSFLOW_FUNCTION(ch_test_fail, ctx, args) { return absl::InvalidArgumentError("boom"); }

PSFLOW_FUNCTION(ch_test_seven, ctx, args) { return Structure(7); }

class ChainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_gate.reset();
    g_fail_gate.reset();
  }
};

TEST_F(ChainingTest, LaterClosureReceivesTheValue) {
  auto c = make_coordinator(2);
  ASSERT_NE(c, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue doubled, c->schedule("ch_test_double", 3));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue sum,
                              c->schedule("ch_test_sum", RemoteStructure::tuple({doubled, 10})));
  PSFLOW_ASSERT_OK_AND_ASSIGN(
      RemoteValue sum2,
      c->schedule(
          "ch_test_sum",
          RemoteStructure::dict({{"a", sum}, {"b", RemoteStructure::list({doubled, doubled})}})));
  EXPECT_EQ(*sum.fetch(), Structure(int64_t{16}));
  EXPECT_EQ(*sum2.fetch(), Structure(int64_t{28}));
  EXPECT_TRUE(c->join().ok());
}

TEST_F(ChainingTest, WaitingClosureHoldsNoWorker) {
  auto c = make_coordinator(2);
  ASSERT_NE(c, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue slow, c->schedule("ch_test_gated"));
  ASSERT_TRUE(g_gate.await_arrivals(1));  // Worker A is busy.
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue dependent,
                              c->schedule("ch_test_sum", RemoteStructure::tuple({slow, 1})));
  // Worker B stays free for independent work meanwhile; were the dependent
  // closure holding it, this would never run.
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue independent, c->schedule("ch_test_seven"));
  ASSERT_TRUE(independent.wait(kTestTimeout));
  EXPECT_EQ(*independent.fetch(), Structure(7));
  EXPECT_FALSE(dependent.is_ready());
  EXPECT_FALSE(*c->done());  // A waiting closure counts for done() and join().
  g_gate.open();
  ASSERT_TRUE(c->join().ok());
  EXPECT_EQ(*dependent.fetch(), Structure(int64_t{6}));
}

TEST_F(ChainingTest, FailedInputFailsTheDependentWithAnInputError) {
  auto c = make_coordinator(2);
  ASSERT_NE(c, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue failing, c->schedule("ch_test_gated_fail"));
  ASSERT_TRUE(g_fail_gate.await_arrivals(1));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue dependent,
                              c->schedule("ch_test_sum", RemoteStructure::tuple({1, failing})));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue second,
                              c->schedule("ch_test_add_one", RemoteStructure(dependent)));
  g_fail_gate.open();

  const absl::Status input_error = dependent.fetch().status();
  EXPECT_EQ(input_error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(is_closure_input_error(input_error));
  EXPECT_THAT(input_error.message(), HasSubstr("Input args[1] of function 'ch_test_sum'"));
  EXPECT_THAT(input_error.message(),
              HasSubstr(absl::StrCat("closure ", failing.closure_id(),
                                     " (function 'ch_test_gated_fail') ended with "
                                     "INVALID_ARGUMENT: boom")));
  // A chain names the direct input and the original error, not every link.
  const absl::Status chained = second.fetch().status();
  EXPECT_TRUE(is_closure_input_error(chained));
  EXPECT_THAT(chained.message(), HasSubstr("Input args of function 'ch_test_add_one'"));
  EXPECT_THAT(chained.message(), HasSubstr("(function 'ch_test_sum') did not run"));
  EXPECT_THAT(chained.message(), HasSubstr("the original error: INVALID_ARGUMENT: boom"));
  EXPECT_THAT(chained.message(), Not(HasSubstr("ch_test_gated_fail")));

  // The first error is the input's own; it is reported once.
  const absl::Status joined = c->join();
  EXPECT_EQ(joined.message(), "boom");
  EXPECT_FALSE(is_closure_input_error(joined));
  EXPECT_TRUE(c->join().ok());
}

TEST_F(ChainingTest, InputThatFailedEarlierIsReportedAsAnInputError) {
  auto c = make_coordinator(1);
  ASSERT_NE(c, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue failing, c->schedule("ch_test_fail"));
  EXPECT_EQ(c->join().message(), "boom");
  // As TF's testInputError: the dependent fails, and join reports that.
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue dependent,
                              c->schedule("ch_test_sum", RemoteStructure::dict({{"x", failing}})));
  const absl::Status joined = c->join();
  EXPECT_TRUE(is_closure_input_error(joined));
  EXPECT_THAT(joined.message(), HasSubstr("Input args['x'] of function 'ch_test_sum'"));
  EXPECT_EQ(dependent.fetch().status(), joined);
  EXPECT_TRUE(c->join().ok());
}

TEST_F(ChainingTest, WaitingClosuresAreCancelledLikeQueuedOnes) {
  auto c = make_coordinator(2);
  ASSERT_NE(c, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue slow, c->schedule("ch_test_gated"));
  ASSERT_TRUE(g_gate.await_arrivals(1));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue failing, c->schedule("ch_test_gated_fail"));
  ASSERT_TRUE(g_fail_gate.await_arrivals(1));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue queued, c->schedule("ch_test_seven"));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue waiting,
                              c->schedule("ch_test_add_one", RemoteStructure(slow)));
  g_fail_gate.open();
  ASSERT_TRUE(waiting.wait(kTestTimeout));
  EXPECT_EQ(queued.fetch().status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(waiting.fetch().status().code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE(is_closure_input_error(waiting.fetch().status()));
  g_gate.open();
  EXPECT_EQ(c->join().message(), "boom");

  // A cancelled input is an input error for a closure scheduled later.
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue late,
                              c->schedule("ch_test_add_one", RemoteStructure(queued)));
  const absl::Status joined = c->join();
  EXPECT_EQ(joined.code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(is_closure_input_error(joined));
  EXPECT_THAT(joined.message(), HasSubstr("The corresponding function is cancelled"));
  EXPECT_EQ(*slow.fetch(), Structure(5));
}

TEST_F(ChainingTest, LongChainWithQueueBoundTwo) {
  auto c = make_coordinator(2, /*max_queued=*/2);
  ASSERT_NE(c, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue value, c->schedule("ch_test_add_one", 0));
  std::vector<RemoteValue> all{value};
  for (int i = 1; i < 200; ++i) {
    PSFLOW_ASSERT_OK_AND_ASSIGN(value, c->schedule("ch_test_add_one", RemoteStructure(value)));
    all.push_back(value);
  }
  ASSERT_TRUE(c->join().ok());
  EXPECT_EQ(*value.fetch(), Structure(int64_t{200}));
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(*all[i].fetch(), Structure(static_cast<int64_t>(i + 1)));
  }
}

}  // namespace
}  // namespace psflow::internal

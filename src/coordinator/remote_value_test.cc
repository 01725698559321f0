#include "psflow/remote_value.h"

#include <memory>
#include <thread>
#include <vector>

#include "coordinator/closure_errors.h"
#include "coordinator/remote_structure_walk.h"
#include "coordinator/remote_value_state.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::shared_ptr<internal::RemoteValueState> new_state(uint64_t id = 7) {
  return std::make_shared<internal::RemoteValueState>(id, "f");
}

TEST(RemoteValueTest, ReadyWithValueOrError) {
  auto state = new_state();
  RemoteValue value(state);
  EXPECT_EQ(value.status(), RemoteValueStatus::kNotReady);
  EXPECT_FALSE(value.is_ready());
  EXPECT_FALSE(value.wait(absl::ZeroDuration()));
  state->set_result(Structure::tuple({1, 2.5}));
  EXPECT_EQ(value.status(), RemoteValueStatus::kReady);
  EXPECT_TRUE(value.is_ready());
  EXPECT_TRUE(value.wait(absl::ZeroDuration()));
  EXPECT_EQ(*value.fetch(), Structure::tuple({1, 2.5}));
  EXPECT_EQ(*RemoteValue(value).get(), Structure::tuple({1, 2.5}));  // Copies share.

  auto failed = new_state();
  failed->set_result(absl::InvalidArgumentError("bad"));
  EXPECT_EQ(RemoteValue(failed).fetch().status(), absl::InvalidArgumentError("bad"));
  EXPECT_EQ(RemoteValue(failed).status(), RemoteValueStatus::kReady);
}

TEST(RemoteValueTest, FetchWaitsForAnotherThread) {
  auto state = new_state();
  RemoteValue value(state);
  std::thread setter([state] { state->set_result(Structure(3)); });
  EXPECT_EQ(*value.fetch(), Structure(3));
  setter.join();
}

TEST(RemoteValueTest, AbortedFetchesAsCancelledAndCanBeRebuilt) {
  auto state = new_state();
  state->set_aborted();
  RemoteValue value(state);
  EXPECT_EQ(value.status(), RemoteValueStatus::kAborted);
  EXPECT_TRUE(value.is_ready());
  EXPECT_EQ(value.fetch().status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(value.fetch().status().message(),
            "The corresponding function is aborted. Please reschedule the function.");
  state->set_result(Structure(1));  // ABORTED -> READY (rebuilt).
  EXPECT_EQ(*value.fetch(), Structure(1));
  state->set_aborted();  // READY -> ABORTED (its worker was lost).
  EXPECT_EQ(value.status(), RemoteValueStatus::kAborted);
}

TEST(RemoteValueTest, OnReadyRunsOnceReadyOrAtOnce) {
  auto state = new_state();
  std::vector<int> order;
  state->on_ready([&] { order.push_back(1); });
  state->on_ready([&] { order.push_back(2); });
  EXPECT_TRUE(order.empty());
  state->set_aborted();  // Not READY: dependents keep waiting.
  EXPECT_TRUE(order.empty());
  state->set_result(Structure(0));
  EXPECT_THAT(order, ElementsAre(1, 2));
  state->on_ready([&] { order.push_back(3); });
  EXPECT_THAT(order, ElementsAre(1, 2, 3));
}

TEST(RemoteValueDeathTest, FinishingTwiceIsABug) {
  auto state = new_state();
  state->set_result(Structure(0));
  EXPECT_DEATH(state->set_result(Structure(1)), "finished twice");
}

TEST(RemoteValueTest, DebugString) {
  auto state = new_state(12);
  EXPECT_EQ(RemoteValue(state).debug_string(), "<RemoteValue of closure 12 'f': NOT_READY>");
  EXPECT_EQ(RemoteValue().debug_string(), "<empty RemoteValue>");
}

TEST(RemoteStructureTest, KindsLeavesAndPaths) {
  RemoteValue a(new_state(1));
  RemoteValue b(new_state(2));
  const RemoteStructure s = RemoteStructure::tuple(
      {a, 3, "s", RemoteStructure::dict({{"y", b}, {"x", Structure::list({1})}}),
       RemoteStructure::list({})});
  EXPECT_EQ(s.kind(), RemoteStructure::Kind::kTuple);
  EXPECT_EQ(s.items()[1].kind(), RemoteStructure::Kind::kValue);
  EXPECT_EQ(s.items()[0].kind(), RemoteStructure::Kind::kRemoteValue);
  const std::vector<RemoteValue> leaves = s.remote_values();
  ASSERT_EQ(leaves.size(), 2u);
  EXPECT_EQ(leaves[0].closure_id(), 1u);
  EXPECT_EQ(leaves[1].closure_id(), 2u);

  std::vector<std::string> paths;
  for_each_remote_value(s, "args", [&](const std::string& path, const RemoteValue&) {
    paths.push_back(path);
    return true;
  });
  EXPECT_THAT(paths, ElementsAre("args[0]", "args[3]['y']"));

  EXPECT_EQ(s.debug_string(),
            "(<RemoteValue of closure 1 'f': NOT_READY>, 3, 's', {'x': [1], "
            "'y': <RemoteValue of closure 2 'f': NOT_READY>}, [])");
  EXPECT_EQ(RemoteStructure().value(), Structure::none());
  EXPECT_EQ(RemoteStructure::tuple({1}).debug_string(), "(1,)");
}

TEST(RemoteStructureTest, ResolveReplacesRemoteValues) {
  auto state = new_state(1);
  state->set_result(Structure(int64_t{10}));
  const RemoteStructure s =
      RemoteStructure::dict({{"a", RemoteValue(state)}, {"b", RemoteStructure::list({2})}});
  const absl::StatusOr<Structure> resolved =
      resolve_remote_values(s, [](const RemoteValue& v) { return v.fetch(); });
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(*resolved, Structure::dict({{"a", int64_t{10}}, {"b", Structure::list({2})}}));

  const absl::StatusOr<Structure> failed = resolve_remote_values(
      s, [](const RemoteValue&) -> absl::StatusOr<Structure> { return absl::AbortedError("x"); });
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kAborted);
}

TEST(ClosureErrorsTest, InputErrorsKeepTheCodeAndFlattenChains) {
  const absl::Status direct =
      closure_input_error("consume", "args[0]", 3, "produce", absl::NotFoundError("no file"));
  EXPECT_EQ(direct.code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(is_closure_input_error(direct));
  EXPECT_EQ(direct.message(),
            "Input args[0] of function 'consume' failed: closure 3 (function 'produce') ended "
            "with NOT_FOUND: no file");
  const absl::Status chained = closure_input_error("last", "args", 4, "consume", direct);
  EXPECT_EQ(chained.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(chained.message(),
            "Input args of function 'last' failed: closure 4 (function 'consume') did not run "
            "because one of its own inputs failed; the original error: NOT_FOUND: no file");
  EXPECT_FALSE(is_closure_input_error(absl::NotFoundError("no file")));
  EXPECT_THAT(std::string(closure_cancelled_error().message()), HasSubstr("reschedule"));
}

}  // namespace
}  // namespace psflow::internal

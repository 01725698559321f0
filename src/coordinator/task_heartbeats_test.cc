#include "coordinator/task_heartbeats.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

const absl::Time kStart = absl::FromUnixSeconds(1000);

TaskHeartbeats manual(int n) {
  std::vector<TaskHeartbeats::Task> tasks;
  for (int i = 0; i < n; ++i) {
    tasks.push_back({absl::StrCat("/job:ps/replica:0/task:", i),
                     [](absl::Time) -> absl::StatusOr<uint64_t> { return 1; }});
  }
  TaskHeartbeats::Options options;
  options.interval = absl::Seconds(1);
  options.timeout = absl::Seconds(10);
  options.start_threads = false;
  return TaskHeartbeats(std::move(tasks), options, kStart);
}

TEST(TaskHeartbeatsTest, HealthyUntilTheTimeoutPassesWithoutAnAnswer) {
  TaskHeartbeats beats = manual(2);
  for (const TaskState& s : beats.states(kStart + absl::Seconds(9))) EXPECT_TRUE(s.healthy());
  beats.record(0, 7, kStart + absl::Seconds(5));
  beats.record(1, absl::UnavailableError("connection refused"), kStart + absl::Seconds(5));
  const std::vector<TaskState> states = beats.states(kStart + absl::Seconds(12));
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states[0].task, "/job:ps/replica:0/task:0");
  EXPECT_TRUE(states[0].healthy());
  EXPECT_EQ(states[1].error.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(states[1].error.message(),
              HasSubstr("Task /job:ps/replica:0/task:1 heartbeat timeout: no answer for 12.0 s"));
  EXPECT_THAT(states[1].error.message(), HasSubstr("connection refused"));
  // The next answer makes it healthy again.
  beats.record(1, 9, kStart + absl::Seconds(13));
  EXPECT_TRUE(beats.states(kStart + absl::Seconds(13))[1].healthy());
}

TEST(TaskHeartbeatsTest, CountsRestartsByIncarnation) {
  TaskHeartbeats beats = manual(1);
  beats.record(0, 7, kStart + absl::Seconds(1));
  beats.record(0, 7, kStart + absl::Seconds(2));
  EXPECT_EQ(beats.states(kStart + absl::Seconds(2))[0].restarts, 0);
  beats.record(0, 8, kStart + absl::Seconds(3));
  beats.record(0, 8, kStart + absl::Seconds(4));
  beats.record(0, 9, kStart + absl::Seconds(5));
  const TaskState state = beats.states(kStart + absl::Seconds(5))[0];
  EXPECT_TRUE(state.healthy());
  EXPECT_EQ(state.restarts, 2);
  EXPECT_EQ(state.incarnation, 9u);
}

}  // namespace
}  // namespace psflow::internal

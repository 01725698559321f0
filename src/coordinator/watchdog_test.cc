// The watchdog with a hand-made snapshot and clock, and the queue's abort.
#include "coordinator/watchdog.h"

#include <memory>

#include "coordinator/closure_queue.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

const absl::Time kT0 = absl::FromUnixSeconds(1'000'000);

struct Fixture {
  WatchdogSnapshot snapshot;
  int aborts = 0;
  absl::Status abort_error;
  std::function<absl::StatusOr<std::string>()> dump_stacks;
  std::unique_ptr<CoordinatorWatchdog> make(absl::Duration stall, absl::Duration lost) {
    CoordinatorWatchdog::Options options;
    options.stall_timeout = stall;
    options.all_workers_lost_timeout = lost;
    options.start_thread = false;
    options.dump_stacks = dump_stacks;
    return std::make_unique<CoordinatorWatchdog>(
        options, [this] { return snapshot; },
        [this](const absl::Status& e) {
          ++aborts;
          abort_error = e;
        });
  }
};

WatchdogSnapshot::Worker answering(const char* name) { return {name, std::nullopt, {}}; }
WatchdogSnapshot::Worker lost(const char* name, absl::Time since) {
  return {name, since, absl::UnavailableError("connection refused")};
}

TEST(WatchdogTest, IdleCoordinatorIsNeverReported) {
  Fixture f;
  f.snapshot.workers = {lost("/job:worker/replica:0/task:0", kT0)};
  auto dog = f.make(absl::Seconds(10), absl::Seconds(60));
  EXPECT_EQ(dog->check(kT0 + absl::Hours(5)), std::nullopt);
  EXPECT_EQ(f.aborts, 0);
}

TEST(WatchdogTest, StallIsReportedOncePerPeriodNamingLostWorkers) {
  Fixture f;
  f.snapshot.queued = 4;
  f.snapshot.in_flight = 1;
  f.snapshot.last_finish = kT0;
  f.snapshot.workers = {answering("/job:worker/replica:0/task:0"),
                        lost("/job:worker/replica:0/task:1", kT0 + absl::Seconds(2))};
  auto dog = f.make(absl::Seconds(10), absl::ZeroDuration());
  EXPECT_EQ(dog->check(kT0 + absl::Seconds(1)), std::nullopt);  // busy from here
  EXPECT_EQ(dog->check(kT0 + absl::Seconds(9)), std::nullopt);
  std::optional<std::string> w = dog->check(kT0 + absl::Seconds(11));
  ASSERT_TRUE(w.has_value());
  EXPECT_THAT(*w, HasSubstr("no closure has finished for 10.0 s"));
  EXPECT_THAT(*w, HasSubstr("4 closure(s) queued and 1 running; 1 of 2 worker(s) answering"));
  EXPECT_THAT(*w, HasSubstr("/job:worker/replica:0/task:1 (lost for 9.0 s: UNAVAILABLE"));
  EXPECT_EQ(dog->check(kT0 + absl::Seconds(15)), std::nullopt);  // not again yet
  EXPECT_TRUE(dog->check(kT0 + absl::Seconds(21)).has_value());
  // A finished closure restarts the clock.
  f.snapshot.last_finish = kT0 + absl::Seconds(22);
  EXPECT_EQ(dog->check(kT0 + absl::Seconds(31)), std::nullopt);
  EXPECT_TRUE(dog->check(kT0 + absl::Seconds(32)).has_value());
  EXPECT_EQ(f.aborts, 0);  // a report never fails anything
}

TEST(WatchdogTest, StallReportNamesUnhealthyTasksAndTheStackDump) {
  Fixture f;
  f.snapshot.queued = 1;
  f.snapshot.last_finish = kT0;
  f.snapshot.workers = {answering("/job:worker/replica:0/task:0")};
  f.snapshot.tasks = {
      TaskState{"/job:worker/replica:0/task:0", absl::OkStatus(), 0},
      TaskState{"/job:ps/replica:0/task:0",
                absl::UnavailableError("Task /job:ps/replica:0/task:0 heartbeat timeout"), 0}};
  int dumps = 0;
  f.dump_stacks = [&dumps]() -> absl::StatusOr<std::string> {
    ++dumps;
    return std::string("/runs/a/watchdog-stacks-1.txt");
  };
  auto dog = f.make(absl::Seconds(10), absl::ZeroDuration());
  EXPECT_EQ(dog->check(kT0), std::nullopt);
  EXPECT_EQ(dumps, 0);  // only when the report fires
  std::optional<std::string> w = dog->check(kT0 + absl::Seconds(10));
  ASSERT_TRUE(w.has_value());
  EXPECT_THAT(*w, HasSubstr("task states: 1 of 2 unhealthy: UNAVAILABLE: Task "
                            "/job:ps/replica:0/task:0 heartbeat timeout"));
  EXPECT_THAT(*w, HasSubstr("; thread stacks written to /runs/a/watchdog-stacks-1.txt"));
  EXPECT_EQ(dumps, 1);
  // Every report dumps again; a failed dump is said, not fatal.
  f.snapshot.tasks.pop_back();
  f.dump_stacks = nullptr;
  auto failing = [&]() -> absl::StatusOr<std::string> {
    return absl::NotFoundError("cannot create /gone/watchdog-stacks-2.txt");
  };
  Fixture g = f;
  g.dump_stacks = failing;
  auto dog2 = g.make(absl::Seconds(10), absl::ZeroDuration());
  EXPECT_EQ(dog2->check(kT0), std::nullopt);
  std::optional<std::string> w2 = dog2->check(kT0 + absl::Seconds(10));
  ASSERT_TRUE(w2.has_value());
  EXPECT_THAT(*w2, HasSubstr("task states: all 1 healthy"));
  EXPECT_THAT(*w2, HasSubstr("; thread stacks not written: NOT_FOUND: cannot create /gone/"));
}

TEST(WatchdogTest, QueuedClosuresFailWhenEveryWorkerIsLostLongEnough) {
  Fixture f;
  f.snapshot.queued = 3;
  f.snapshot.last_finish = kT0;
  f.snapshot.workers = {lost("/job:worker/replica:0/task:0", kT0),
                        answering("/job:worker/replica:0/task:1")};
  auto dog = f.make(absl::ZeroDuration(), absl::Seconds(30));
  EXPECT_EQ(dog->check(kT0), std::nullopt);
  EXPECT_EQ(dog->check(kT0 + absl::Seconds(100)), std::nullopt);  // one still answers
  f.snapshot.workers[1] = lost("/job:worker/replica:0/task:1", kT0 + absl::Seconds(100));
  EXPECT_EQ(dog->check(kT0 + absl::Seconds(129)), std::nullopt);  // the last lost 29 s ago
  std::optional<std::string> e = dog->check(kT0 + absl::Seconds(130));
  ASSERT_TRUE(e.has_value());
  ASSERT_EQ(f.aborts, 1);
  EXPECT_TRUE(absl::IsUnavailable(f.abort_error)) << f.abort_error;
  EXPECT_THAT(f.abort_error.message(), HasSubstr("no worker has answered for 30.0 s"));
  EXPECT_THAT(f.abort_error.message(), HasSubstr("/job:worker/replica:0/task:0 (lost for 130.0 s"));
  EXPECT_THAT(f.abort_error.message(), HasSubstr("all_workers_lost_timeout"));
}

TEST(WatchdogTest, NothingQueuedMeansNothingToFail) {
  Fixture f;
  f.snapshot.in_flight = 1;  // e.g. its run has not come back yet
  f.snapshot.workers = {lost("/job:worker/replica:0/task:0", kT0)};
  auto dog = f.make(absl::ZeroDuration(), absl::Seconds(30));
  EXPECT_EQ(dog->check(kT0), std::nullopt);
  EXPECT_EQ(dog->check(kT0 + absl::Hours(1)), std::nullopt);
  EXPECT_EQ(f.aborts, 0);
}

TEST(WatchdogTest, TheThreadFailsTheQueueWithoutAnyCheckCall) {
  absl::Notification aborted;
  WatchdogSnapshot s;
  s.queued = 1;
  s.workers = {lost("/job:worker/replica:0/task:0", absl::Now())};
  CoordinatorWatchdog::Options options;
  options.stall_timeout = absl::ZeroDuration();
  options.all_workers_lost_timeout = absl::Milliseconds(50);
  CoordinatorWatchdog dog(
      options, [&] { return s; },
      [&](const absl::Status&) {
        if (!aborted.HasBeenNotified()) aborted.Notify();
      });
  EXPECT_TRUE(aborted.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

TEST(ClosureQueueAbortTest, QueuedClosuresGetTheErrorAndJoinReportsItOnce) {
  int first_errors = 0;
  auto queue = std::make_shared<ClosureQueue>(0, [&] { ++first_errors; });
  auto a = std::make_shared<Closure>(1, "f", RemoteStructure{});
  auto b = std::make_shared<Closure>(2, "f", RemoteStructure{});
  ASSERT_TRUE(queue->put(a).ok());
  ASSERT_TRUE(queue->put(b).ok());
  const absl::Status error = absl::UnavailableError("no worker has answered");
  EXPECT_EQ(queue->abort_queued(error), 2);
  EXPECT_EQ(first_errors, 1);
  EXPECT_EQ(a->output().fetch().status(), error);
  EXPECT_EQ(b->output().fetch().status(), error);
  EXPECT_EQ(queue->wait(), error);
  EXPECT_TRUE(queue->wait().ok());  // reported once; usable again
  auto c = std::make_shared<Closure>(3, "f", RemoteStructure{});
  EXPECT_TRUE(queue->put(c).ok());
  EXPECT_EQ(queue->num_queued(), 1);
}

}  // namespace
}  // namespace psflow::internal

#include "base/thread_stacks.h"

#include <pthread.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

// Parks its thread where the dump must find it, by name.
[[gnu::noinline]] void ParkedThreadForStackTest(absl::Notification* parked,
                                                absl::Notification* release) {
  parked->Notify();
  release->WaitForNotification();
  asm volatile("" ::: "memory");  // Not a tail call: the frame stays.
}

TEST(ThreadStacksTest, NamesEveryThreadAndWhereItWaits) {
  absl::Notification parked, release;
  std::thread thread([&] {
    pthread_setname_np(pthread_self(), "parked-test");
    ParkedThreadForStackTest(&parked, &release);
  });
  parked.WaitForNotification();
  absl::StatusOr<std::string> stacks = all_thread_stacks();
  release.Notify();
  thread.join();
  ASSERT_TRUE(stacks.ok()) << stacks.status();
  EXPECT_THAT(*stacks, HasSubstr("(this thread):"));
  EXPECT_THAT(*stacks, HasSubstr("\"parked-test\":\n  #0 "));
  EXPECT_THAT(*stacks, HasSubstr("ParkedThreadForStackTest"));
  EXPECT_THAT(*stacks, HasSubstr("==== End of stack traces ====\n"));
}

TEST(ThreadStacksTest, AThreadThatBlocksTheSignalIsListedWithoutStack) {
  absl::Notification parked, release;
  std::thread thread([&] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, stack_dump_signal());
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    pthread_setname_np(pthread_self(), "deaf-test");
    parked.Notify();
    release.WaitForNotification();
  });
  parked.WaitForNotification();
  absl::StatusOr<std::string> stacks = all_thread_stacks(absl::Milliseconds(50));
  release.Notify();
  thread.join();
  ASSERT_TRUE(stacks.ok()) << stacks.status();
  EXPECT_THAT(*stacks, HasSubstr("\"deaf-test\":\n  (no stack: no answer within 50ms"));
  EXPECT_THAT(*stacks, HasSubstr("==== End of stack traces ====\n"));
}

TEST(ThreadStacksTest, WritesANewFileAndNamesIt) {
  const std::string dir = ::testing::TempDir() + "/thread_stacks_test";
  std::filesystem::create_directories(dir);
  absl::StatusOr<std::string> path = write_thread_stacks(dir, "watchdog-stacks");
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_THAT(*path, HasSubstr(dir + "/watchdog-stacks-"));
  std::ifstream in(*path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_THAT(text.str(), HasSubstr("WritesANewFileAndNamesIt"));
  EXPECT_THAT(text.str(), HasSubstr("==== End of stack traces ===="));

  absl::StatusOr<std::string> missing = write_thread_stacks(dir + "/no/such/dir");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(dir + "/no/such/dir/stacks-"));
}

}  // namespace
}  // namespace psflow::internal

#include "security/task_identity_names.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::ElementsAre;

TEST(TaskIdentityNamesTest, CommonNameAndFileStem) {
  EXPECT_EQ(task_common_name("ps", 1), "ps/1");
  EXPECT_EQ(task_file_stem("worker", 12), "worker-12");
}

TEST(TaskIdentityNamesTest, RecognisesLoopback) {
  for (const char* host : {"localhost", "LocalHost", "127.0.0.1", "127.3.2.1", "::1", "[::1]"}) {
    EXPECT_TRUE(is_loopback_name(host)) << host;
  }
  for (const char* host : {"10.0.0.1", "0.0.0.0", "::", "ps-0.svc", "128.0.0.1", "::2", ""}) {
    EXPECT_FALSE(is_loopback_name(host)) << host;
  }
}

TEST(TaskIdentityNamesTest, AltNamesForIpNameAndLoopback) {
  EXPECT_THAT(subject_alt_names("10.1.2.3"), ElementsAre("IP:10.1.2.3"));
  EXPECT_THAT(subject_alt_names("fd00::5"), ElementsAre("IP:fd00::5"));
  EXPECT_THAT(subject_alt_names("job-ps-0.job.default.svc"),
              ElementsAre("DNS:job-ps-0.job.default.svc"));
  EXPECT_THAT(subject_alt_names("127.0.0.2"),
              ElementsAre("IP:127.0.0.2", "DNS:localhost", "IP:127.0.0.1", "IP:::1"));
  EXPECT_THAT(subject_alt_names("10.1.2.3", /*also_loopback=*/true),
              ElementsAre("IP:10.1.2.3", "DNS:localhost", "IP:127.0.0.1", "IP:::1"));
  EXPECT_THAT(subject_alt_names("localhost"),
              ElementsAre("DNS:localhost", "IP:127.0.0.1", "IP:::1"));
}

}  // namespace
}  // namespace psflow::internal

#include "server/task_plan.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

ClusterSpec spec_with_ps(const std::string& ps) {
  return ClusterSpec(std::map<std::string, std::vector<std::string>>{
      {"ps", {ps}}, {"worker", {"127.0.0.1:2223"}}});
}

// A resolver that knows one Kubernetes-style name, at 127.0.0.5, which
// stands for an address of another machine (the only local one is
// 127.0.0.1).
HostLookup another_machine() {
  return HostLookup{
      .resolve = [](const std::string& host) -> absl::StatusOr<std::vector<std::string>> {
        return std::vector<std::string>{"127.0.0.5"};
      },
      .is_local = [](const std::string& ip) { return ip == "127.0.0.1"; },
      .local_addresses = [] { return std::vector<std::string>{"127.0.0.1"}; },
  };
}

TEST(TaskPlanTest, ALoopbackTaskListensOnItsOwnAddress) {
  absl::StatusOr<TaskPlan> plan = plan_task(spec_with_ps("127.0.0.2:2222"), "ps", 0, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->job, "ps");
  EXPECT_EQ(plan->address, (HostPort{"127.0.0.2", 2222}));
  EXPECT_EQ(plan->listen.address, "127.0.0.2:2222");
}

TEST(TaskPlanTest, ANameOfAnotherMachineFailsNamingTheTaskHostAndFix) {
  absl::StatusOr<TaskPlan> plan =
      plan_task(spec_with_ps("job-ps-0.job.default.svc:2222"), "ps", 0, {}, another_machine());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(plan.status().message()),
              AllOf(HasSubstr("cannot serve /job:ps/replica:0/task:0"),
                    HasSubstr("'job-ps-0.job.default.svc' resolved to 127.0.0.5"),
                    HasSubstr("--bind 0.0.0.0:2222")));
}

TEST(TaskPlanTest, AnExplicitBindAddressIsUsedWithoutResolvingTheSpecsName) {
  ServerOptions options;
  options.bind_address = "127.0.0.3:4000";
  HostLookup lookup = another_machine();
  lookup.resolve = [](const std::string& host) -> absl::StatusOr<std::vector<std::string>> {
    ADD_FAILURE() << "resolved " << host;
    return std::vector<std::string>{};
  };
  absl::StatusOr<TaskPlan> plan =
      plan_task(spec_with_ps("job-ps-0.job.default.svc:2222"), "ps", 0, options, lookup);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->listen.address, "127.0.0.3:4000");
  EXPECT_EQ(plan->listen.origin, "the bind address given");
  // Clients still use the spec's address.
  EXPECT_EQ(plan->address, (HostPort{"job-ps-0.job.default.svc", 2222}));
}

TEST(TaskPlanTest, ABracketedBindAddressIsAcceptedForEitherFamily) {
  ServerOptions options;
  options.bind_address = "[127.0.0.3]:4000";
  absl::StatusOr<TaskPlan> plan = plan_task(spec_with_ps("127.0.0.2:2222"), "ps", 0, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->listen.address, "127.0.0.3:4000");
  options.bind_address = "[::1]:4000";
  EXPECT_EQ(plan_task(spec_with_ps("127.0.0.2:2222"), "ps", 0, options)->listen.address,
            "[::1]:4000");
}

TEST(TaskPlanTest, AMalformedBindAddressIsInvalid) {
  ServerOptions options;
  options.bind_address = "127.0.0.3";
  EXPECT_EQ(plan_task(spec_with_ps("127.0.0.2:2222"), "ps", 0, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TaskPlanTest, TheChiefIsNoServerTask) {
  const ClusterSpec spec(std::map<std::string, std::vector<std::string>>{
      {"chief", {"127.0.0.1:1"}}, {"ps", {"127.0.0.1:2"}}, {"worker", {"127.0.0.1:3"}}});
  EXPECT_THAT(std::string(plan_task(spec, "chief", 0, {}).status().message()),
              HasSubstr("'ps' or 'worker'"));
}

}  // namespace
}  // namespace psflow::internal

// SimpleClusterResolver and the base ClusterResolver::master() rules.
#include "psflow/cluster_resolver.h"

#include <map>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

ClusterSpec two_job_spec() {
  return ClusterSpec({{"ps", {"ps0:2222", "ps1:2222"}},
                      {"worker", {"worker0:2222", "worker1:2222", "worker2:2222"}}});
}

TEST(SimpleClusterResolverTest, ReturnsWhatItWasGiven) {
  const SimpleClusterResolver resolver(two_job_spec(), "worker", 2, "grpc");
  EXPECT_EQ(resolver.cluster_spec().value(), two_job_spec());
  EXPECT_EQ(resolver.task_type().value(), "worker");
  EXPECT_EQ(resolver.task_id().value(), 2);
  EXPECT_EQ(resolver.rpc_layer().value(), "grpc");

  const SimpleClusterResolver bare(ClusterSpec{});
  EXPECT_TRUE(bare.cluster_spec().value().empty());
  EXPECT_EQ(bare.task_type().value(), std::nullopt);
  EXPECT_EQ(bare.task_id().value(), std::nullopt);
  EXPECT_EQ(bare.rpc_layer().value(), std::nullopt);
}

TEST(ClusterResolverMasterTest, OwnTaskWithoutRpcLayerIsTheBareAddress) {
  const SimpleClusterResolver resolver(two_job_spec(), "ps", 0);
  EXPECT_EQ(resolver.master().value(), "ps0:2222");
}

TEST(ClusterResolverMasterTest, OwnRpcLayerIsPrefixed) {
  const SimpleClusterResolver resolver(two_job_spec(), "ps", 0, "grpc");
  EXPECT_EQ(resolver.master().value(), "grpc://ps0:2222");
}

TEST(ClusterResolverMasterTest, ArgumentsOverrideTheResolversTask) {
  const SimpleClusterResolver resolver(two_job_spec(), "ps", 1, "grpc");
  EXPECT_EQ(resolver.master("ps", 0).value(), "grpc://ps0:2222");
  EXPECT_EQ(resolver.master("worker", 1, "test").value(), "test://worker1:2222");
  EXPECT_EQ(resolver.master("worker").value(), "grpc://worker1:2222");     // own id 1
  EXPECT_EQ(resolver.master(std::nullopt, 0).value(), "grpc://ps0:2222");  // own type ps
  // An empty layer is falsy in Python: the bare address.
  EXPECT_EQ(resolver.master("worker", 2, "").value(), "worker2:2222");
}

TEST(ClusterResolverMasterTest, EmptyClusterIsLocal) {
  const SimpleClusterResolver resolver(ClusterSpec{}, "worker", 0, "grpc");
  EXPECT_EQ(resolver.master().value(), "");
  EXPECT_EQ(resolver.master("ps", 7).value(), "");  // even with arguments, as TF
}

TEST(ClusterResolverMasterTest, OneJobWithOneTaskIsLocal) {
  const SimpleClusterResolver resolver(ClusterSpec({{"worker", {"worker0:2222"}}}), "worker", 0,
                                       "grpc");
  EXPECT_EQ(resolver.master().value(), "");
}

TEST(ClusterResolverMasterTest, OneJobWithTwoTasksIsNotLocal) {
  const SimpleClusterResolver resolver(ClusterSpec({{"worker", {"w0:1", "w1:1"}}}), "worker", 1);
  EXPECT_EQ(resolver.master().value(), "w1:1");
}

TEST(ClusterResolverMasterTest, LoneSparseTaskIsNotLocalAsInTf) {
  // TF compares len(job_tasks(job)), which is max index + 1 == 2 here.
  const SimpleClusterResolver resolver(
      ClusterSpec(std::map<std::string, ClusterSpec::Tasks>{{"worker", {{1, "w1:1"}}}}), "worker",
      1, "grpc");
  EXPECT_EQ(resolver.master().value(), "grpc://w1:1");
}

TEST(ClusterResolverMasterTest, TwoJobsWithOneTaskEachAreNotLocal) {
  const SimpleClusterResolver resolver(ClusterSpec({{"ps", {"p:1"}}, {"worker", {"w:1"}}}),
                                       "worker", 0);
  EXPECT_EQ(resolver.master().value(), "w:1");
}

TEST(ClusterResolverMasterTest, UnknownJobOrIndexIsNotFound) {
  const SimpleClusterResolver resolver(two_job_spec(), "ps", 0);
  absl::StatusOr<std::string> master = resolver.master("chief", 0);
  EXPECT_EQ(master.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(master.status().message(), HasSubstr("No such job in cluster: 'chief'"));
  master = resolver.master("ps", 5);
  EXPECT_EQ(master.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(master.status().message(), HasSubstr("No task with index 5 in job 'ps'"));
}

TEST(ClusterResolverMasterTest, NoTaskAnywhereIsInvalidArgument) {
  const SimpleClusterResolver resolver(two_job_spec());
  absl::StatusOr<std::string> master = resolver.master();
  EXPECT_EQ(master.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(master.status().message(), HasSubstr("master() needs a task type"));
  EXPECT_THAT(master.status().message(), HasSubstr("set TF_CONFIG.task.type"));
  master = resolver.master("ps");
  EXPECT_EQ(master.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(master.status().message(), HasSubstr("master() needs a task id for job 'ps'"));
  EXPECT_EQ(resolver.master("ps", 1).value(), "ps1:2222");
}

// A resolver whose getters fail: master() must pass the failure on, and must
// not consult the getters when the arguments already answer.
class FailingResolver final : public ClusterResolver {
 public:
  absl::StatusOr<ClusterSpec> cluster_spec() const override { return two_job_spec(); }
  absl::StatusOr<std::optional<std::string>> task_type() const override {
    return absl::UnavailableError("type source down");
  }
  absl::StatusOr<std::optional<int>> task_id() const override {
    return absl::UnavailableError("id source down");
  }
  absl::StatusOr<std::optional<std::string>> rpc_layer() const override {
    return absl::UnavailableError("layer source down");
  }
};

TEST(ClusterResolverMasterTest, GetterErrorsPropagateOnlyWhenNeeded) {
  const FailingResolver resolver;
  EXPECT_EQ(resolver.master().status().message(), "type source down");
  EXPECT_EQ(resolver.master("ps").status().message(), "id source down");
  EXPECT_EQ(resolver.master("ps", 0).status().message(), "layer source down");
  EXPECT_EQ(resolver.master("ps", 0, "grpc").value(), "grpc://ps0:2222");
}

}  // namespace
}  // namespace psflow::internal

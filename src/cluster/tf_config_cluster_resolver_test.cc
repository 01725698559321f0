// TFConfigClusterResolver against the rules and tests of TF's
// tfconfig_cluster_resolver.py / tfconfig_cluster_resolver_test.py.
#include <cstdlib>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/cluster_resolver.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kEnv[] = "TF_CONFIG";

// The cluster of TF's own tests.
constexpr char kTfTestConfig[] = R"(
    {
      "cluster": {
        "ps": ["ps0:2222", "ps1:2222"],
        "worker": ["worker0:2222", "worker1:2222", "worker2:2222"]
      },
      "task": {"type": "ps", "index": 0}
    })";

// Every test starts with TF_CONFIG unset and leaves the process's original
// value in place afterwards, whatever the test did.
class TFConfigClusterResolverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* value = std::getenv(kEnv); value != nullptr) saved_ = value;
    ASSERT_EQ(unsetenv(kEnv), 0);
  }
  void TearDown() override {
    if (saved_.has_value()) {
      setenv(kEnv, saved_->c_str(), /*overwrite=*/1);
    } else {
      unsetenv(kEnv);
    }
  }
  static void set_tf_config(const std::string& value) {
    ASSERT_EQ(setenv(kEnv, value.c_str(), /*overwrite=*/1), 0);
  }

 private:
  std::optional<std::string> saved_;
};

std::string message_of(const absl::Status& status) { return std::string(status.message()); }

TEST_F(TFConfigClusterResolverTest, NormalClusterSpecRead) {
  set_tf_config(kTfTestConfig);
  const TFConfigClusterResolver resolver;
  EXPECT_EQ(resolver.cluster_spec().value(),
            ClusterSpec({{"ps", {"ps0:2222", "ps1:2222"}},
                         {"worker", {"worker0:2222", "worker1:2222", "worker2:2222"}}}));
}

TEST_F(TFConfigClusterResolverTest, AutomaticMasterRead) {
  set_tf_config(kTfTestConfig);
  EXPECT_EQ(TFConfigClusterResolver().master().value(), "ps0:2222");
}

TEST_F(TFConfigClusterResolverTest, SpecifiedTaskTypeAndIndexMasterRead) {
  set_tf_config(kTfTestConfig);
  EXPECT_EQ(TFConfigClusterResolver().master("worker", 1).value(), "worker1:2222");
}

TEST_F(TFConfigClusterResolverTest, SessionMasterRead) {
  set_tf_config(R"({"cluster": {"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222"]},
                    "session_master": "sessionmaster:2222", "rpc_layer": "grpc",
                    "task": {"type": "ps", "index": 0}})");
  const TFConfigClusterResolver resolver;
  EXPECT_EQ(resolver.master().value(), "sessionmaster:2222");  // verbatim, no layer
  EXPECT_EQ(resolver.master("worker", 0, "test").value(), "sessionmaster:2222");
}

TEST_F(TFConfigClusterResolverTest, EmptySessionMasterStillWins) {
  set_tf_config(R"({"cluster": {"ps": ["p:1"], "worker": ["w:1"]}, "session_master": "",
                    "task": {"type": "ps", "index": 0}})");
  EXPECT_EQ(TFConfigClusterResolver().master().value(), "");
}

TEST_F(TFConfigClusterResolverTest, NullSessionMasterIsAbsent) {
  set_tf_config(R"({"cluster": {"ps": ["p:1"], "worker": ["w:1"]}, "session_master": null,
                    "task": {"type": "ps", "index": 0}})");
  EXPECT_EQ(TFConfigClusterResolver().master().value(), "p:1");
}

TEST_F(TFConfigClusterResolverTest, RpcLayerRead) {
  set_tf_config(R"({"cluster": {"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222"]},
                    "rpc_layer": "grpc", "task": {"type": "ps", "index": 0}})");
  const TFConfigClusterResolver resolver;
  EXPECT_EQ(resolver.master().value(), "grpc://ps0:2222");
  EXPECT_EQ(resolver.task_type().value(), "ps");
  EXPECT_EQ(resolver.task_id().value(), 0);
  EXPECT_EQ(resolver.rpc_layer().value(), "grpc");
}

TEST_F(TFConfigClusterResolverTest, ParameterOverrides) {
  set_tf_config(R"({"cluster": {"ps": ["ps0:2222", "ps1:2222"],
                                "worker": ["worker0:2222", "worker1:2222", "worker2:2222"]},
                    "rpc_layer": "grpc", "task": {"type": "ps", "index": 1}})");
  const TFConfigClusterResolver resolver({.task_type = "ps", .task_id = 0});
  EXPECT_EQ(resolver.master().value(), "grpc://ps0:2222");
  EXPECT_EQ(resolver.task_type().value(), "ps");
  EXPECT_EQ(resolver.task_id().value(), 0);

  // TF sets the overrides through setters; psflow resolvers are immutable,
  // so the same overrides come in through the options.
  const TFConfigClusterResolver changed({.task_type = "worker", .task_id = 1, .rpc_layer = "test"});
  EXPECT_EQ(changed.master().value(), "test://worker1:2222");
  EXPECT_EQ(changed.task_type().value(), "worker");
  EXPECT_EQ(changed.task_id().value(), 1);
  EXPECT_EQ(changed.rpc_layer().value(), "test");
}

TEST_F(TFConfigClusterResolverTest, MasterArgumentsBeatOverridesBeatTfConfig) {
  set_tf_config(R"({"cluster": {"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:1", "w1:1"]},
                    "rpc_layer": "grpc", "task": {"type": "ps", "index": 1}})");
  EXPECT_EQ(TFConfigClusterResolver().master().value(), "grpc://ps1:2222");
  const TFConfigClusterResolver resolver({.task_type = "worker"});
  EXPECT_EQ(resolver.master().value(), "grpc://w1:1");  // type overridden, index from TF_CONFIG
  EXPECT_EQ(resolver.master("ps").value(), "grpc://ps1:2222");
  EXPECT_EQ(resolver.master("ps", 0, "test").value(), "test://ps0:2222");
}

TEST_F(TFConfigClusterResolverTest, TaskTypeCastToString) {
  set_tf_config(R"({"cluster": {"123456": ["ps0:2222"], "worker": ["w0:2222"]},
                    "task": {"type": 123456, "index": 0}})");
  const TFConfigClusterResolver resolver;
  EXPECT_EQ(resolver.task_type().value(), "123456");
  EXPECT_EQ(resolver.master().value(), "ps0:2222");  // the cast type finds the job
}

TEST_F(TFConfigClusterResolverTest, TaskTypeCastsOtherValuesAsPythonStr) {
  set_tf_config(R"({"task": {"type": true}})");
  EXPECT_EQ(TFConfigClusterResolver().task_type().value(), "True");
  set_tf_config(R"({"task": {"type": null}})");
  EXPECT_EQ(TFConfigClusterResolver().task_type().value(), "None");
  set_tf_config(R"({"task": {"type": 1.5}})");
  EXPECT_EQ(TFConfigClusterResolver().task_type().value(), "1.5");
}

TEST_F(TFConfigClusterResolverTest, TaskIndexCastToInteger) {
  set_tf_config(R"({"cluster": {"ps": ["ps0:2222", "ps1:2222"]},
                    "task": {"type": "ps", "index": "1"}})");
  EXPECT_EQ(TFConfigClusterResolver().task_id().value(), 1);
  set_tf_config(R"({"task": {"index": 2.7}})");
  EXPECT_EQ(TFConfigClusterResolver().task_id().value(), 2);
  set_tf_config(R"({"task": {"index": " 3 "}})");
  EXPECT_EQ(TFConfigClusterResolver().task_id().value(), 3);
}

TEST_F(TFConfigClusterResolverTest, NonNumericTaskIndexIsAnError) {
  set_tf_config(R"({"task": {"type": "ps", "index": "abc"}})");
  const absl::StatusOr<std::optional<int>> id = TFConfigClusterResolver().task_id();
  EXPECT_EQ(id.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(message_of(id.status()),
            "TF_CONFIG.task.index must be an integer, got 'abc': invalid literal for int() "
            "with base 10: 'abc'. Set \"index\" to the task's 0-based position in its job, "
            "like {\"type\": \"worker\", \"index\": 0}.");
  for (const char* config :
       {R"({"task": {"index": null}})", R"({"task": {"index": [0]}})",
        R"({"task": {"index": "1.0"}})", R"({"task": {"index": 12345678901}})"}) {
    set_tf_config(config);
    const absl::StatusOr<std::optional<int>> bad = TFConfigClusterResolver().task_id();
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << config;
    EXPECT_THAT(message_of(bad.status()), StartsWith("TF_CONFIG.task.index must be an integer"))
        << config;
  }
}

TEST_F(TFConfigClusterResolverTest, TaskIndexOverride) {
  set_tf_config(R"({"cluster": {"worker": ["worker0:2222", "worker1:2222"]},
                    "task": {"type": "worker", "index": "0"}})");
  EXPECT_EQ(TFConfigClusterResolver({.task_id = 1}).task_id().value(), 1);
}

TEST_F(TFConfigClusterResolverTest, OverridesDoNotReadTfConfig) {
  // Like TF, a getter with an override never parses TF_CONFIG, so even a
  // malformed one does not matter there.
  set_tf_config("{not json");
  const TFConfigClusterResolver resolver(
      {.task_type = "worker", .task_id = 3, .rpc_layer = "grpc"});
  EXPECT_EQ(resolver.task_type().value(), "worker");
  EXPECT_EQ(resolver.task_id().value(), 3);
  EXPECT_EQ(resolver.rpc_layer().value(), "grpc");
  EXPECT_FALSE(resolver.cluster_spec().ok());
  EXPECT_FALSE(resolver.master().ok());
}

TEST_F(TFConfigClusterResolverTest, ZeroItemsInClusterSpecMasterRead) {
  set_tf_config("\n    {}\n    ");
  const TFConfigClusterResolver resolver;
  EXPECT_EQ(resolver.master().value(), "");
  EXPECT_TRUE(resolver.cluster_spec().value().empty());
}

TEST_F(TFConfigClusterResolverTest, OneItemInClusterSpecMasterRead) {
  set_tf_config(R"({"cluster": {"worker": ["worker0:2222"]}})");
  EXPECT_EQ(TFConfigClusterResolver().master().value(), "");
}

TEST_F(TFConfigClusterResolverTest, UnsetTfConfigIsAnEmptyConfig) {
  const TFConfigClusterResolver resolver;
  EXPECT_FALSE(resolver.is_configured());
  EXPECT_TRUE(resolver.cluster_spec().value().empty());
  EXPECT_EQ(resolver.task_type().value(), std::nullopt);
  EXPECT_EQ(resolver.task_id().value(), std::nullopt);
  EXPECT_EQ(resolver.rpc_layer().value(), std::nullopt);
  EXPECT_EQ(resolver.master().value(), "");
}

TEST_F(TFConfigClusterResolverTest, MissingTaskFieldsAreNullopt) {
  set_tf_config(R"({"cluster": {"ps": ["p:1"]}, "task": {}})");
  const TFConfigClusterResolver resolver;
  EXPECT_EQ(resolver.task_type().value(), std::nullopt);
  EXPECT_EQ(resolver.task_id().value(), std::nullopt);
  set_tf_config(R"({"rpc_layer": null})");
  EXPECT_EQ(resolver.rpc_layer().value(), std::nullopt);
}

TEST_F(TFConfigClusterResolverTest, EmptyTfConfigIsMalformedAsInTf) {
  set_tf_config("");
  const TFConfigClusterResolver resolver;
  EXPECT_FALSE(resolver.is_configured());
  const absl::StatusOr<ClusterSpec> spec = resolver.cluster_spec();
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message_of(spec.status()),
              StartsWith("TF_CONFIG is not valid JSON at byte 1 near '' (end of input)"));
}

TEST_F(TFConfigClusterResolverTest, MalformedJsonPointsAtTheByteAndSaysTheFix) {
  set_tf_config(R"({"cluster": {ps: ["p:1"]}})");
  const TFConfigClusterResolver resolver;
  for (const absl::Status& status :
       {resolver.cluster_spec().status(), resolver.task_type().status(),
        resolver.task_id().status(), resolver.rpc_layer().status(), resolver.master().status()}) {
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(message_of(status), StartsWith("TF_CONFIG is not valid JSON at byte 14 near "
                                               R"('{"cluster": {ps: ["p:1"]}}': )"));
    EXPECT_THAT(message_of(status), HasSubstr("line 1, column 14"));
    EXPECT_THAT(message_of(status),
                HasSubstr(R"(; set TF_CONFIG to a JSON object like {"cluster": {)"));
    EXPECT_THAT(message_of(status), HasSubstr(R"("task": {"type": "worker", "index": 0}})"));
  }
}

TEST_F(TFConfigClusterResolverTest, MalformedJsonOnALaterLine) {
  set_tf_config("{\n  \"cluster\": {\"ps\": [\"p:1\",]}\n}");
  const absl::Status status = TFConfigClusterResolver().cluster_spec().status();
  // The ']' after the trailing comma is byte 30, column 28 of line 2.
  EXPECT_THAT(message_of(status), StartsWith("TF_CONFIG is not valid JSON at byte 30 near"));
  EXPECT_THAT(message_of(status), HasSubstr("line 2, column 28"));
}

TEST_F(TFConfigClusterResolverTest, NonObjectTfConfigIsRejected) {
  for (const char* config : {"[]", "\"cluster\"", "5", "null"}) {
    set_tf_config(config);
    const absl::Status status = TFConfigClusterResolver().cluster_spec().status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << config;
    EXPECT_THAT(message_of(status), StartsWith("TF_CONFIG must be a JSON object, got ")) << config;
  }
}

TEST_F(TFConfigClusterResolverTest, NonObjectTaskIsRejected) {
  set_tf_config(R"({"task": "worker"})");
  const TFConfigClusterResolver resolver;
  EXPECT_EQ(message_of(resolver.task_type().status()),
            "TF_CONFIG.task must be an object like {\"type\": \"worker\", \"index\": 0}, got "
            "'worker'.");
  EXPECT_EQ(resolver.task_id().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(TFConfigClusterResolverTest, NonStringRpcLayerOrSessionMasterIsRejected) {
  set_tf_config(R"({"rpc_layer": 5})");
  EXPECT_EQ(message_of(TFConfigClusterResolver().rpc_layer().status()),
            "TF_CONFIG.rpc_layer must be a string like \"grpc\", got 5.");
  set_tf_config(R"({"session_master": ["a"]})");
  EXPECT_EQ(message_of(TFConfigClusterResolver().master().status()),
            "TF_CONFIG.session_master must be a string like \"host:port\", got ['a'].");
}

TEST_F(TFConfigClusterResolverTest, NoClusterKeyIsAnEmptySpec) {
  // An evaluator's TF_CONFIG may name only its task.
  set_tf_config(R"({"task": {"type": "evaluator", "index": 0}})");
  const TFConfigClusterResolver resolver;
  EXPECT_TRUE(resolver.cluster_spec().value().empty());
  EXPECT_EQ(resolver.task_type().value(), "evaluator");
  EXPECT_EQ(resolver.master().value(), "");
}

TEST_F(TFConfigClusterResolverTest, ClusterErrorsComeWithTfWording) {
  set_tf_config(R"({"cluster": {"ps": "ps0:2222"}})");
  EXPECT_THAT(message_of(TFConfigClusterResolver().cluster_spec().status()),
              StartsWith("The tasks for job 'ps' must be a list or a dictionary from integers "
                         "to strings."));
  set_tf_config(R"({"cluster": {"worker": {"x": "w:1"}}})");
  EXPECT_THAT(message_of(TFConfigClusterResolver().cluster_spec().status()),
              StartsWith("Task index 'x' of job 'worker' is not an integer"));
  set_tf_config(R"({"cluster": {"worker": [7]}})");
  EXPECT_THAT(message_of(TFConfigClusterResolver().cluster_spec().status()),
              StartsWith("Task address 7 must be bytes or unicode."));
  set_tf_config(R"({"cluster": null})");
  EXPECT_THAT(message_of(TFConfigClusterResolver().cluster_spec().status()),
              StartsWith("`cluster` must be a dictionary"));
}

TEST_F(TFConfigClusterResolverTest, SparseJobs) {
  set_tf_config(R"({"cluster": {"worker": {"1": "worker1:2222", "5": "worker5:2222"},
                                "ps": ["ps0:2222"]},
                    "task": {"type": "worker", "index": 5}, "rpc_layer": "grpc"})");
  const TFConfigClusterResolver resolver;
  const ClusterSpec spec = resolver.cluster_spec().value();
  EXPECT_THAT(spec.task_indices("worker"), ::testing::ElementsAre(1, 5));
  EXPECT_EQ(resolver.master().value(), "grpc://worker5:2222");
  EXPECT_EQ(resolver.master("worker", 0).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(TFConfigClusterResolverTest, MasterOfUnknownTaskIsNotFound) {
  set_tf_config(kTfTestConfig);
  const TFConfigClusterResolver resolver;
  EXPECT_THAT(message_of(resolver.master("chief", 0).status()),
              StartsWith("No such job in cluster: 'chief'"));
  EXPECT_THAT(message_of(resolver.master("worker", 3).status()),
              StartsWith("No task with index 3 in job 'worker'"));
}

TEST_F(TFConfigClusterResolverTest, MasterWithoutAnyTaskIsInvalidArgument) {
  set_tf_config(R"({"cluster": {"ps": ["p:1"], "worker": ["w:1"]}})");
  const absl::Status status = TFConfigClusterResolver().master().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message_of(status), HasSubstr("set TF_CONFIG.task.type"));
}

TEST_F(TFConfigClusterResolverTest, EveryCallRereadsTfConfig) {
  const TFConfigClusterResolver resolver;
  set_tf_config(R"({"cluster": {"ps": ["a:1"], "worker": ["b:1"]},
                    "task": {"type": "ps", "index": 0}})");
  EXPECT_EQ(resolver.task_type().value(), "ps");
  EXPECT_EQ(resolver.master().value(), "a:1");
  EXPECT_EQ(resolver.cluster_spec().value().num_tasks("worker"), 1);

  set_tf_config(R"({"cluster": {"ps": ["a:1"], "worker": ["b:1", "c:1"]},
                    "task": {"type": "worker", "index": 1}, "rpc_layer": "grpc"})");
  EXPECT_EQ(resolver.task_type().value(), "worker");
  EXPECT_EQ(resolver.task_id().value(), 1);
  EXPECT_EQ(resolver.rpc_layer().value(), "grpc");
  EXPECT_EQ(resolver.master().value(), "grpc://c:1");
  EXPECT_EQ(resolver.cluster_spec().value().num_tasks("worker"), 2);

  ASSERT_EQ(unsetenv(kEnv), 0);
  EXPECT_EQ(resolver.task_type().value(), std::nullopt);
  EXPECT_TRUE(resolver.cluster_spec().value().empty());
  EXPECT_FALSE(resolver.is_configured());

  set_tf_config("{broken");
  EXPECT_FALSE(resolver.task_type().ok());
  EXPECT_TRUE(resolver.is_configured());
}

TEST_F(TFConfigClusterResolverTest, GivenJsonReplacesTheEnvironment) {
  set_tf_config(R"({"task": {"type": "ps", "index": 0}})");
  const TFConfigClusterResolver resolver(
      {.tf_config_json = R"({"cluster": {"worker": ["w0:1", "w1:1"]},
                             "task": {"type": "worker", "index": 1}})"});
  EXPECT_TRUE(resolver.is_configured());
  EXPECT_EQ(resolver.task_type().value(), "worker");
  EXPECT_EQ(resolver.master().value(), "w1:1");

  const TFConfigClusterResolver empty_given({.tf_config_json = ""});
  EXPECT_TRUE(empty_given.is_configured());
  EXPECT_EQ(empty_given.cluster_spec().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(TFConfigClusterResolverTest, IsConfigured) {
  EXPECT_FALSE(TFConfigClusterResolver().is_configured());
  set_tf_config("{}");
  EXPECT_TRUE(TFConfigClusterResolver().is_configured());
}

}  // namespace
}  // namespace psflow::internal

#include "psflow/cluster_spec.h"

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string message_of(const absl::Status& status) { return std::string(status.message()); }

ClusterSpec parse_ok(std::string_view json) {
  absl::StatusOr<ClusterSpec> spec = ClusterSpec::from_json(json);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return spec.ok() ? *spec : ClusterSpec();
}

absl::Status parse_error(std::string_view json) {
  absl::StatusOr<ClusterSpec> spec = ClusterSpec::from_json(json);
  EXPECT_FALSE(spec.ok()) << json;
  if (spec.ok()) return absl::OkStatus();
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument) << spec.status();
  return spec.status();
}

TEST(ClusterSpecTest, DenseConstructor) {
  const ClusterSpec spec({{"ps", {"ps0:2222", "ps1:2222"}}, {"worker", {"w0:2222"}}});
  EXPECT_FALSE(spec.empty());
  EXPECT_THAT(spec.jobs(), ElementsAre("ps", "worker"));
  EXPECT_TRUE(spec.has_job("ps"));
  EXPECT_FALSE(spec.has_job("chief"));
  EXPECT_EQ(spec.num_tasks("ps"), 2);
  EXPECT_EQ(spec.num_tasks("worker"), 1);
  EXPECT_EQ(spec.num_tasks("chief"), 0);
  EXPECT_THAT(spec.task_indices("ps"), ElementsAre(0, 1));
  EXPECT_THAT(spec.task_indices("chief"), ElementsAre());
  EXPECT_EQ(spec.task_address("ps", 1).value(), "ps1:2222");
  EXPECT_EQ(spec.as_map().at("worker").at(0), "w0:2222");
}

TEST(ClusterSpecTest, DefaultIsEmpty) {
  EXPECT_TRUE(ClusterSpec().empty());
  EXPECT_THAT(ClusterSpec().jobs(), ElementsAre());
  EXPECT_EQ(ClusterSpec(), parse_ok("{}"));
}

TEST(ClusterSpecTest, TaskAddressErrorsAreNotFoundWithTfWording) {
  const ClusterSpec spec({{"ps", {"ps0:2222", "ps1:2222"}}, {"worker", {"w0:2222"}}});
  absl::StatusOr<std::string> address = spec.task_address("chief", 0);
  EXPECT_EQ(address.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(message_of(address.status()),
            "No such job in cluster: 'chief' (the cluster has jobs 'ps', 'worker')");
  address = spec.task_address("ps", 3);
  EXPECT_EQ(address.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(message_of(address.status()),
            "No task with index 3 in job 'ps' (its indices are 0, 1)");
  EXPECT_EQ(message_of(ClusterSpec().task_address("ps", 0).status()),
            "No such job in cluster: 'ps' (the cluster has no jobs)");
}

TEST(ClusterSpecTest, TaskName) {
  EXPECT_EQ(task_name("ps", 1), "/job:ps/replica:0/task:1");
  EXPECT_EQ(task_name(kWorkerJob, 0), "/job:worker/replica:0/task:0");
}

TEST(ClusterSpecTest, FromJsonDenseLists) {
  const ClusterSpec spec = parse_ok(R"({"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:1"]})");
  EXPECT_EQ(spec, ClusterSpec({{"ps", {"ps0:2222", "ps1:2222"}}, {"worker", {"w0:1"}}}));
}

TEST(ClusterSpecTest, FromJsonSparseObjectsCastKeysWithInt) {
  const ClusterSpec spec =
      parse_ok(R"({"worker": {"1": "w1:2222", " 3 ": "w3:2222", "+10": "w10:2222"},
                   "ps": {"0": "ps0:2222"}})");
  EXPECT_THAT(spec.task_indices("worker"), ElementsAre(1, 3, 10));
  EXPECT_EQ(spec.num_tasks("worker"), 3);
  EXPECT_EQ(spec.task_address("worker", 3).value(), "w3:2222");
  EXPECT_EQ(spec.task_address("worker", 10).value(), "w10:2222");
  EXPECT_EQ(spec.task_address("ps", 0).value(), "ps0:2222");
  EXPECT_EQ(message_of(spec.task_address("worker", 0).status()),
            "No task with index 0 in job 'worker' (its indices are 1, 3, 10)");
}

TEST(ClusterSpecTest, FromJsonEmptyJobs) {
  const ClusterSpec spec = parse_ok(R"({"ps": [], "worker": {}})");
  EXPECT_THAT(spec.jobs(), ElementsAre("ps", "worker"));
  EXPECT_FALSE(spec.empty());  // jobs without tasks still count, as in TF
  EXPECT_EQ(spec.num_tasks("ps"), 0);
  EXPECT_EQ(spec.num_tasks("worker"), 0);
}

TEST(ClusterSpecTest, FromJsonMalformedNamesBytePosition) {
  const absl::Status status = parse_error(R"({"ps": [ps0:2222]})");
  EXPECT_THAT(message_of(status), StartsWith("The cluster spec is not valid JSON at byte 9 near "
                                             R"('{"ps": [ps0:2222]}': )"));
  EXPECT_THAT(message_of(status), HasSubstr("pass a JSON object mapping job names to addresses"));
}

TEST(ClusterSpecTest, FromJsonNonObjectIsRejectedWithTfWording) {
  for (const char* json : {"[]", "\"ps\"", "5", "null"}) {
    const absl::Status status = parse_error(json);
    EXPECT_THAT(message_of(status),
                StartsWith("`cluster` must be a dictionary mapping one or more job names to "
                           "lists of network addresses"))
        << json;
    EXPECT_THAT(message_of(status), HasSubstr("Set TF_CONFIG.cluster to a JSON object like"));
  }
}

TEST(ClusterSpecTest, FromJsonWrongJobTypeIsTfTypeError) {
  for (const char* json :
       {R"({"ps": "ps0:2222"})", R"({"ps": 2222})", R"({"ps": null})", R"({"ps": true})"}) {
    const absl::Status status = parse_error(json);
    EXPECT_THAT(message_of(status),
                StartsWith("The tasks for job 'ps' must be a list or a dictionary from "
                           "integers to strings."))
        << json;
    EXPECT_THAT(message_of(status), HasSubstr("write TF_CONFIG.cluster.ps as a list like"));
  }
  EXPECT_THAT(message_of(parse_error(R"({"ps": "ps0:2222"})")), HasSubstr("Got 'ps0:2222';"));
}

TEST(ClusterSpecTest, FromJsonWrongJobTypeIsFoundInDocumentOrder) {
  // TF checks job shapes in dict (document) order before any address.
  const absl::Status status = parse_error(R"({"worker": [1], "ps": 5})");
  EXPECT_THAT(message_of(status), StartsWith("The tasks for job 'ps' must be a list"));
}

TEST(ClusterSpecTest, FromJsonNonIntegerKeyIsRejected) {
  const absl::Status status = parse_error(R"({"worker": {"0": "a:1", "abc": "b:2"}})");
  EXPECT_EQ(message_of(status),
            "Task index 'abc' of job 'worker' is not an integer: invalid literal for int() "
            "with base 10: 'abc'. Keys of a sparse job are 0-based task indices, like "
            R"({"0": "host:port", "2": "host:port"} (TF_CONFIG.cluster.worker).)");
  for (const char* json : {R"({"worker": {"1.0": "a:1"}})", R"({"worker": {"": "a:1"}})",
                           R"({"worker": {"99999999999": "a:1"}})"}) {
    EXPECT_THAT(message_of(parse_error(json)), StartsWith("Task index '")) << json;
  }
}

TEST(ClusterSpecTest, FromJsonNegativeOrDuplicateIndexIsRejected) {
  EXPECT_EQ(message_of(parse_error(R"({"worker": {"-1": "a:1"}})")),
            "Task index -1 of job 'worker' is negative. Task indices start at 0 "
            "(TF_CONFIG.cluster.worker).");
  EXPECT_EQ(message_of(parse_error(R"({"worker": {"1": "a:1", "01": "b:2"}})")),
            "Task index 1 of job 'worker' is given twice, as '1' and '01'. List each task "
            "once (TF_CONFIG.cluster.worker).");
}

TEST(ClusterSpecTest, FromJsonNonStringAddressIsTfTypeError) {
  EXPECT_EQ(message_of(parse_error(R"({"ps": ["ps0:2222", 2222]})")),
            "Task address 2222 must be bytes or unicode. Write task 1 of job 'ps' as a "
            R"("host:port" string (TF_CONFIG.cluster.ps).)");
  EXPECT_THAT(message_of(parse_error(R"({"ps": [null]})")),
              StartsWith("Task address None must be bytes or unicode."));
  EXPECT_THAT(message_of(parse_error(R"({"worker": {"3": ["a:1"]}})")),
              StartsWith("Task address ['a:1'] must be bytes or unicode. Write task 3 of job "
                         "'worker'"));
}

TEST(ClusterSpecTest, FromJsonAddressErrorsAreFoundSorted) {
  // After all shapes pass, TF checks addresses by sorted job, then index.
  const absl::Status status = parse_error(R"({"worker": [1], "ps": ["a:1", 2]})");
  EXPECT_THAT(message_of(status), StartsWith("Task address 2 must be bytes or unicode. Write "
                                             "task 1 of job 'ps'"));
}

TEST(ClusterSpecTest, FromJsonDuplicateJobKeepsTheLast) {
  // Python's json.loads keeps the last value of a repeated key.
  EXPECT_EQ(parse_ok(R"({"ps": ["a:1"], "ps": ["b:2", "c:3"]})"),
            ClusterSpec({{"ps", {"b:2", "c:3"}}}));
}

TEST(ClusterSpecTest, ToJsonDenseAndSparse) {
  const ClusterSpec dense({{"ps", {"ps0:2222"}}, {"worker", {"w0:1", "w1:1"}}});
  EXPECT_EQ(dense.to_json(), R"({"ps":["ps0:2222"],"worker":["w0:1","w1:1"]})");
  const ClusterSpec sparse(std::map<std::string, ClusterSpec::Tasks>{
      {"worker", {{2, "w2:1"}, {10, "w10:1"}}}, {"ps", {}}, {"chief", {{0, "c:1"}}}});
  EXPECT_EQ(sparse.to_json(), R"({"chief":["c:1"],"ps":[],"worker":{"2":"w2:1","10":"w10:1"}})");
  EXPECT_EQ(ClusterSpec().to_json(), "{}");
}

TEST(ClusterSpecTest, ToJsonFromJsonRoundTrip) {
  const std::vector<ClusterSpec> specs = {
      ClusterSpec(),
      ClusterSpec({{"chief", {"c:1"}}, {"ps", {"p0:1", "p1:1"}}, {"worker", {"w0:1"}}}),
      ClusterSpec(std::map<std::string, ClusterSpec::Tasks>{
          {"worker", {{1, "w1:1"}, {3, "w3:1"}}}, {"ps", {{0, "p0:1"}}}, {"evaluator", {}}}),
      ClusterSpec(
          std::map<std::string, ClusterSpec::Tasks>{{"weird \"job\"\n", {{0, "h\\ost:1"}}}}),
  };
  for (const ClusterSpec& spec : specs) {
    absl::StatusOr<ClusterSpec> back = ClusterSpec::from_json(spec.to_json());
    ASSERT_TRUE(back.ok()) << back.status() << " for " << spec.to_json();
    EXPECT_EQ(*back, spec) << spec.to_json();
  }
}

TEST(ClusterSpecTest, ToJsonDoesNotThrowOnInvalidUtf8) {
  const ClusterSpec spec({{"ps", {std::string("bad\xff:1")}}});
  EXPECT_EQ(spec.to_json(), "{\"ps\":[\"bad\xef\xbf\xbd:1\"]}");  // U+FFFD
}

}  // namespace
}  // namespace psflow::internal

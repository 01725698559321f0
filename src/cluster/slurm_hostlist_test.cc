// expand_hostlist / expand_tasks_per_node against TF's
// slurm_cluster_resolver_test.py examples, Slurm's padding and products, and
// every malformed form.
#include "cluster/slurm_hostlist.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using Hosts = std::vector<std::string>;

Hosts expand(const std::string& list) {
  absl::StatusOr<Hosts> hosts = expand_hostlist(list);
  EXPECT_TRUE(hosts.ok()) << list << ": " << hosts.status();
  return hosts.ok() ? *hosts : Hosts{"<error>"};
}

// The INVALID_ARGUMENT message for a list that must be rejected.
std::string hostlist_error(const std::string& list) {
  absl::StatusOr<Hosts> hosts = expand_hostlist(list);
  EXPECT_EQ(hosts.status().code(), absl::StatusCode::kInvalidArgument) << list;
  return std::string(hosts.status().message());
}

std::string tasks_error(const std::string& list) {
  absl::StatusOr<std::vector<int>> tasks = expand_tasks_per_node(list);
  EXPECT_EQ(tasks.status().code(), absl::StatusCode::kInvalidArgument) << list;
  return std::string(tasks.status().message());
}

// TF's test_expand_hostlist, case by case.
TEST(SlurmHostlistTest, TfExamples) {
  EXPECT_EQ(expand("n1"), Hosts({"n1"}));
  EXPECT_EQ(expand("n[1,3]"), Hosts({"n1", "n3"}));
  EXPECT_EQ(expand("n[1-3]"), Hosts({"n1", "n2", "n3"}));
  EXPECT_EQ(expand("n[1-2],m5,o[3-4,6,7-9]"),
            Hosts({"n1", "n2", "m5", "o3", "o4", "o6", "o7", "o8", "o9"}));
  EXPECT_EQ(expand("n[0001-0003],m5,o[009-011]"),
            Hosts({"n0001", "n0002", "n0003", "m5", "o009", "o010", "o011"}));
}

TEST(SlurmHostlistTest, KeepsOrderAndDuplicates) {
  EXPECT_EQ(expand("b,a,b"), Hosts({"b", "a", "b"}));
  EXPECT_EQ(expand("n[3,1-2]"), Hosts({"n3", "n1", "n2"}));
  EXPECT_EQ(expand("n[9-11]"), Hosts({"n9", "n10", "n11"}));  // Not sorted as text.
}

TEST(SlurmHostlistTest, ZeroPaddingFollowsTheFirstBound) {
  EXPECT_EQ(expand("n[01-03]"), Hosts({"n01", "n02", "n03"}));
  EXPECT_EQ(expand("n[08-10]"), Hosts({"n08", "n09", "n10"}));
  EXPECT_EQ(expand("n[8-10]"), Hosts({"n8", "n9", "n10"}));
  EXPECT_EQ(expand("n[007]"), Hosts({"n007"}));
  EXPECT_EQ(expand("n[098-101]"), Hosts({"n098", "n099", "n100", "n101"}));
}

TEST(SlurmHostlistTest, SeveralGroupsExpandAsAProduct) {
  EXPECT_EQ(expand("a[1-2]b[3-4]"), Hosts({"a1b3", "a1b4", "a2b3", "a2b4"}));
  EXPECT_EQ(expand("rack[1-2]-node[01,03]"),
            Hosts({"rack1-node01", "rack1-node03", "rack2-node01", "rack2-node03"}));
  EXPECT_EQ(expand("x,a[1-2]b[3]c,y"), Hosts({"x", "a1b3c", "a2b3c", "y"}));
}

TEST(SlurmHostlistTest, BracketsAnywhereInAName) {
  EXPECT_EQ(expand("[1-2]"), Hosts({"1", "2"}));
  EXPECT_EQ(expand("n[1-2].cluster"), Hosts({"n1.cluster", "n2.cluster"}));
  EXPECT_EQ(expand("10.0.0.[1-2]"), Hosts({"10.0.0.1", "10.0.0.2"}));
}

TEST(SlurmHostlistTest, CommasInsideBracketsDoNotSplitHosts) {
  EXPECT_EQ(expand("n[1,2],m[3,4]"), Hosts({"n1", "n2", "m3", "m4"}));
}

TEST(SlurmHostlistTest, EmptyListHasNoHosts) { EXPECT_THAT(expand(""), IsEmpty()); }

TEST(SlurmHostlistTest, UnbalancedBracketsAreRejected) {
  std::string message = hostlist_error("n[1-2");
  EXPECT_THAT(message, HasSubstr("Invalid hostlist format \"n[1-2\""));
  EXPECT_THAT(message, HasSubstr("'[' at character 2 is never closed"));
  EXPECT_THAT(message, HasSubstr("n[1-2],m5,o[3-4,6,7-9]"));  // The expected form.
  EXPECT_THAT(hostlist_error("n1-2]"), HasSubstr("']' at character 5 closes no '['"));
  EXPECT_THAT(hostlist_error("n[1[2]]"), HasSubstr("brackets do not nest"));
  EXPECT_THAT(hostlist_error("n[1],m[2"), HasSubstr("'[' at character 7 is never closed"));
}

TEST(SlurmHostlistTest, EmptyHostsAreRejected) {
  EXPECT_THAT(hostlist_error(",n1"), HasSubstr("empty host name before ',' at character 1"));
  EXPECT_THAT(hostlist_error("n1,,n2"), HasSubstr("empty host name before ',' at character 4"));
  EXPECT_THAT(hostlist_error("n1,"), HasSubstr("empty host name after the last ','"));
}

TEST(SlurmHostlistTest, BadGroupsAreRejected) {
  EXPECT_THAT(hostlist_error("n[5-3]"),
              HasSubstr("in host \"n[5-3]\", range \"5-3\" runs backwards; write the smaller "
                        "number first, like \"3-5\""));
  EXPECT_THAT(hostlist_error("n[]"), HasSubstr("empty item in \"[]\""));
  EXPECT_THAT(hostlist_error("n[1,]"), HasSubstr("empty item in \"[1,]\""));
  EXPECT_THAT(hostlist_error("n[a-b]"), HasSubstr("range start \"a\" holds \"a\", not a digit"));
  EXPECT_THAT(hostlist_error("n[-3]"), HasSubstr("empty range start"));
  EXPECT_THAT(hostlist_error("n[3-]"), HasSubstr("empty range end"));
  EXPECT_THAT(hostlist_error("n[1-2-3]"), HasSubstr("range end \"2-3\" holds \"-\""));
  EXPECT_THAT(hostlist_error("n[ 1]"), HasSubstr("holds \" \", not a digit"));
  EXPECT_THAT(hostlist_error("n[1234567890123456789]"), HasSubstr("has more than 18 digits"));
}

TEST(SlurmHostlistTest, HugeExpansionsAreRefusedBeforeExpanding) {
  // Each of these would take minutes or gigabytes if expanded first.
  EXPECT_THAT(hostlist_error("n[1-999999999999999999]"),
              HasSubstr("expands to more than 1000000 hosts"));
  EXPECT_THAT(hostlist_error("a[1-1000]b[1-1001]"),
              HasSubstr("expands to more than 1000000 hosts"));
  EXPECT_THAT(hostlist_error("a[1-1000]b[1-1000]c[1-1000]d[1-1000]e[1-1000]f[1-1000]g[1-1000]"),
              HasSubstr("expands to more than 1000000 hosts"));
  EXPECT_THAT(hostlist_error("a[1-600000],b[1-400001]"),
              HasSubstr("expands to more than 1000000 hosts"));
  EXPECT_THAT(hostlist_error(absl::StrCat(std::string(250, 'n'), "[1-100000]")),
              HasSubstr("expands to names of up to 256 characters, more than 255"));
}

TEST(SlurmHostlistTest, ExactlyTheLimitIsExpanded) {
  absl::StatusOr<Hosts> hosts = expand_hostlist("a[1-1000]b[1-1000]");
  ASSERT_TRUE(hosts.ok()) << hosts.status();
  ASSERT_EQ(hosts->size(), 1'000'000u);
  EXPECT_EQ(hosts->front(), "a1b1");
  EXPECT_EQ(hosts->back(), "a1000b1000");
}

TEST(SlurmHostlistTest, LongOrOddValuesAreQuotedShortAndEscaped) {
  const std::string message = hostlist_error(absl::StrCat(std::string(200, 'x'), "\n]"));
  EXPECT_THAT(message, HasSubstr(absl::StrCat("\"", std::string(80, 'x'), "...\"")));
  EXPECT_THAT(hostlist_error("n\x01]"), HasSubstr("\"n\\x01]\""));
}

// TF's test_expand_tasks_per_node.
TEST(SlurmHostlistTest, TasksPerNodeTfExamples) {
  EXPECT_THAT(expand_tasks_per_node("2").value(), ElementsAre(2));
  EXPECT_THAT(expand_tasks_per_node("2,1,3").value(), ElementsAre(2, 1, 3));
  EXPECT_THAT(expand_tasks_per_node("3(x2),2,1").value(), ElementsAre(3, 3, 2, 1));
  EXPECT_THAT(expand_tasks_per_node("3(x2),2,11(x4)").value(),
              ElementsAre(3, 3, 2, 11, 11, 11, 11));
  EXPECT_THAT(expand_tasks_per_node("13(x10)").value(),
              ElementsAre(13, 13, 13, 13, 13, 13, 13, 13, 13, 13));
}

TEST(SlurmHostlistTest, TasksPerNodeForms) {
  EXPECT_THAT(expand_tasks_per_node("2(x3),1").value(), ElementsAre(2, 2, 2, 1));
  EXPECT_THAT(expand_tasks_per_node("1(x1)").value(), ElementsAre(1));
  EXPECT_THAT(expand_tasks_per_node("0,65535").value(), ElementsAre(0, 65535));
  EXPECT_EQ(expand_tasks_per_node("1(x1000000)").value().size(), 1'000'000u);
}

TEST(SlurmHostlistTest, MalformedTasksPerNodeIsRejected) {
  std::string message = tasks_error("2(x3");
  EXPECT_THAT(message, HasSubstr("Invalid tasks-per-node list format \"2(x3\""));
  EXPECT_THAT(message, HasSubstr("item \"2(x3\" does not end in (xR)"));
  EXPECT_THAT(message, HasSubstr("\"2(x3),1\""));  // The expected form.
  EXPECT_THAT(tasks_error(""), HasSubstr("the list is empty"));
  EXPECT_THAT(tasks_error("2,,1"), HasSubstr("it has an empty item"));
  EXPECT_THAT(tasks_error("2,"), HasSubstr("it has an empty item"));
  EXPECT_THAT(tasks_error("-1"), HasSubstr("holds \"-\", not a digit"));
  EXPECT_THAT(tasks_error(" 2"), HasSubstr("holds \" \", not a digit"));
  EXPECT_THAT(tasks_error("(x2)"), HasSubstr("empty task count"));
  EXPECT_THAT(tasks_error("2(3)"), HasSubstr("does not end in (xR)"));
  EXPECT_THAT(tasks_error("2(x)"), HasSubstr("does not end in (xR)"));
  EXPECT_THAT(tasks_error("2(xa)"), HasSubstr("node count \"a\" holds \"a\""));
  EXPECT_THAT(tasks_error("2(x0)"), HasSubstr("item \"2(x0)\" repeats over zero nodes"));
  EXPECT_THAT(tasks_error("65536"), HasSubstr("puts 65536 tasks on one node, more than 65535"));
  EXPECT_THAT(tasks_error("99999999999999999999"), HasSubstr("has more than 18 digits"));
}

TEST(SlurmHostlistTest, HugeTasksPerNodeListsAreRefusedBeforeExpanding) {
  EXPECT_THAT(tasks_error("1(x999999999999999999)"), HasSubstr("covers more than 1000000 nodes"));
  EXPECT_THAT(tasks_error("1(x600000),2(x400001)"), HasSubstr("covers more than 1000000 nodes"));
}

}  // namespace
}  // namespace psflow::internal

#include "rpc/authorization.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;
using Op = v1::VariableOp;

// The callers the policy tells apart.
struct Caller {
  const char* name;
  PeerIdentity identity;
};

std::vector<Caller> callers() {
  PeerIdentity insecure;
  insecure.peer = "ipv4:10.0.0.7:5123";
  return {
      {"chief", identity_from_common_name("chief/0")},
      {"worker", identity_from_common_name("worker/3")},
      {"ps", identity_from_common_name("ps/1")},
      {"evaluator", identity_from_common_name("evaluator/0")},
      {"unknown_job", identity_from_common_name("trainer/0")},
      {"no_role", identity_from_common_name("CN that names no task")},
      {"unauthenticated", insecure},
  };
}

// The expected policy, spelled out independently of the table: which
// callers each method admits ("*" = every authenticated peer).
const std::map<Method, std::vector<std::string>>& expected_methods() {
  static const auto* expected = new std::map<Method, std::vector<std::string>>{
      {Method::kHealthCheck, {"*"}},
      {Method::kPsGetStatus, {"*"}},
      {Method::kPsExecute, {"chief", "worker"}},
      {Method::kPsListVariables, {"chief"}},
      {Method::kPsOpenSharedMemory, {"chief", "worker"}},
      {Method::kPsCloseSharedMemory, {"chief", "worker"}},
      {Method::kWorkerGetStatus, {"*"}},
      {Method::kWorkerRunFunction, {"chief"}},
      {Method::kWorkerRunFunctions, {"chief"}},
      {Method::kWorkerCancelFunction, {"chief"}},
      {Method::kWorkerCreateValue, {"chief"}},
      {Method::kWorkerCreateCall, {"chief"}},
      {Method::kWorkerCreateStruct, {"chief"}},
      {Method::kWorkerCreateSelection, {"chief"}},
      {Method::kWorkerCompute, {"chief"}},
      {Method::kWorkerDispose, {"chief"}},
      {Method::kWorkerGetExecutorStats, {"chief"}},
      {Method::kWorkerDisposePerWorker, {"chief"}},
      {Method::kCoordinatorGetStatus, {"*"}},
      {Method::kCoordinatorGetTaskStates, {"*"}},
  };
  return *expected;
}

bool admits(const std::vector<std::string>& allowed, const std::string& caller) {
  if (caller == "unauthenticated") return true;  // No role is enforced.
  for (const std::string& a : allowed) {
    if (a == "*" || a == caller) return true;
  }
  return false;
}

TEST(AuthorizationTest, EveryMethodForEveryCaller) {
  ASSERT_EQ(expected_methods().size(), static_cast<size_t>(kNumMethods));
  for (const auto& [method, allowed] : expected_methods()) {
    for (const Caller& caller : callers()) {
      const absl::Status s = authorize(caller.identity, method);
      SCOPED_TRACE(absl::StrCat(av(method_name(method)), " by ", caller.name));
      if (admits(allowed, caller.name)) {
        EXPECT_TRUE(s.ok()) << s;
      } else {
        EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
        // Names the caller, the method and who may call it.
        EXPECT_THAT(std::string(s.message()), HasSubstr(caller.identity.describe()));
        EXPECT_THAT(std::string(s.message()), HasSubstr(std::string(method_name(method))));
        EXPECT_THAT(std::string(s.message()), HasSubstr("only the chief"));
      }
    }
  }
}

TEST(AuthorizationTest, EveryVariableOpForEveryCaller) {
  const std::vector<Op::Kind> chief_only = {Op::CREATE,    Op::CREATE_IF_ABSENT, Op::DELETE,
                                            Op::SNAPSHOT,  Op::RESTORE,          Op::DE_CREATE,
                                            Op::DE_EXPORT, Op::DE_IMPORT};
  for (int k = Op::Kind_MIN; k <= Op::Kind_MAX; ++k) {
    if (!Op::Kind_IsValid(k)) continue;
    const auto kind = static_cast<Op::Kind>(k);
    const bool only_chief =
        std::find(chief_only.begin(), chief_only.end(), kind) != chief_only.end();
    for (const Caller& caller : callers()) {
      SCOPED_TRACE(absl::StrCat(Op::Kind_Name(kind), " by ", caller.name));
      const std::vector<std::string> allowed = only_chief
                                                   ? std::vector<std::string>{"chief"}
                                                   : std::vector<std::string>{"chief", "worker"};
      const absl::Status s = authorize_variable_op(caller.identity, kind, 4);
      if (admits(allowed, caller.name)) {
        EXPECT_TRUE(s.ok()) << s;
      } else {
        EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
        EXPECT_THAT(std::string(s.message()),
                    HasSubstr(absl::StrCat("op 4 of kind ", Op::Kind_Name(kind))));
        EXPECT_THAT(std::string(s.message()),
                    HasSubstr(only_chief ? "only the chief may" : "only the chief or worker may"));
      }
    }
  }
}

TEST(AuthorizationTest, MessagesNameTheRoles) {
  EXPECT_EQ(describe_roles(kChief), "the chief");
  EXPECT_EQ(describe_roles(kChief | kWorker), "the chief or worker");
  EXPECT_EQ(describe_roles(kChief | kWorker | kPs), "the chief, worker or ps");
  EXPECT_EQ(describe_roles(kAnyAuthenticated), "any authenticated task");
  const absl::Status s = authorize(identity_from_common_name("worker/2"), Method::kPsListVariables);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("worker/2 may not call /psflow.v1.VariableService/ListVariables: only "
                        "the chief may"));
}

TEST(AuthorizationTest, FunctionNamesAreListedToTheChiefAndLocalDevelopersOnly) {
  EXPECT_TRUE(may_list_function_names(identity_from_common_name("chief/0")));
  EXPECT_FALSE(may_list_function_names(identity_from_common_name("worker/0")));
  EXPECT_FALSE(may_list_function_names(identity_from_common_name("nonsense")));
  PeerIdentity local;
  local.peer = "ipv4:127.0.0.1:4000";
  EXPECT_TRUE(may_list_function_names(local));
  PeerIdentity remote;
  remote.peer = "ipv4:10.1.2.3:4000";
  EXPECT_FALSE(may_list_function_names(remote));
}

TEST(PeerIdentityTest, CommonNamesParseStrictly) {
  const PeerIdentity ok = identity_from_common_name("worker/12");
  EXPECT_TRUE(ok.authenticated);
  EXPECT_TRUE(ok.has_role());
  EXPECT_EQ(ok.job, "worker");
  EXPECT_EQ(ok.index, 12);
  EXPECT_EQ(ok.describe(), "worker/12");
  EXPECT_EQ(ok.owner(), "cn:worker/12");
  for (const char* bad : {"", "worker", "worker/", "/0", "worker/01", "worker/-1", "worker/+1",
                          "worker/1/2", "Worker/1", "worker /1", "worker/1 ", "worker/1000000",
                          "worker/99999999999", "chief/0\n", "wörker/0"}) {
    SCOPED_TRACE(bad);
    const PeerIdentity id = identity_from_common_name(bad);
    EXPECT_TRUE(id.authenticated);
    EXPECT_FALSE(id.has_role());
    EXPECT_EQ(role_of(id), 0u);
    EXPECT_THAT(id.describe(), HasSubstr("names no task"));
  }
  EXPECT_EQ(identity_from_common_name(std::string(70, 'a') + "/0").job, "");
  EXPECT_EQ(identity_from_common_name("ps/999999").index, 999999);
}

TEST(PeerIdentityTest, UnauthenticatedCallersAreScopedByHost) {
  PeerIdentity a;
  a.peer = "ipv4:127.0.0.1:5000";
  PeerIdentity b;
  b.peer = "ipv4:127.0.0.1:6000";
  PeerIdentity c;
  c.peer = "ipv4:10.0.0.2:5000";
  EXPECT_FALSE(a.authenticated);
  EXPECT_EQ(a.owner(), "host:ipv4:127.0.0.1");
  EXPECT_EQ(a.owner(), b.owner());
  EXPECT_NE(a.owner(), c.owner());
  PeerIdentity v6;
  v6.peer = "ipv6:[::1]:5000";
  EXPECT_EQ(v6.owner(), "host:ipv6:[::1]");
  // A certificate's task is never the same owner as an insecure peer.
  EXPECT_NE(identity_from_common_name("chief/0").owner(), a.owner());
  EXPECT_THAT(a.describe(), HasSubstr("unauthenticated"));
  EXPECT_TRUE(is_loopback_peer("ipv6:[::1]:1"));
  EXPECT_TRUE(is_loopback_peer("unix:/tmp/x"));
  EXPECT_FALSE(is_loopback_peer("ipv4:128.0.0.1:1"));
}

}  // namespace
}  // namespace psflow::internal

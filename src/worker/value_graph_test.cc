#include "worker/value_graph.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Result = ValueGraph::Result;

// The client that creates the values in these tests, and another one.
constexpr char kOwner[] = "cn:chief/0";
constexpr char kOther[] = "cn:worker/1";

// What compute() delivered, if anything yet.
struct Computed {
  std::optional<Result> result;
  ValueGraph::Waiter waiter() {
    return [this](const Result& r) { result = r; };
  }
};

Result compute_now(ValueGraph& graph, const std::string& id) {
  Computed c;
  absl::Status s = graph.compute(kOwner, id, c.waiter());
  if (!s.ok()) return s;
  if (!c.result.has_value()) return absl::InternalError("not known yet");
  return *c.result;
}

// (a, b) -> a + b for ints; "fail" fails with the argument as message.
Result runner_impl(const std::string& name, const Structure& args) {
  if (name == "add") {
    if (!args.is_sequence() || args.size() != 2) return absl::InvalidArgumentError("add: (a, b)");
    return Structure(args[0].int_value() + args[1].int_value());
  }
  if (name == "echo") return args;
  return absl::FailedPreconditionError(absl::StrCat("fail: ", args.debug_string()));
}

void run(ValueGraph& graph, const ValueGraph::PendingCall& call, int* runs = nullptr) {
  graph.run_call(call, [&](const std::string& name, const Structure& args, uint64_t,
                           const std::atomic<bool>&) {
    if (runs != nullptr) ++*runs;
    return runner_impl(name, args);
  });
}

class ValueGraphTest : public ::testing::Test {
 protected:
  ValueGraphTest()
      : graph_(ValueGraphOptions{.max_live_values = 1000,
                                 .max_struct_bytes = size_t{2} << 30,
                                 .id_prefix = "p-",
                                 .random_bytes = nullptr}) {}

  std::string value(Structure s) { return ok_value(graph_.create_value(kOwner, std::move(s))); }
  std::string function(const char* name) { return ok_value(graph_.create_function(kOwner, name)); }
  ValueGraph::PendingCall call(const std::string& fn, std::optional<std::string> arg) {
    return ok_value(graph_.create_call(
        kOwner, fn, arg.has_value() ? std::optional<std::string_view>(*arg) : std::nullopt));
  }

  ValueGraph graph_;
};

TEST_F(ValueGraphTest, ValuesComputeAtOnceAndIdsCarryThePrefix) {
  const Structure nested =
      Structure::tuple({1, 2.5, true, "s", Structure(), Structure::list({3}),
                        Structure::dict({{"k", Tensor::from_vector<float>({1, 2}, {2})}})});
  const std::string id = value(nested);
  EXPECT_EQ(id.rfind("p-", 0), 0u) << id;
  EXPECT_EQ(ok_value(compute_now(graph_, id)), nested);
  EXPECT_NE(value(1), id);  // Never reused.
}

// A chain of structs cannot nest deeper than kMaxStructDepth (encoding and
// freeing recurse per level), and structs sharing an element cannot
// describe an encoding beyond max_struct_bytes (each use is written out).
TEST_F(ValueGraphTest, StructsCannotNestTooDeepOrEncodeTooLarge) {
  std::string id = value(Structure(1));
  for (int level = 1; level <= ValueGraph::kMaxStructDepth; ++level) {
    id = ok_value(graph_.create_struct(kOwner, {{"", id}}, false));
  }
  absl::Status deeper = graph_.create_struct(kOwner, {{"", id}}, false).status();
  EXPECT_EQ(deeper.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(deeper.message()), ::testing::HasSubstr("65 levels deep"));

  // 1 MiB shared 2^k times: refused once the encoding passes 2 GiB.
  std::string doubled = value(Structure(Tensor(DType::kUInt8, {1 << 20})));
  int levels = 0;
  absl::StatusOr<std::string> next;
  while ((next = graph_.create_struct(kOwner, {{"", doubled}, {"", doubled}}, false)).ok()) {
    doubled = *next;
    ASSERT_LT(++levels, 20);
  }
  EXPECT_EQ(levels, 10);  // 2^11 MiB > 2 GiB
  EXPECT_THAT(std::string(next.status().message()), ::testing::HasSubstr("would encode to more"));
}

TEST_F(ValueGraphTest, CallRunsLaterWithItsArgumentOrNone) {
  const std::string add = function("add");
  ValueGraph::PendingCall sum = call(add, value(Structure::tuple({1, 2})));
  Computed waiting;
  ASSERT_TRUE(graph_.compute(kOwner, sum.id, waiting.waiter()).ok());
  EXPECT_FALSE(waiting.result.has_value());
  EXPECT_EQ(graph_.stats().pending_values, 1);
  run(graph_, sum);
  ASSERT_TRUE(waiting.result.has_value());
  EXPECT_EQ(ok_value(*waiting.result), Structure(3));
  EXPECT_EQ(graph_.stats().pending_values, 0);

  ValueGraph::PendingCall none = call(function("echo"), std::nullopt);
  run(graph_, none);
  EXPECT_EQ(ok_value(compute_now(graph_, none.id)), Structure());
}

TEST_F(ValueGraphTest, FunctionErrorsKeepTheirCodeAndNameTheCall) {
  ValueGraph::PendingCall failing = call(function("fail"), value("why"));
  run(graph_, failing);
  Result r = compute_now(graph_, failing.id);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("'why'"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(failing.id));
  // A call whose argument failed is not run and fails the same way.
  int runs = 0;
  ValueGraph::PendingCall downstream = call(function("echo"), failing.id);
  run(graph_, downstream, &runs);
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(compute_now(graph_, downstream.id).status(), r.status());
}

TEST_F(ValueGraphTest, StructsAndSelectionsOverPendingCallsResolveWithThem) {
  const std::string add = function("add");
  ValueGraph::PendingCall first = call(add, value(Structure::tuple({1, 2})));
  const std::string pair =
      ok_value(graph_.create_struct(kOwner, {{"", first.id}, {"", value(10)}}, /*list=*/false));
  // Out of range is known now: the struct's size is.
  absl::StatusOr<std::string> bad = graph_.create_selection(kOwner, pair, 2);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("out of range"));
  const std::string selected = ok_value(graph_.create_selection(kOwner, pair, 0));
  ValueGraph::PendingCall second = call(add, pair);  // Chained: (1 + 2) + 10.
  EXPECT_EQ(graph_.stats().pending_values, 4);
  run(graph_, first);
  run(graph_, second);
  EXPECT_EQ(ok_value(compute_now(graph_, selected)), Structure(3));
  EXPECT_EQ(ok_value(compute_now(graph_, pair)), Structure::tuple({3, 10}));
  EXPECT_EQ(ok_value(compute_now(graph_, second.id)), Structure(13));
  EXPECT_EQ(graph_.stats().pending_values, 0);
}

TEST_F(ValueGraphTest, SelectionOfACallResultIsCheckedWhenItIsKnown) {
  ValueGraph::PendingCall scalar = call(function("echo"), value(7));
  const std::string selection = ok_value(graph_.create_selection(kOwner, scalar.id, 0));
  run(graph_, scalar);
  Result r = compute_now(graph_, selection);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("it is an int, not a tuple"));
}

TEST_F(ValueGraphTest, SelectionRules) {
  const std::string tuple = value(Structure::tuple({"a", "b"}));
  EXPECT_EQ(ok_value(compute_now(graph_, ok_value(graph_.create_selection(kOwner, tuple, 1)))),
            Structure("b"));
  // Dicts select in key order.
  const std::string dict = value(Structure::dict({{"z", 1}, {"a", 2}}));
  EXPECT_EQ(ok_value(compute_now(graph_, ok_value(graph_.create_selection(kOwner, dict, 0)))),
            Structure(2));
  const ValueGraphStats before = graph_.stats();
  for (auto [source, index, needle] : std::vector<std::tuple<std::string, int64_t, std::string>>{
           {tuple, 2, "index 2 is out of range for value '" + tuple + "', which has 2 elements"},
           {tuple, -1, "negative"},
           {value(Tensor::scalar(1.0f)), 0, "it is a tensor, not a tuple, list or dict"},
           {function("echo"), 0, "is a reference to function 'echo'"}}) {
    absl::StatusOr<std::string> r = graph_.create_selection(kOwner, source, index);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(needle));
  }
  EXPECT_EQ(graph_.stats().values_created, before.values_created + 2);  // The two sources.
}

TEST_F(ValueGraphTest, StructNamesAllOrNoneAndUnique) {
  const std::string a = value(1), b = value(2);
  EXPECT_EQ(ok_value(compute_now(
                graph_, ok_value(graph_.create_struct(kOwner, {{"y", a}, {"x", b}}, false)))),
            Structure::dict({{"x", 2}, {"y", 1}}));
  const std::string named = ok_value(graph_.create_struct(kOwner, {{"y", a}, {"x", b}}, false));
  // Index 0 is the first key in order, as compute() shows the dict.
  EXPECT_EQ(ok_value(compute_now(graph_, ok_value(graph_.create_selection(kOwner, named, 0)))),
            Structure(2));
  EXPECT_EQ(ok_value(compute_now(graph_, ok_value(graph_.create_struct(kOwner, {{"", a}}, true)))),
            Structure::list({1}));
  EXPECT_EQ(ok_value(compute_now(graph_, ok_value(graph_.create_struct(kOwner, {}, false)))),
            Structure::tuple({}));
  for (auto [elements, list, needle] :
       std::vector<std::tuple<std::vector<ValueGraph::Element>, bool, std::string>>{
           {{{"x", a}, {"", b}}, false, "name every element"},
           {{{"x", a}, {"x", b}}, false, "both named 'x'"},
           {{{"x", a}}, true, "`list` is set"},
           {{{"", function("echo")}}, false, "cannot be a struct element"}}) {
    absl::StatusOr<std::string> r = graph_.create_struct(kOwner, elements, list);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(needle));
  }
}

TEST_F(ValueGraphTest, FunctionReferencesCanOnlyBeCalled) {
  const std::string fn = function("echo");
  absl::Status s =
      graph_.compute(kOwner, fn, [](const Result&) { ADD_FAILURE() << "not computable"; });
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("has no value to compute"));
  EXPECT_EQ(graph_.create_call(kOwner, fn, fn).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<ValueGraph::PendingCall> not_fn =
      graph_.create_call(kOwner, value(1), std::nullopt);
  EXPECT_EQ(not_fn.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(not_fn.status().message()), HasSubstr("not a function reference"));
}

TEST_F(ValueGraphTest, UnknownIdsAreNotFoundNamingThem) {
  absl::Status s = graph_.compute(kOwner, "p-999", [](const Result&) {});
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("'p-999'"));
  EXPECT_THAT(std::string(s.message()), Not(HasSubstr("restarted")));
  // An id of another incarnation says so; garbage is escaped and bounded.
  s = graph_.create_selection(kOwner, std::string("q-1\n") + std::string(500, 'x'), 0).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("q-1\\n"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("restarted"));
  EXPECT_LT(s.message().size(), 400u);
  EXPECT_EQ(graph_.create_call(kOwner, "p-1", std::nullopt).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(ValueGraphTest, DisposeReleasesKnownIdsAndNamesUnknownOnes) {
  const std::string a = value(1), b = value(2), c = value(3);
  EXPECT_TRUE(graph_.dispose(kOwner, {a}).ok());
  absl::Status s = graph_.dispose(kOwner, {b, a, c, "p-12345"});
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("'" + a + "', 'p-12345' (2 of the 4 ids)"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("other 2 were disposed"));
  EXPECT_EQ(graph_.stats().live_values, 0);
  EXPECT_EQ(graph_.stats().values_disposed, 3);
  EXPECT_EQ(graph_.compute(kOwner, b, [](const Result&) {}).code(), absl::StatusCode::kNotFound);
  // Listed twice: the second is already disposed.
  const std::string d = value(4);
  EXPECT_EQ(graph_.dispose(kOwner, {d, d}).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(graph_.stats().live_values, 0);
  EXPECT_TRUE(graph_.dispose(kOwner, {}).ok());
}

TEST_F(ValueGraphTest, ValuesBuiltFromDisposedOnesStillResolve) {
  ValueGraph::PendingCall pending = call(function("echo"), value(Structure::tuple({5, 6})));
  const std::string selection = ok_value(graph_.create_selection(kOwner, pending.id, 1));
  ASSERT_TRUE(graph_.dispose(kOwner, {pending.id}).ok());
  EXPECT_EQ(graph_.stats().pending_values, 2);
  run(graph_, pending);
  EXPECT_EQ(ok_value(compute_now(graph_, selection)), Structure(6));
  EXPECT_EQ(graph_.stats().pending_values, 0);
}

// The struct bound is a parameter, and by default well above 2 GiB: a
// streamed struct (stream_structs) may be larger than any message.
TEST(ValueGraphLimitsTest, StructBytesBoundIsAParameterAboveTwoGiBByDefault) {
  for (const size_t max_struct_bytes : {size_t{64} << 20, ValueGraphOptions().max_struct_bytes}) {
    ValueGraph graph(ValueGraphOptions{
        .max_struct_bytes = max_struct_bytes, .id_prefix = "p-", .random_bytes = nullptr});
    std::string doubled =
        ok_value(graph.create_value(kOwner, Structure(Tensor(DType::kUInt8, {1 << 20}))));
    int levels = 0;
    absl::StatusOr<std::string> next;
    while (levels < 12 &&
           (next = graph.create_struct(kOwner, {{"", doubled}, {"", doubled}}, false)).ok()) {
      doubled = *next;
      ++levels;
    }
    if (max_struct_bytes == (size_t{64} << 20)) {
      EXPECT_EQ(levels, 5);  // 2^6 MiB plus framing > 64 MiB
      EXPECT_THAT(std::string(next.status().message()), ::testing::HasSubstr("max_struct_bytes"));
    } else {
      EXPECT_EQ(levels, 12);  // 4 GiB
    }
  }
}

// The bytes of values clients created and did not dispose are bounded, and
// disposing frees budget.
TEST(ValueGraphLimitsTest, ValueBytesAreBoundedAndFreedByDisposal) {
  ValueGraph graph(
      ValueGraphOptions{.max_value_bytes = 3000, .id_prefix = "p-", .random_bytes = nullptr});
  const Structure kib(Tensor(DType::kUInt8, {1000}));
  const std::string first = ok_value(graph.create_value(kOwner, kib));
  ASSERT_TRUE(graph.create_value(kOwner, kib).ok());
  absl::StatusOr<std::string> third = graph.create_value(kOwner, kib);
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(third.status().message()),
              ::testing::HasSubstr("max_value_bytes = 3000"));
  EXPECT_GT(graph.stats().value_bytes, 2000);
  ASSERT_TRUE(graph.dispose(kOwner, {first}).ok());
  EXPECT_TRUE(graph.create_value(kOwner, kib).ok());
}

TEST(ValueGraphLimitsTest, LiveAndPendingValuesAreBounded) {
  ValueGraph graph(
      ValueGraphOptions{.max_live_values = 3, .id_prefix = "p-", .random_bytes = nullptr});
  const std::string fn = ok_value(graph.create_function(kOwner, "echo"));
  std::vector<ValueGraph::PendingCall> calls;
  calls.push_back(ok_value(graph.create_call(kOwner, fn, std::nullopt)));
  calls.push_back(ok_value(graph.create_call(kOwner, fn, std::nullopt)));
  absl::StatusOr<std::string> over = graph.create_value(kOwner, 1);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(over.status().message()), HasSubstr("max_live_values = 3"));
  EXPECT_EQ(graph.stats().values_created, 3);
  // Disposed calls still count while they are pending.
  ASSERT_TRUE(graph.dispose(kOwner, {calls[0].id, calls[1].id}).ok());
  calls.push_back(ok_value(graph.create_call(kOwner, fn, std::nullopt)));
  over = graph.create_value(kOwner, 1);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(over.status().message()), HasSubstr("still being computed"));
  for (const ValueGraph::PendingCall& c : calls) run(graph, c);
  EXPECT_TRUE(graph.create_value(kOwner, 1).ok());
}

TEST(ValueGraphConcurrencyTest, ACallWaitsForAnArgumentComputedOnAnotherThread) {
  ValueGraph graph(ValueGraphOptions{.id_prefix = "p-", .random_bytes = nullptr});
  const std::string add = ok_value(graph.create_function(kOwner, "add"));
  ValueGraph::PendingCall first = ok_value(graph.create_call(
      kOwner, add, ok_value(graph.create_value(kOwner, Structure::tuple({1, 1})))));
  const std::string pair =
      ok_value(graph.create_struct(kOwner, {{"", first.id}, {"", first.id}}, false));
  ValueGraph::PendingCall second = ok_value(graph.create_call(kOwner, add, pair));
  std::thread waiting([&] { run(graph, second); });  // Blocks until `first` is known.
  run(graph, first);
  waiting.join();
  EXPECT_EQ(ok_value(compute_now(graph, second.id)), Structure(4));
}

TEST(ValueGraphConcurrencyTest, CancelCallsReachesPendingCalls) {
  ValueGraph graph(ValueGraphOptions{.id_prefix = "p-", .random_bytes = nullptr});
  ValueGraph::PendingCall c = ok_value(
      graph.create_call(kOwner, ok_value(graph.create_function(kOwner, "x")), std::nullopt));
  graph.cancel_calls();
  bool saw_cancelled = false;
  graph.run_call(c,
                 [&](const std::string&, const Structure&, uint64_t number,
                     const std::atomic<bool>& cancelled) -> Result {
                   saw_cancelled = cancelled.load();
                   EXPECT_GT(number, 0u);
                   return absl::CancelledError("stopped");
                 });
  EXPECT_TRUE(saw_cancelled);
}

TEST(ValueGraphConcurrencyTest, LongChainsResolveWithoutRecursion) {
  ValueGraph graph(ValueGraphOptions{.id_prefix = "p-", .random_bytes = nullptr});
  ValueGraph::PendingCall root =
      ok_value(graph.create_call(kOwner, ok_value(graph.create_function(kOwner, "echo")),
                                 ok_value(graph.create_value(kOwner, Structure::tuple({42})))));
  std::string id = root.id;
  constexpr int kLinks = 20000;
  for (int i = 0; i < kLinks; ++i) {
    const std::string next = ok_value(graph.create_selection(kOwner, id, 0));
    if (i > 0) {
      ASSERT_TRUE(graph.dispose(kOwner, {id}).ok());
    }
    id = next;
    // Each selection of the previous: valid only for the first, the rest
    // fail at compute (42 is an int), through every link.
  }
  run(graph, root);
  Result r = compute_now(graph, id);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_EQ(graph.stats().pending_values, 0);
}

// Ids are the prefix and 128 bits of hex, never sequential.
TEST_F(ValueGraphTest, IdsAreRandomAndUnique) {
  absl::flat_hash_set<std::string> seen;
  std::vector<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = value(i);
    ids.push_back(id);
    ASSERT_TRUE(absl::StartsWith(id, "p-")) << id;
    EXPECT_EQ(id.size(), 2 + 2 * ValueGraph::kIdRandomBytes) << id;
    EXPECT_TRUE(seen.insert(id).second) << "repeated " << id;
  }
  // No two consecutive ids share their first 8 random hex digits (a
  // counter would): 999 pairs, each equal with chance 2^-32.
  int same_prefix = 0;
  for (size_t i = 1; i < ids.size(); ++i)
    same_prefix += ids[i].substr(0, 10) == ids[i - 1].substr(0, 10);
  EXPECT_EQ(same_prefix, 0);
}

// A repeated draw is drawn again, so ids stay unique per worker.
TEST(ValueGraphIdTest, RepeatedRandomDrawsAreDrawnAgain) {
  int calls = 0;
  ValueGraph graph(ValueGraphOptions{
      .id_prefix = "p-", .random_bytes = [&calls](unsigned char* out, size_t size) {
        // The first two draws are equal, then they differ.
        std::fill(out, out + size, static_cast<unsigned char>(calls < 2 ? 7 : calls));
        ++calls;
      }});
  const std::string a = ok_value(graph.create_value(kOwner, 1));
  const std::string b = ok_value(graph.create_value(kOwner, 2));
  EXPECT_NE(a, b);
  EXPECT_EQ(calls, 3);
}

// Another client's id is NOT_FOUND with the message of an id never
// created, wherever it is used, and nothing changes.
TEST_F(ValueGraphTest, AnotherOwnersIdsAreNotFoundAndUntouched) {
  const std::string mine = value(Structure::tuple({1, 2}));
  const std::string fn = function("echo");
  const std::string never = "p-" + std::string(2 * ValueGraph::kIdRandomBytes, '0');
  auto message_for = [&](const std::string& id) {
    return std::string(
        graph_
            .compute(kOther, id,
                     [](const Result&) { ADD_FAILURE() << "another owner's value was computed"; })
            .message());
  };
  // The same message as for an id never created, with the id swapped.
  std::string stolen = message_for(mine);
  std::string unknown = message_for(never);
  EXPECT_EQ(graph_.compute(kOther, mine, [](const Result&) {}).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(absl::StrReplaceAll(stolen, {{mine, "ID"}}),
            absl::StrReplaceAll(unknown, {{never, "ID"}}));
  EXPECT_EQ(graph_.create_selection(kOther, mine, 0).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(graph_.create_struct(kOther, {{"", mine}}, false).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(graph_.create_call(kOther, fn, std::nullopt).status().code(),
            absl::StatusCode::kNotFound);
  const std::string theirs = ok_value(graph_.create_function(kOther, "echo"));
  EXPECT_EQ(graph_.create_call(kOther, theirs, mine).status().code(), absl::StatusCode::kNotFound);
  const absl::Status disposed = graph_.dispose(kOther, {mine, fn});
  EXPECT_EQ(disposed.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(disposed.message()), HasSubstr("(2 of the 2 ids)"));
  // The owner still has both, intact; the other's function is its own.
  EXPECT_EQ(graph_.stats().live_values, 3);
  EXPECT_EQ(ok_value(compute_now(graph_, mine)), Structure::tuple({1, 2}));
  EXPECT_TRUE(graph_.create_call(kOwner, fn, mine).ok());
  EXPECT_EQ(graph_.create_call(kOwner, theirs, std::nullopt).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(graph_.dispose(kOther, {theirs}).ok());
  EXPECT_TRUE(graph_.dispose(kOwner, {mine, fn}).ok());
}

}  // namespace
}  // namespace psflow::internal

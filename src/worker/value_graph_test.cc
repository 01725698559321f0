#include "worker/value_graph.h"

#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Result = ValueGraph::Result;

// What compute() delivered, if anything yet.
struct Computed {
  std::optional<Result> result;
  ValueGraph::Waiter waiter() {
    return [this](const Result& r) { result = r; };
  }
};

Result compute_now(ValueGraph& graph, const std::string& id) {
  Computed c;
  absl::Status s = graph.compute(id, c.waiter());
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
      : graph_(ValueGraphOptions{
            .max_live_values = 1000, .max_struct_bytes = size_t{2} << 30, .id_prefix = "p-"}) {}

  std::string value(Structure s) { return ok_value(graph_.create_value(std::move(s))); }
  std::string function(const char* name) { return ok_value(graph_.create_function(name)); }
  ValueGraph::PendingCall call(const std::string& fn, std::optional<std::string> arg) {
    return ok_value(graph_.create_call(
        fn, arg.has_value() ? std::optional<std::string_view>(*arg) : std::nullopt));
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
    id = ok_value(graph_.create_struct({{"", id}}, false));
  }
  absl::Status deeper = graph_.create_struct({{"", id}}, false).status();
  EXPECT_EQ(deeper.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(deeper.message()), ::testing::HasSubstr("65 levels deep"));

  // 1 MiB shared 2^k times: refused once the encoding passes 2 GiB.
  std::string doubled = value(Structure(Tensor(DType::kUInt8, {1 << 20})));
  int levels = 0;
  absl::StatusOr<std::string> next;
  while ((next = graph_.create_struct({{"", doubled}, {"", doubled}}, false)).ok()) {
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
  ASSERT_TRUE(graph_.compute(sum.id, waiting.waiter()).ok());
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
      ok_value(graph_.create_struct({{"", first.id}, {"", value(10)}}, /*list=*/false));
  // Out of range is known now: the struct's size is.
  absl::StatusOr<std::string> bad = graph_.create_selection(pair, 2);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("out of range"));
  const std::string selected = ok_value(graph_.create_selection(pair, 0));
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
  const std::string selection = ok_value(graph_.create_selection(scalar.id, 0));
  run(graph_, scalar);
  Result r = compute_now(graph_, selection);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("it is an int, not a tuple"));
}

TEST_F(ValueGraphTest, SelectionRules) {
  const std::string tuple = value(Structure::tuple({"a", "b"}));
  EXPECT_EQ(ok_value(compute_now(graph_, ok_value(graph_.create_selection(tuple, 1)))),
            Structure("b"));
  // Dicts select in key order.
  const std::string dict = value(Structure::dict({{"z", 1}, {"a", 2}}));
  EXPECT_EQ(ok_value(compute_now(graph_, ok_value(graph_.create_selection(dict, 0)))),
            Structure(2));
  const ValueGraphStats before = graph_.stats();
  for (auto [source, index, needle] : std::vector<std::tuple<std::string, int64_t, std::string>>{
           {tuple, 2, "index 2 is out of range for value '" + tuple + "', which has 2 elements"},
           {tuple, -1, "negative"},
           {value(Tensor::scalar(1.0f)), 0, "it is a tensor, not a tuple, list or dict"},
           {function("echo"), 0, "is a reference to function 'echo'"}}) {
    absl::StatusOr<std::string> r = graph_.create_selection(source, index);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(needle));
  }
  EXPECT_EQ(graph_.stats().values_created, before.values_created + 2);  // The two sources.
}

TEST_F(ValueGraphTest, StructNamesAllOrNoneAndUnique) {
  const std::string a = value(1), b = value(2);
  EXPECT_EQ(
      ok_value(compute_now(graph_, ok_value(graph_.create_struct({{"y", a}, {"x", b}}, false)))),
      Structure::dict({{"x", 2}, {"y", 1}}));
  const std::string named = ok_value(graph_.create_struct({{"y", a}, {"x", b}}, false));
  // Index 0 is the first key in order, as compute() shows the dict.
  EXPECT_EQ(ok_value(compute_now(graph_, ok_value(graph_.create_selection(named, 0)))),
            Structure(2));
  EXPECT_EQ(ok_value(compute_now(graph_, ok_value(graph_.create_struct({{"", a}}, true)))),
            Structure::list({1}));
  EXPECT_EQ(ok_value(compute_now(graph_, ok_value(graph_.create_struct({}, false)))),
            Structure::tuple({}));
  for (auto [elements, list, needle] :
       std::vector<std::tuple<std::vector<ValueGraph::Element>, bool, std::string>>{
           {{{"x", a}, {"", b}}, false, "name every element"},
           {{{"x", a}, {"x", b}}, false, "both named 'x'"},
           {{{"x", a}}, true, "`list` is set"},
           {{{"", function("echo")}}, false, "cannot be a struct element"}}) {
    absl::StatusOr<std::string> r = graph_.create_struct(elements, list);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(needle));
  }
}

TEST_F(ValueGraphTest, FunctionReferencesCanOnlyBeCalled) {
  const std::string fn = function("echo");
  absl::Status s = graph_.compute(fn, [](const Result&) { ADD_FAILURE() << "not computable"; });
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("has no value to compute"));
  EXPECT_EQ(graph_.create_call(fn, fn).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<ValueGraph::PendingCall> not_fn = graph_.create_call(value(1), std::nullopt);
  EXPECT_EQ(not_fn.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(not_fn.status().message()), HasSubstr("not a function reference"));
}

TEST_F(ValueGraphTest, UnknownIdsAreNotFoundNamingThem) {
  absl::Status s = graph_.compute("p-999", [](const Result&) {});
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("'p-999'"));
  EXPECT_THAT(std::string(s.message()), Not(HasSubstr("restarted")));
  // An id of another incarnation says so; garbage is escaped and bounded.
  s = graph_.create_selection(std::string("q-1\n") + std::string(500, 'x'), 0).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("q-1\\n"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("restarted"));
  EXPECT_LT(s.message().size(), 400u);
  EXPECT_EQ(graph_.create_call("p-1", std::nullopt).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ValueGraphTest, DisposeReleasesKnownIdsAndNamesUnknownOnes) {
  const std::string a = value(1), b = value(2), c = value(3);
  EXPECT_TRUE(graph_.dispose({a}).ok());
  absl::Status s = graph_.dispose({b, a, c, "p-12345"});
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr("'" + a + "', 'p-12345' (2 of the 4 ids)"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("other 2 were disposed"));
  EXPECT_EQ(graph_.stats().live_values, 0);
  EXPECT_EQ(graph_.stats().values_disposed, 3);
  EXPECT_EQ(graph_.compute(b, [](const Result&) {}).code(), absl::StatusCode::kNotFound);
  // Listed twice: the second is already disposed.
  const std::string d = value(4);
  EXPECT_EQ(graph_.dispose({d, d}).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(graph_.stats().live_values, 0);
  EXPECT_TRUE(graph_.dispose({}).ok());
}

TEST_F(ValueGraphTest, ValuesBuiltFromDisposedOnesStillResolve) {
  ValueGraph::PendingCall pending = call(function("echo"), value(Structure::tuple({5, 6})));
  const std::string selection = ok_value(graph_.create_selection(pending.id, 1));
  ASSERT_TRUE(graph_.dispose({pending.id}).ok());
  EXPECT_EQ(graph_.stats().pending_values, 2);
  run(graph_, pending);
  EXPECT_EQ(ok_value(compute_now(graph_, selection)), Structure(6));
  EXPECT_EQ(graph_.stats().pending_values, 0);
}

// The struct bound is a parameter, and by default well above 2 GiB: a
// streamed struct (stream_structs) may be larger than any message.
TEST(ValueGraphLimitsTest, StructBytesBoundIsAParameterAboveTwoGiBByDefault) {
  for (const size_t max_struct_bytes : {size_t{64} << 20, ValueGraphOptions().max_struct_bytes}) {
    ValueGraph graph(ValueGraphOptions{.max_struct_bytes = max_struct_bytes, .id_prefix = "p-"});
    std::string doubled = ok_value(graph.create_value(Structure(Tensor(DType::kUInt8, {1 << 20}))));
    int levels = 0;
    absl::StatusOr<std::string> next;
    while (levels < 12 &&
           (next = graph.create_struct({{"", doubled}, {"", doubled}}, false)).ok()) {
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
  ValueGraph graph(ValueGraphOptions{.max_value_bytes = 3000, .id_prefix = "p-"});
  const Structure kib(Tensor(DType::kUInt8, {1000}));
  const std::string first = ok_value(graph.create_value(kib));
  ASSERT_TRUE(graph.create_value(kib).ok());
  absl::StatusOr<std::string> third = graph.create_value(kib);
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(third.status().message()),
              ::testing::HasSubstr("max_value_bytes = 3000"));
  EXPECT_GT(graph.stats().value_bytes, 2000);
  ASSERT_TRUE(graph.dispose({first}).ok());
  EXPECT_TRUE(graph.create_value(kib).ok());
}

TEST(ValueGraphLimitsTest, LiveAndPendingValuesAreBounded) {
  ValueGraph graph(ValueGraphOptions{.max_live_values = 3, .id_prefix = "p-"});
  const std::string fn = ok_value(graph.create_function("echo"));
  std::vector<ValueGraph::PendingCall> calls;
  calls.push_back(ok_value(graph.create_call(fn, std::nullopt)));
  calls.push_back(ok_value(graph.create_call(fn, std::nullopt)));
  absl::StatusOr<std::string> over = graph.create_value(1);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(over.status().message()), HasSubstr("max_live_values = 3"));
  EXPECT_EQ(graph.stats().values_created, 3);
  // Disposed calls still count while they are pending.
  ASSERT_TRUE(graph.dispose({calls[0].id, calls[1].id}).ok());
  calls.push_back(ok_value(graph.create_call(fn, std::nullopt)));
  over = graph.create_value(1);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(over.status().message()), HasSubstr("still being computed"));
  for (const ValueGraph::PendingCall& c : calls) run(graph, c);
  EXPECT_TRUE(graph.create_value(1).ok());
}

TEST(ValueGraphConcurrencyTest, ACallWaitsForAnArgumentComputedOnAnotherThread) {
  ValueGraph graph(ValueGraphOptions{.id_prefix = "p-"});
  const std::string add = ok_value(graph.create_function("add"));
  ValueGraph::PendingCall first =
      ok_value(graph.create_call(add, ok_value(graph.create_value(Structure::tuple({1, 1})))));
  const std::string pair = ok_value(graph.create_struct({{"", first.id}, {"", first.id}}, false));
  ValueGraph::PendingCall second = ok_value(graph.create_call(add, pair));
  std::thread waiting([&] { run(graph, second); });  // Blocks until `first` is known.
  run(graph, first);
  waiting.join();
  EXPECT_EQ(ok_value(compute_now(graph, second.id)), Structure(4));
}

TEST(ValueGraphConcurrencyTest, CancelCallsReachesPendingCalls) {
  ValueGraph graph(ValueGraphOptions{.id_prefix = "p-"});
  ValueGraph::PendingCall c =
      ok_value(graph.create_call(ok_value(graph.create_function("x")), std::nullopt));
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
  ValueGraph graph(ValueGraphOptions{.id_prefix = "p-"});
  ValueGraph::PendingCall root =
      ok_value(graph.create_call(ok_value(graph.create_function("echo")),
                                 ok_value(graph.create_value(Structure::tuple({42})))));
  std::string id = root.id;
  constexpr int kLinks = 20000;
  for (int i = 0; i < kLinks; ++i) {
    const std::string next = ok_value(graph.create_selection(id, 0));
    if (i > 0) {
      ASSERT_TRUE(graph.dispose({id}).ok());
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

}  // namespace
}  // namespace psflow::internal

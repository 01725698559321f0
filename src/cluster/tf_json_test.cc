#include "cluster/tf_json.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

std::string message_of(const absl::Status& status) { return std::string(status.message()); }

TEST(TfJsonTest, ParsesValidJsonInDocumentOrder) {
  absl::StatusOr<TfJson> json = parse_tf_json(R"({"b": 1, "a": [true, null]})", "X", "fix");
  ASSERT_TRUE(json.ok()) << json.status();
  ASSERT_TRUE(json->is_object());
  EXPECT_EQ(json->begin().key(), "b");  // ordered, as Python's dict
  EXPECT_EQ(py_repr(*json), "{'b': 1, 'a': [True, None]}");
}

TEST(TfJsonTest, DuplicateKeysKeepTheLastValueAsPython) {
  absl::StatusOr<TfJson> json = parse_tf_json(R"({"a": 1, "a": 2})", "X", "fix");
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(json->at("a"), 2);
}

TEST(TfJsonTest, MalformedJsonNamesTheByteASnippetAndTheFix) {
  // The bare word ps0 starts at byte 13 (1-based); the parser stops there.
  absl::StatusOr<TfJson> json =
      parse_tf_json(R"({"ps": ["a", ps0:2222]})", "TF_CONFIG", "set TF_CONFIG to {...}");
  ASSERT_EQ(json.status().code(), absl::StatusCode::kInvalidArgument);
  const std::string message = message_of(json.status());
  EXPECT_THAT(message, HasSubstr("TF_CONFIG is not valid JSON at byte 14 near "));
  EXPECT_THAT(message, HasSubstr(R"(near '{"ps": ["a", ps0:2222]}')"));
  EXPECT_THAT(message, HasSubstr("line 1, column 14"));
  EXPECT_THAT(message, HasSubstr("; set TF_CONFIG to {...}"));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("json.exception")));
}

TEST(TfJsonTest, MalformedJsonSnippetIsAWindowAroundTheError) {
  const std::string text = std::string(50, ' ') + "{\"a\": x}" + std::string(50, ' ');
  absl::StatusOr<TfJson> json = parse_tf_json(text, "TF_CONFIG", "fix");
  ASSERT_FALSE(json.ok());
  // The 'x' is byte 57; the window is the 20 bytes before it and 20 from it.
  const std::string window =
      "..." + std::string(14, ' ') + "{\"a\": x}" + std::string(18, ' ') + "...";
  EXPECT_THAT(message_of(json.status()), HasSubstr("at byte 57 near '" + window + "'"));
}

TEST(TfJsonTest, MalformedJsonAtEndOfInput) {
  absl::StatusOr<TfJson> json = parse_tf_json("{\"a\": 1", "TF_CONFIG", "fix");
  ASSERT_FALSE(json.ok());
  EXPECT_THAT(message_of(json.status()), HasSubstr("at byte 8 near '{\"a\": 1' (end of input): "));
}

TEST(TfJsonTest, EmptyTextIsMalformed) {
  absl::StatusOr<TfJson> json = parse_tf_json("", "TF_CONFIG", "fix");
  ASSERT_EQ(json.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(message_of(json.status()), HasSubstr("at byte 1 near '' (end of input)"));
}

TEST(TfJsonTest, SnippetEscapesControlCharacters) {
  absl::StatusOr<TfJson> json = parse_tf_json("{\n\t\"a\" 1}", "TF_CONFIG", "fix");
  ASSERT_FALSE(json.ok());
  EXPECT_THAT(message_of(json.status()), HasSubstr(R"(near '{\n\t"a" 1}')"));
}

TEST(TfJsonTest, TrailingGarbageIsMalformed) {
  absl::StatusOr<TfJson> json = parse_tf_json("{} x", "TF_CONFIG", "fix");
  ASSERT_FALSE(json.ok());
  EXPECT_THAT(message_of(json.status()), HasSubstr("at byte 4"));
}

TEST(TfJsonTest, ReprMatchesPython) {
  EXPECT_EQ(py_repr(TfJson("ps")), "'ps'");
  EXPECT_EQ(py_repr(TfJson("it's")), "\"it's\"");
  EXPECT_EQ(py_repr(TfJson("a'b\"c")), R"('a\'b"c')");
  EXPECT_EQ(py_repr(TfJson("a\\b\n")), R"('a\\b\n')");
  EXPECT_EQ(py_repr(TfJson(nullptr)), "None");
  EXPECT_EQ(py_repr(TfJson(true)), "True");
  EXPECT_EQ(py_repr(TfJson(false)), "False");
  EXPECT_EQ(py_repr(TfJson(-3)), "-3");
  EXPECT_EQ(py_repr(TfJson(1.5)), "1.5");
  EXPECT_EQ(py_repr(TfJson(100.0)), "100.0");
  EXPECT_EQ(py_repr(TfJson::parse(R"([1, "a", {"k": [null]}])")), "[1, 'a', {'k': [None]}]");
  EXPECT_EQ(py_repr_string("job"), "'job'");
}

TEST(TfJsonTest, ReprAbbreviatesLongValues) {
  const std::string repr = py_repr_abbrev(TfJson(std::string(200, 'x')), 10);
  EXPECT_EQ(repr, "'xxxxxxxxx...");
}

TEST(TfJsonTest, ReprOfDeepNestingIsBounded) {
  std::string text(1000, '[');
  text += std::string(1000, ']');
  absl::StatusOr<TfJson> json = parse_tf_json(text, "X", "fix");
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_THAT(py_repr(*json), HasSubstr("[...]"));
}

TEST(TfJsonTest, StrMatchesPython) {
  EXPECT_EQ(py_str(TfJson("worker")), "worker");
  EXPECT_EQ(py_str(TfJson(123456)), "123456");
  EXPECT_EQ(py_str(TfJson(true)), "True");
  EXPECT_EQ(py_str(TfJson(nullptr)), "None");
  EXPECT_EQ(py_str(TfJson(2.0)), "2.0");
}

TEST(TfJsonTest, IntFromNumbersMatchesPython) {
  EXPECT_EQ(py_int(TfJson(7)).value(), 7);
  EXPECT_EQ(py_int(TfJson(-7)).value(), -7);
  EXPECT_EQ(py_int(TfJson(7u)).value(), 7);
  EXPECT_EQ(py_int(TfJson(1.9)).value(), 1);    // truncates
  EXPECT_EQ(py_int(TfJson(-1.9)).value(), -1);  // toward zero
  EXPECT_EQ(py_int(TfJson(true)).value(), 1);
  EXPECT_EQ(py_int(TfJson(false)).value(), 0);
  EXPECT_EQ(py_int(TfJson(2147483647)).value(), 2147483647);
  EXPECT_EQ(py_int(TfJson(-2147483648LL)).value(), -2147483647 - 1);
  EXPECT_EQ(py_int(TfJson(2147483648LL)).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(py_int(TfJson(18446744073709551615ULL)).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(py_int(TfJson(1e10)).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(TfJsonTest, IntFromStringsMatchesPython) {
  EXPECT_EQ(py_int(TfJson("1")).value(), 1);
  EXPECT_EQ(py_int(TfJson(" 12\n")).value(), 12);
  EXPECT_EQ(py_int(TfJson("+3")).value(), 3);
  EXPECT_EQ(py_int(TfJson("-3")).value(), -3);
  EXPECT_EQ(py_int(TfJson("007")).value(), 7);
  EXPECT_EQ(py_int(TfJson("1_000")).value(), 1000);
  EXPECT_EQ(py_int(TfJson("-2147483648")).value(), -2147483647 - 1);
  EXPECT_EQ(py_int(TfJson("2147483648")).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(py_int(TfJson("99999999999999999999999")).status().code(),
            absl::StatusCode::kOutOfRange);
  for (const char* bad : {"abc", "", " ", "1.5", "1e3", "0x10", "_1", "1_", "1__0", "+", "1 2",
                          "--1", "99999999999999999999x"}) {
    absl::StatusOr<int> value = py_int(TfJson(bad));
    EXPECT_EQ(value.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(message_of(py_int(TfJson("abc")).status()),
            "invalid literal for int() with base 10: 'abc'");
}

TEST(TfJsonTest, IntFromOtherTypesMatchesPython) {
  EXPECT_EQ(message_of(py_int(TfJson(nullptr)).status()),
            "int() argument must be a string, a bytes-like object or a real number, not "
            "'NoneType'");
  EXPECT_THAT(message_of(py_int(TfJson::array()).status()), HasSubstr("not 'list'"));
  EXPECT_THAT(message_of(py_int(TfJson::object()).status()), HasSubstr("not 'dict'"));
}

}  // namespace
}  // namespace psflow::internal

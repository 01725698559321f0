#include "psflow/structure.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tensor/format.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

std::string message_of(const absl::Status& status) { return std::string(status.message()); }

// The docstring example: (2, (3, 4), [5], {'v': 1}).
Structure example() {
  return Structure::tuple(
      {2, Structure::tuple({3, 4}), Structure::list({5}), Structure::dict({{"v", 1}})});
}

TEST(StructureTest, PrintsLikePython) {
  EXPECT_EQ(example().debug_string(), "(2, (3, 4), [5], {'v': 1})");
  std::ostringstream os;
  os << example();
  EXPECT_EQ(os.str(), "(2, (3, 4), [5], {'v': 1})");
}

TEST(StructureTest, PrintsEdgeCasesLikePython) {
  EXPECT_EQ(Structure().debug_string(), "None");
  EXPECT_EQ(Structure::tuple({}).debug_string(), "()");
  EXPECT_EQ(Structure::tuple({1}).debug_string(), "(1,)");
  EXPECT_EQ(Structure::list({}).debug_string(), "[]");
  EXPECT_EQ(Structure::list({1}).debug_string(), "[1]");
  EXPECT_EQ(Structure::dict({}).debug_string(), "{}");
  EXPECT_EQ(Structure(true).debug_string(), "True");
  EXPECT_EQ(Structure(false).debug_string(), "False");
  EXPECT_EQ(Structure(-7).debug_string(), "-7");
  EXPECT_EQ(Structure(1.0).debug_string(), "1.0");
  EXPECT_EQ(Structure("it").debug_string(), "'it'");
  EXPECT_EQ(Structure("it's").debug_string(), "\"it's\"");
  EXPECT_EQ(Structure("a'b\"c").debug_string(), "'a\\'b\"c'");
  EXPECT_EQ(Structure("tab\there\n\\").debug_string(), "'tab\\there\\n\\\\'");
  EXPECT_EQ(Structure(std::string("\x01\x7f", 2)).debug_string(), "'\\x01\\x7f'");
  EXPECT_EQ(
      Structure::dict({{"b", Structure()}, {"a", Structure::list({1.5, "x"})}}).debug_string(),
      "{'a': [1.5, 'x'], 'b': None}");
  EXPECT_EQ(Structure::tuple({Tensor::from_vector<float>({1, 2})}).debug_string(),
            "(Tensor<float32, [2]> [1, 2],)");
}

TEST(StructureTest, FloatsPrintLikePythonRepr) {
  struct Case {
    double value;
    const char* repr;
  };
  const Case cases[] = {
      {1.0, "1.0"},
      {0.1, "0.1"},
      {2.5, "2.5"},
      {100.0, "100.0"},
      {-0.0, "-0.0"},
      {0.0001, "0.0001"},
      {0.00001, "1e-05"},
      {1.0 / 3, "0.3333333333333333"},
      {123.456, "123.456"},
      {1e15, "1000000000000000.0"},
      {1e16, "1e+16"},
      {1.5e16, "1.5e+16"},
      {1.5e300, "1.5e+300"},
      {5e-324, "5e-324"},
      {-2.5e-10, "-2.5e-10"},
      {12345678901234567.0, "1.2345678901234568e+16"},
      {std::numeric_limits<double>::infinity(), "inf"},
      {-std::numeric_limits<double>::infinity(), "-inf"},
      {std::nan(""), "nan"},
  };
  for (const Case& c : cases) {
    std::string out;
    internal::append_python_float(&out, c.value);
    EXPECT_EQ(out, c.repr);
  }
}

TEST(StructureTest, KindsAndAccessors) {
  EXPECT_EQ(Structure().kind(), Structure::Kind::kNone);
  EXPECT_TRUE(Structure::none().is_none());
  EXPECT_EQ(Structure(Tensor::scalar(1.0f)).kind(), Structure::Kind::kTensor);
  EXPECT_EQ(Structure(3).kind(), Structure::Kind::kInt);
  EXPECT_EQ(Structure(int64_t{1} << 40).int_value(), int64_t{1} << 40);
  EXPECT_EQ(Structure(2.5).float_value(), 2.5);
  EXPECT_EQ(Structure(true).bool_value(), true);
  EXPECT_EQ(Structure("s").string_value(), "s");
  EXPECT_EQ(Structure(std::string("t")).kind(), Structure::Kind::kString);
  EXPECT_EQ(Structure::tuple({}).kind(), Structure::Kind::kTuple);
  EXPECT_EQ(Structure::list({}).kind(), Structure::Kind::kList);
  EXPECT_EQ(Structure::dict({}).kind(), Structure::Kind::kDict);

  const Structure s = example();
  EXPECT_TRUE(s.is_sequence());
  EXPECT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].int_value(), 2);
  EXPECT_EQ(s[1][1].int_value(), 4);
  EXPECT_EQ(s[2].kind(), Structure::Kind::kList);
  EXPECT_TRUE(s[3].is_dict());
  EXPECT_EQ(s[3]["v"].int_value(), 1);
  EXPECT_EQ(s[3].size(), 1u);
  EXPECT_EQ(Structure(5).size(), 0u);
  EXPECT_EQ(Structure(Tensor::scalar(2.0)).tensor().scalar_value<double>(), 2.0);
}

TEST(StructureDeathTest, WrongKindAborts) {
  EXPECT_DEATH((void)Structure(1).float_value(), "float_value\\(\\) of a int");
  EXPECT_DEATH((void)Structure(1).items(), "items\\(\\) of a int");
  EXPECT_DEATH((void)example()[4], "out of range");
  EXPECT_DEATH((void)example()[3]["w"], "no key 'w'");
}

TEST(StructureTest, FlattenInNestOrder) {
  const Structure s =
      Structure::tuple({1, Structure::dict({{"b", 3}, {"a", Structure::list({2, Structure()})}}),
                        Structure::tuple({}), "x"});
  const std::vector<Structure> leaves = s.flatten();
  ASSERT_EQ(leaves.size(), 5u);
  EXPECT_EQ(leaves[0], Structure(1));
  EXPECT_EQ(leaves[1], Structure(2));  // 'a' sorts before 'b'.
  EXPECT_TRUE(leaves[2].is_none());
  EXPECT_EQ(leaves[3], Structure(3));
  EXPECT_EQ(leaves[4], Structure("x"));
  EXPECT_EQ(Structure(7).flatten().size(), 1u);
}

TEST(StructureTest, Depth) {
  EXPECT_EQ(Structure(1).depth(), 0);
  EXPECT_EQ(Structure::tuple({}).depth(), 1);
  EXPECT_EQ(example().depth(), 2);
  Structure deep = 1;
  for (int i = 0; i < 10; ++i) deep = Structure::list({deep});
  EXPECT_EQ(deep.depth(), 10);
}

TEST(StructureTest, Equality) {
  EXPECT_EQ(example(), example());
  EXPECT_FALSE(Structure::tuple({1}) == Structure::list({1}));
  EXPECT_FALSE(Structure(1) == Structure(1.0));
  EXPECT_FALSE(Structure(1) == Structure(true));
  EXPECT_FALSE(Structure::dict({{"a", 1}}) == Structure::dict({{"b", 1}}));
  EXPECT_FALSE(Structure::tuple({1, 2}) == Structure::tuple({1}));
  EXPECT_EQ(Structure(Tensor::from_vector<int32_t>({1})),
            Structure(Tensor::from_vector<int32_t>({1})));
  EXPECT_FALSE(Structure(Tensor::from_vector<int32_t>({1})) ==
               Structure(Tensor::from_vector<int32_t>({2})));
  EXPECT_FALSE(Structure(std::nan("")) == Structure(std::nan("")));
  EXPECT_EQ(Structure(), Structure::none());
}

TEST(StructureTest, AllCloseNamesThePath) {
  Structure a = Structure::tuple({1, Structure::tuple({3, 4})});
  Structure b = Structure::tuple({1, Structure::tuple({4, 4})});
  EXPECT_EQ(message_of(all_close(a, b)), "[1][0]: 3 vs 4");
  EXPECT_TRUE(all_close(a, a).ok());

  Structure c = Structure::dict({{"v", Structure::list({1.0, 2.0})}});
  Structure d = Structure::dict({{"v", Structure::list({1.0, 2.5})}});
  EXPECT_EQ(message_of(all_close(c, d)), "['v'][1]: 2.0 vs 2.5");
  EXPECT_TRUE(all_close(c, Structure::dict({{"v", Structure::list({1.0, 2.0 + 1e-9})}})).ok());
  EXPECT_EQ(message_of(all_close(Structure::tuple({1}), Structure::list({1}))), "tuple vs list");
  EXPECT_EQ(message_of(all_close(Structure::tuple({1}), Structure::tuple({1, 2}))),
            "tuple of 1 items vs 2");
  EXPECT_EQ(message_of(all_close(Structure::dict({{"a", 1}}), Structure::dict({{"b", 1}}))),
            "key 'a' vs 'b'");
  EXPECT_EQ(
      message_of(all_close(Structure::dict({{"a", 1}}), Structure::dict({{"a", 1}, {"b", 2}}))),
      "key (none) vs 'b'");
  Structure t1 = Structure::list({Tensor::from_vector<float>({1, 2})});
  Structure t2 = Structure::list({Tensor::from_vector<float>({1, 3})});
  EXPECT_THAT(message_of(all_close(t1, t2)), HasSubstr("[0]: at index [1]: 2 vs 3"));
  EXPECT_TRUE(all_close(t1, t2, 0, 1.0).ok());
  EXPECT_EQ(message_of(all_close(Structure(1), Structure(2))), "1 vs 2");
  EXPECT_EQ(message_of(all_close(Structure("a"), Structure(true))), "string vs bool");
}

}  // namespace
}  // namespace psflow::internal

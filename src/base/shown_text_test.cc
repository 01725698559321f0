#include "base/shown_text.h"

#include <string>

#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

TEST(ShownTextTest, KeepsValidUtf8AndEscapesTheRest) {
  EXPECT_EQ(shown_text("dense/kernel", 100), "dense/kernel");
  EXPECT_EQ(shown_text("gr\xc3\xbc\xc3\x9f \xe2\x82\xac \xf0\x9f\x98\x80", 100),
            "gr\xc3\xbc\xc3\x9f \xe2\x82\xac \xf0\x9f\x98\x80");
  // A stray continuation byte, an overlong '/', a surrogate, a truncated
  // sequence.
  EXPECT_EQ(shown_text("a\x80"
                       "b\xc0\xaf"
                       "c\xed\xa0\x80"
                       "d\xe2\x82",
                       100),
            "a\\x80b\\xc0\\xafc\\xed\\xa0\\x80d\\xe2\\x82");
  EXPECT_EQ(shown_text("line\nbreak\t\x1b[31m", 100), "line\\nbreak\\t\\x1b[31m");
  EXPECT_EQ(shown_text("line\nbreak", 100, /*escape_controls=*/false), "line\nbreak");
}

TEST(ShownTextTest, CutsLongTextAndSaysHowLongItWas) {
  const std::string name(1 << 20, 'n');
  const std::string shown = shown_name(name);
  EXPECT_EQ(shown, std::string(kMaxShownNameBytes, 'n') + "... (1048576 bytes)");
  // Escapes count towards the bound.
  const std::string bad(1000, '\xff');
  EXPECT_LE(shown_text(bad, 16).size(), 16u + 4u + 20u);
  EXPECT_EQ(shown_text(std::string(16, 'x'), 16), std::string(16, 'x'));
}

}  // namespace
}  // namespace psflow::internal

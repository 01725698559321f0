#include "data/criteo_reader.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

// A line with every field present: label, I1..I13 = 1..13, C1..C26 = the
// hex of 0x100 + feature index.
std::vector<std::string> full_fields(std::string label = "1") {
  std::vector<std::string> f = {label};
  for (int i = 1; i <= 13; ++i) f.push_back(std::to_string(i));
  for (int i = 0; i < 26; ++i) f.push_back(absl::StrCat(absl::Hex(0x100 + i)));
  return f;
}

std::string line(const std::vector<std::string>& fields) { return absl::StrJoin(fields, "\t"); }

absl::StatusOr<CriteoData> parse(std::string_view text,
                                 CriteoBadLines policy = CriteoBadLines::kError) {
  CriteoData data;
  CriteoReadOptions o;
  o.bad_lines = policy;
  absl::Status s = parse_criteo_text(text, "day_0.tsv", 1, o, data);
  if (!s.ok()) return s;
  return data;
}

TEST(CriteoReaderTest, ReadsAFullLine) {
  const CriteoData d = parse(line(full_fields()) + "\n").value();
  ASSERT_EQ(d.rows(), 1);
  EXPECT_EQ(d.labels[0], 1.0F);
  for (int i = 0; i < 13; ++i) EXPECT_EQ(d.dense[i], i + 1);
  for (int i = 0; i < 26; ++i) EXPECT_EQ(d.keys[i], criteo_key(i, 0x100 + i));
}

TEST(CriteoReaderTest, MissingValuesReadAsZeroAndPerFeatureMissingKeys) {
  std::vector<std::string> f = full_fields("0");
  f[1] = "";   // I1
  f[14] = "";  // C1
  f[39] = "";  // C26: the line ends with a tab
  const CriteoData d = parse(line(f)).value();
  ASSERT_EQ(d.rows(), 1);
  EXPECT_EQ(d.labels[0], 0.0F);
  EXPECT_EQ(d.dense[0], 0);
  EXPECT_EQ(d.keys[0], criteo_missing_key(0));
  EXPECT_EQ(d.keys[25], criteo_missing_key(25));
  EXPECT_NE(criteo_missing_key(0), criteo_missing_key(25));
}

TEST(CriteoReaderTest, AllFeaturesMissing) {
  std::vector<std::string> f(40, "");
  f[0] = "1";
  const CriteoData d = parse(line(f) + "\n").value();
  ASSERT_EQ(d.rows(), 1);
  for (int i = 0; i < 13; ++i) EXPECT_EQ(d.dense[i], 0);
  for (int i = 0; i < 26; ++i) EXPECT_EQ(d.keys[i], criteo_missing_key(i));
}

TEST(CriteoReaderTest, NegativeAndExtremeIntegers) {
  std::vector<std::string> f = full_fields();
  f[2] = "-3";
  f[3] = "9223372036854775807";
  f[4] = "-9223372036854775808";
  const CriteoData d = parse(line(f)).value();
  EXPECT_EQ(d.dense[1], -3);
  EXPECT_EQ(d.dense[2], INT64_MAX);
  EXPECT_EQ(d.dense[3], INT64_MIN);
}

TEST(CriteoReaderTest, EqualHexInDifferentColumnsAreDifferentKeys) {
  std::vector<std::string> f = full_fields();
  for (int i = 14; i < 40; ++i) f[i] = "68fd1e64";
  const CriteoData d = parse(line(f)).value();
  for (int i = 1; i < 26; ++i) EXPECT_NE(d.keys[i], d.keys[0]) << i;
  EXPECT_EQ(d.keys[0], criteo_key(0, 0x68fd1e64));
  // Upper and lower case hex are the same value.
  f[14] = "68FD1E64";
  EXPECT_EQ(parse(line(f)).value().keys[0], d.keys[0]);
  // And a 64-bit value fits.
  f[14] = "ffffffffffffffff";
  EXPECT_EQ(parse(line(f)).value().keys[0], criteo_key(0, ~uint64_t{0}));
}

TEST(CriteoReaderTest, CrlfTrailingTabEmptyLinesAndNoFinalNewline) {
  const std::string a = line(full_fields("1"));
  const std::string b = line(full_fields("0"));
  const CriteoData d = parse(a + "\r\n\n" + b + "\t\r\n\r\n" + a).value();
  ASSERT_EQ(d.rows(), 3);
  EXPECT_EQ(d.labels[0], 1.0F);
  EXPECT_EQ(d.labels[1], 0.0F);
  EXPECT_EQ(d.labels[2], 1.0F);
  EXPECT_EQ(d.dense[13 * 2 + 12], 13);  // "13" is not "13\r"
  EXPECT_EQ(d.keys[26 * 1 + 25], criteo_key(25, 0x100 + 25));
}

TEST(CriteoReaderTest, EmptyText) {
  EXPECT_EQ(parse("").value().rows(), 0);
  EXPECT_EQ(parse("\n\r\n").value().rows(), 0);
}

TEST(CriteoReaderTest, BadLinesNameFileLineAndField) {
  const std::string good = line(full_fields()) + "\n";
  struct Case {
    int field;  // index in full_fields()
    std::string value;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {0, "2", "day_0.tsv:2: field 1 (label): '2' is not a label"},
      {0, "", "field 1 (label): '' is not a label"},
      {1, "1.5", "field 2 (I1): '1.5' is not a decimal integer"},
      {2, "-", "field 3 (I2): '-' is not a decimal integer"},
      {3, "+4", "field 4 (I3): '+4' is not a decimal integer"},
      {4, "9223372036854775808", "field 5 (I4): '9223372036854775808' is out of the int64 range"},
      {5, "123456789012345678901", "field 6 (I5): '123456789012345678901' is too long"},
      {6, " 7", "field 7 (I6): ' 7' is not a decimal integer"},
      {14, "68fd1e6g", "field 15 (C1): '68fd1e6g' is not a hexadecimal value"},
      {39, "0x1f", "field 40 (C26): '0x1f' is not a hexadecimal value"},
      {20, "1234567890abcdef0", "field 21 (C7): '1234567890abcdef0' is longer than 16 hex"},
      {20, std::string(5000, 'a'),
       "field 21 (C7): 'aaaaaaaaaaaaaaaaaaaaaaaa... (5000 characters)'"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> f = full_fields();
    f[c.field] = c.value;
    absl::StatusOr<CriteoData> d = parse(good + line(f) + "\n" + good);
    ASSERT_FALSE(d.ok()) << c.expected;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(d.status().message(), HasSubstr(c.expected));
    EXPECT_THAT(d.status().message(), HasSubstr("day_0.tsv:2:"));
  }
}

TEST(CriteoReaderTest, TooFewOrTooManyFields) {
  std::vector<std::string> f = full_fields();
  f.pop_back();
  absl::StatusOr<CriteoData> d = parse(line(f));
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr("day_0.tsv:1: 39 tab-separated fields"));
  f = full_fields();
  f.push_back("7");
  d = parse(line(f));
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr("41 tab-separated fields"));
  // Two trailing tabs are one field too many.
  d = parse(line(full_fields()) + "\t\t");
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr("42 tab-separated fields"));
  // A lone label.
  d = parse("1\n");
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(d.status().message(), HasSubstr("1 tab-separated fields"));
}

TEST(CriteoReaderTest, SkipPolicyCountsBadLinesAndKeepsTheFirstError) {
  const std::string good = line(full_fields()) + "\n";
  std::vector<std::string> f = full_fields();
  f[16] = "xyz";
  const CriteoData d =
      parse(good + line(f) + "\n" + "1\t2\n" + good, CriteoBadLines::kSkip).value();
  EXPECT_EQ(d.rows(), 2);
  EXPECT_EQ(d.skipped_lines, 2);
  EXPECT_THAT(d.first_skipped, HasSubstr("day_0.tsv:2: field 17 (C3)"));
  EXPECT_EQ(d.dense.size(), 2u * 13);
  EXPECT_EQ(d.keys.size(), 2u * 26);
}

TEST(CriteoReaderTest, ReadsFilesInChunksWithLineNumbers) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("criteo-reader-" + std::to_string(::getpid())))
          .string();
  std::filesystem::create_directories(dir);
  // More than one 1 MiB read chunk, with a bad line at the end.
  std::string text;
  const std::string good = line(full_fields()) + "\n";
  const int64_t lines = (2 << 20) / static_cast<int64_t>(good.size()) + 10;
  for (int64_t i = 0; i < lines; ++i) text += good;
  {
    std::ofstream(dir + "/a.tsv") << text;
    std::ofstream(dir + "/b.txt") << "";  // an empty file
    std::ofstream(dir + "/c.tsv") << text << "1\tx";
    std::ofstream(dir + "/ignored.json") << "{}";
  }
  CriteoData d;
  ASSERT_TRUE(read_criteo_file(dir + "/a.tsv", {}, d).ok());
  EXPECT_EQ(d.rows(), lines);
  ASSERT_TRUE(read_criteo_file(dir + "/b.txt", {}, d).ok());
  EXPECT_EQ(d.rows(), lines);
  absl::Status bad = read_criteo_file(dir + "/c.tsv", {}, d);
  EXPECT_THAT(bad.message(), HasSubstr(absl::StrCat(dir, "/c.tsv:", lines + 1, ":")));
  EXPECT_EQ(read_criteo_file(dir + "/none.tsv", {}, d).code(), absl::StatusCode::kNotFound);

  const std::vector<std::string> files = criteo_files(dir).value();
  EXPECT_EQ(files, (std::vector<std::string>{dir + "/a.tsv", dir + "/b.txt", dir + "/c.tsv"}));
  EXPECT_EQ(criteo_files(dir + "/a.tsv").value(), std::vector<std::string>{dir + "/a.tsv"});
  EXPECT_EQ(criteo_files(dir + "/none").status().code(), absl::StatusCode::kNotFound);
  std::filesystem::create_directories(dir + "/empty");
  EXPECT_THAT(criteo_files(dir + "/empty").status().message(), HasSubstr("holds no Criteo file"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace psflow::internal

#include "optimizer/row_ids.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

TEST(RowIdsTest, WidensInt32AndKeepsInt64InOrder) {
  auto from32 = checked_row_ids(Tensor::from_vector<int32_t>({3, 0, 3, 9}, {4}), 10, "t");
  ASSERT_TRUE(from32.ok()) << from32.status();
  EXPECT_EQ(*from32, (std::vector<int64_t>{3, 0, 3, 9}));
  auto from64 = checked_row_ids(Tensor::from_vector<int64_t>({9, 1}, {2}), 10, "t");
  ASSERT_TRUE(from64.ok()) << from64.status();
  EXPECT_EQ(*from64, (std::vector<int64_t>{9, 1}));
  auto empty = checked_row_ids(Tensor::from_vector<int64_t>({}, {0}), 0, "t");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(empty->empty());
}

TEST(RowIdsTest, NamesTheFirstOutOfRangeId) {
  // Negative ids (which one unsigned compare must catch), ids at the row
  // count, and huge int64 ids; the message names the first bad one.
  struct Case {
    Tensor ids;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {Tensor::from_vector<int32_t>({0, -1, 20}, {3}), "row id -1 at position 1"},
      {Tensor::from_vector<int64_t>({1, 2, 10}, {3}), "row id 10 at position 2"},
      {Tensor::from_vector<int64_t>({INT64_MIN, 0}, {2}), "at position 0"},
      {Tensor::from_vector<int64_t>({5, INT64_MAX}, {2}), "at position 1"},
  };
  for (const Case& c : cases) {
    auto ids = checked_row_ids(c.ids, 10, "table");
    ASSERT_FALSE(ids.ok());
    EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(ids.status().message().find(c.expected), absl::string_view::npos) << ids.status();
    EXPECT_NE(ids.status().message().find("[0, 10)"), absl::string_view::npos) << ids.status();
    EXPECT_NE(ids.status().message().find("'table'"), absl::string_view::npos) << ids.status();
  }
}

TEST(RowIdsTest, RejectsOtherDtypesAndRanks) {
  EXPECT_FALSE(checked_row_ids(Tensor::from_vector<float>({1}, {1}), 10, "t").ok());
  EXPECT_FALSE(checked_row_ids(Tensor::from_vector<int64_t>({1, 2}, {1, 2}), 10, "t").ok());
  EXPECT_FALSE(checked_row_ids(Tensor::scalar<int64_t>(1), 10, "t").ok());
}

}  // namespace
}  // namespace psflow::internal

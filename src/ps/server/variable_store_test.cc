#include "ps/server/variable_store.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

// An empty store is what a restarted ps has: the error says so, and what to
// do, rather than only "create it first".
TEST(VariableStoreTest, AnUnknownNameOnAnEmptyStoreSuggestsARestart) {
  VariableStore store;
  const absl::Status status = store.find("w/part_1").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("'w/part_1'"));
  EXPECT_THAT(status.message(), HasSubstr("holds no variables: if it restarted"));
  EXPECT_THAT(status.message(), HasSubstr("PsRecovery"));
}

TEST(VariableStoreTest, AnUnknownNameBesideOthersSaysHowManyThereAre) {
  VariableStore store;
  ASSERT_TRUE(store.create("a", Tensor::scalar(1.0f), VariableStore::IfExists::kReplace).ok());
  ASSERT_TRUE(store.create("b", Tensor::scalar(1.0f), VariableStore::IfExists::kReplace).ok());
  const absl::Status status = store.find("c").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("no variable named 'c' on this ps (it holds 2 others)"));
  EXPECT_TRUE(store.find("a").ok());
}

}  // namespace
}  // namespace psflow::internal

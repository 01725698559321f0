#include "rpc/shared_memory_region.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

constexpr size_t kBytes = size_t{1} << 20;

// What one side writes, the other reads: both map the same file.
TEST(SharedMemoryRegionTest, AttachMapsTheSameBytes) {
  const std::string token = random_token(SharedMemoryRegion::kTokenBytes);
  absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> ps =
      SharedMemoryRegion::create(kBytes, token);
  ASSERT_TRUE(ps.ok()) << ps.status();
  absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> client =
      SharedMemoryRegion::attach(getpid(), (*ps)->fd(), kBytes, token);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_NE((*ps)->data(), (*client)->data());
  std::memcpy((*client)->data() + 8192, "gradient", 8);
  EXPECT_EQ(std::memcmp((*ps)->data() + 8192, "gradient", 8), 0);
  (*ps)->data()[kBytes - 1] = 42;
  EXPECT_EQ((*client)->data()[kBytes - 1], 42);
}

// A client that names the wrong token, size or file gets no mapping: it
// cannot be pointed at another session's region by mistake.
TEST(SharedMemoryRegionTest, AttachChecksTokenSizeAndFile) {
  const std::string token = random_token(SharedMemoryRegion::kTokenBytes);
  auto ps = SharedMemoryRegion::create(kBytes, token);
  ASSERT_TRUE(ps.ok()) << ps.status();
  const std::string other = random_token(SharedMemoryRegion::kTokenBytes);
  absl::Status s = SharedMemoryRegion::attach(getpid(), (*ps)->fd(), kBytes, other).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("header differs"));
  s = SharedMemoryRegion::attach(getpid(), (*ps)->fd(), kBytes / 2, token).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("size differs"));
  s = SharedMemoryRegion::attach(getpid(), 100000, kBytes, token).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("cannot open"));
  s = SharedMemoryRegion::attach(-1, (*ps)->fd(), kBytes, token).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
}

// Whoever opens the ps's file cannot change its size: a shrunk file would
// make the ps's next access to the lost pages a SIGBUS.
TEST(SharedMemoryRegionTest, TheFileIsSealedAgainstResizing) {
  auto ps = SharedMemoryRegion::create(kBytes, "t");
  ASSERT_TRUE(ps.ok()) << ps.status();
  const std::string path = absl::StrCat("/proc/self/fd/", (*ps)->fd());
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_NE(ftruncate(fd, 4096), 0);
  EXPECT_NE(ftruncate(fd, 2 * kBytes), 0);
  close(fd);
  (*ps)->data()[kBytes - 1] = 1;  // Still mapped, whole.
}

TEST(SharedMemoryRegionTest, ContainsCoversOnlyThePayloadPart) {
  auto ps = SharedMemoryRegion::create(kBytes, "t");
  ASSERT_TRUE(ps.ok()) << ps.status();
  const SharedMemoryRegion& r = **ps;
  EXPECT_TRUE(
      r.contains(SharedMemoryRegion::kHeaderBytes, kBytes - SharedMemoryRegion::kHeaderBytes));
  EXPECT_TRUE(r.contains(kBytes, 0));
  EXPECT_FALSE(r.contains(0, 16));  // The header.
  EXPECT_FALSE(r.contains(SharedMemoryRegion::kHeaderBytes, kBytes));
  EXPECT_FALSE(r.contains(kBytes + 1, 0));
  EXPECT_FALSE(r.contains(~uint64_t{0} - 8, 16));  // Would wrap around.
  EXPECT_FALSE(r.contains(8192, ~uint64_t{0}));
}

TEST(SharedMemoryRegionTest, CreateRefusesSizesThatAreNotWholePages) {
  EXPECT_EQ(SharedMemoryRegion::create(4096, "t").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SharedMemoryRegion::create(kBytes + 1, "t").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SharedMemoryRegionTest, BootIdAndTokens) {
  EXPECT_EQ(host_boot_id().size(), 36u);  // A UUID.
  EXPECT_EQ(host_boot_id(), host_boot_id());
  const std::string a = random_token(16);
  const std::string b = random_token(16);
  EXPECT_EQ(a.size(), 16u);
  EXPECT_NE(a, b);
  EXPECT_THAT(pid_namespace(), ::testing::StartsWith("pid:["));
}

}  // namespace
}  // namespace psflow::internal

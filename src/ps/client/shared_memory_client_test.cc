#include "ps/client/shared_memory_client.h"

#include <vector>

#include "gtest/gtest.h"
#include "rpc/tensor_stream.h"

namespace psflow::internal {
namespace {

using Op = v1::VariableOp;
constexpr uint64_t kBytes = uint64_t{1} << 20;
constexpr uint64_t kPayload = kBytes - SharedMemoryRegion::kHeaderBytes;

SharedMemoryClientSession session() {
  auto region = SharedMemoryRegion::create(kBytes, "t");
  EXPECT_TRUE(region.ok()) << region.status();
  return SharedMemoryClientSession("t", *std::move(region));
}

TEST(SharedMemoryClientSessionTest, SlicesAreDisjointAlignedAndComeBack) {
  SharedMemoryClientSession s = session();
  auto a = s.allocate(100);
  auto b = s.allocate(5000);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(a->offset, SharedMemoryRegion::kHeaderBytes);
  EXPECT_EQ(a->bytes, 128u);
  EXPECT_EQ(b->offset, a->offset + a->bytes);
  EXPECT_EQ(b->offset % SharedArena::kAlignment, 0u);
  EXPECT_FALSE(s.allocate(kPayload).has_value());  // Not while a and b are held.
  s.release(*a);
  s.release(*b);
  // Coalesced again: the whole payload part fits in one slice.
  auto all = s.allocate(kPayload);
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->offset, SharedMemoryRegion::kHeaderBytes);
  s.release(*all);
}

TEST(SharedMemoryClientSessionTest, ReleasingOutOfOrderCoalesces) {
  SharedMemoryClientSession s = session();
  std::vector<SharedMemoryClientSession::Slice> slices;
  for (int i = 0; i < 8; ++i) {
    auto slice = s.allocate(kPayload / 8);
    ASSERT_TRUE(slice.has_value()) << i;
    slices.push_back(*slice);
  }
  EXPECT_FALSE(s.allocate(64).has_value());
  for (int i : {3, 1, 7, 0, 5, 2, 6, 4}) s.release(slices[static_cast<size_t>(i)]);
  EXPECT_TRUE(s.allocate(kPayload).has_value());
}

// A slice whose call ended without an answer is never handed out again,
// and a quarter of the region retired asks for a new session.
TEST(SharedMemoryClientSessionTest, RetiredSlicesStayOut) {
  SharedMemoryClientSession s = session();
  auto a = s.allocate(kPayload / 8);
  ASSERT_TRUE(a.has_value());
  EXPECT_FALSE(s.retire(*a));
  auto b = s.allocate(kPayload - a->bytes);
  ASSERT_TRUE(b.has_value());
  EXPECT_GE(b->offset, a->offset + a->bytes);
  s.release(*b);
  EXPECT_FALSE(s.allocate(kPayload).has_value());
  auto c = s.allocate(kPayload / 4);
  ASSERT_TRUE(c.has_value());
  EXPECT_TRUE(s.retire(*c));
}

TEST(SharedMemoryClientSessionTest, WantedBytesCountSharedContentsAndResults) {
  ExecuteBatch batch;
  VariableOpArgs push;
  push.kind = Op::APPLY_DENSE;
  push.value = Tensor(DType::kFloat32, {1000});  // 4000 bytes: below the threshold
  batch.ops.push_back(push);
  EXPECT_EQ(shared_bytes_wanted(batch, {}), 0u);
  batch.ops[0].value = Tensor(DType::kFloat32, {10000});
  EXPECT_EQ(shared_bytes_wanted(batch, {}), 40000u);
  batch.ops[0].wire_dtype = WireDType::kBFloat16;
  EXPECT_EQ(shared_bytes_wanted(batch, {}), 20032u);  // 20000, aligned
  VariableOpArgs read;
  read.kind = Op::READ;
  batch.ops.push_back(read);
  const auto destination = TensorBuffer::allocate(65536);
  EXPECT_EQ(shared_bytes_wanted(batch, {destination}), 20032u + 65536u);
  // A result of unknown size gets a fixed allowance; one seen before, its
  // last size.
  EXPECT_EQ(shared_bytes_wanted(batch, {}), 20032u + (uint64_t{1} << 20));
  const ResultHint hint = [](const VariableOpArgs& op) -> uint64_t {
    return op.kind == Op::READ ? 4u << 20 : 0;
  };
  EXPECT_EQ(shared_bytes_wanted(batch, {}, hint), 20032u + (uint64_t{4} << 20));
}

}  // namespace
}  // namespace psflow::internal

#include "data/idx_reader.h"

#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

class IdxReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("idx_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& name, const std::vector<uint8_t>& bytes, bool gz) {
    const std::string path = (dir_ / name).string();
    if (gz) {
      gzFile f = gzopen(path.c_str(), "wb");
      EXPECT_NE(f, nullptr);
      EXPECT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
                static_cast<int>(bytes.size()));
      gzclose(f);
    } else {
      FILE* f = std::fopen(path.c_str(), "wb");
      EXPECT_NE(f, nullptr);
      EXPECT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
      std::fclose(f);
    }
    return path;
  }

  std::filesystem::path dir_;
};

// A 2x3 uint8 IDX file.
std::vector<uint8_t> small_u8() {
  return {0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6};
}

TEST_F(IdxReaderTest, ReadsPlainAndGzipUint8) {
  for (bool gz : {false, true}) {
    auto t = read_idx_file(write(gz ? "a.gz" : "a", small_u8(), gz));
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(*t, Tensor::from_vector<uint8_t>({1, 2, 3, 4, 5, 6}, {2, 3}));
  }
}

// Found by fuzz/idx_fuzz.cc (corpus/idx/crash-a521489d...): a zero
// dimension hid huge ones from the size check, and the reader aborted
// constructing the Tensor instead of refusing the file.
TEST_F(IdxReaderTest, ZeroDimensionDoesNotHideHugeOnes) {
  const std::vector<uint8_t> header = {0, 0, 0x08, 4, 0xa7, 0, 0,    0, 0, 0,
                                       0, 0, 0x5d, 0, 0,    0, 0xa7, 0, 0, 0};
  auto t = read_idx_file(write("zero_dim", header, false));
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << t.status();
  EXPECT_NE(t.status().message().find("implausibly large"), std::string::npos) << t.status();
  // A zero dimension beside plausible ones is still an empty tensor.
  auto empty = read_idx_file(write("empty", {0, 0, 0x08, 2, 0, 0, 0, 0, 0, 0, 0, 3}, false));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->shape(), (Shape{0, 3}));
}

// Found by fuzz/idx_fuzz.cc (corpus/idx/oom-5f98496f...): a 64-byte file
// whose header claims 0xf4f4f4f4 int32 elements made the reader allocate
// 16 GiB before reading the payload; now it reads first and refuses.
TEST_F(IdxReaderTest, HeaderAloneCannotAllocateWhatItClaims) {
  std::vector<uint8_t> bytes(64, 0xf4);  // dims and payload: 0xf4...
  bytes[0] = 0;
  bytes[1] = 0;
  bytes[2] = 0x0C;  // int32
  bytes[3] = 1;     // rank 1
  auto t = read_idx_file(write("claims_16gib", bytes, false));
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << t.status();
  EXPECT_NE(t.status().message().find("truncated"), std::string::npos) << t.status();
}

TEST_F(IdxReaderTest, WidensBigEndianTypes) {
  // int16 [2]: 0x0102 = 258, 0xFFFE = -2.
  auto t = read_idx_file(write("i16", {0, 0, 0x0B, 1, 0, 0, 0, 2, 0x01, 0x02, 0xFF, 0xFE}, false));
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, Tensor::from_vector<int32_t>({258, -2}, {2}));
  // float32 [1]: 1.5 = 0x3FC00000.
  auto f = read_idx_file(write("f32", {0, 0, 0x0D, 1, 0, 0, 0, 1, 0x3F, 0xC0, 0, 0}, false));
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(*f, Tensor::from_vector<float>({1.5f}, {1}));
}

TEST_F(IdxReaderTest, RejectsMalformedFilesNamingThem) {
  std::vector<uint8_t> truncated = small_u8();
  truncated.pop_back();
  std::vector<uint8_t> trailing = small_u8();
  trailing.push_back(9);
  std::vector<uint8_t> bad_magic = small_u8();
  bad_magic[0] = 7;
  std::vector<uint8_t> bad_type = small_u8();
  bad_type[2] = 0x42;
  for (const auto& [name, bytes] :
       std::vector<std::pair<std::string, std::vector<uint8_t>>>{{"truncated", truncated},
                                                                 {"trailing", trailing},
                                                                 {"magic", bad_magic},
                                                                 {"type", bad_type},
                                                                 {"empty", {}}}) {
    auto t = read_idx_file(write(name, bytes, true));
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_NE(t.status().message().find(name), absl::string_view::npos) << t.status();
  }
  EXPECT_EQ(read_idx_file((dir_ / "missing").string()).status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(IdxReaderTest, MissingDatasetSaysWhichPackageToInstall) {
  auto d = load_fashion_mnist(dir_.string());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(d.status().message().find("dataset-fashion-mnist"), absl::string_view::npos);
}

// The real data set from Debian's dataset-fashion-mnist package, which the
// install script installs.
TEST(FashionMnistTest, LoadsTheInstalledDataset) {
  auto d = load_fashion_mnist();
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->train_images.shape(), (Shape{60000, 28, 28}));
  EXPECT_EQ(d->train_labels.shape(), (Shape{60000}));
  EXPECT_EQ(d->test_images.shape(), (Shape{10000, 28, 28}));
  EXPECT_EQ(d->test_labels.shape(), (Shape{10000}));
  int counts[10] = {};
  for (uint8_t label : d->test_labels.flat<uint8_t>()) {
    ASSERT_LT(label, 10);
    ++counts[label];
  }
  for (int c : counts) EXPECT_EQ(c, 1000);  // the test split is balanced
}

}  // namespace
}  // namespace psflow::internal

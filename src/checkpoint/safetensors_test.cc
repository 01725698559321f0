#include "checkpoint/safetensors.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal::checkpoint {
namespace {

using ::testing::HasSubstr;

std::vector<SafetensorsEntry> every_dtype() {
  Tensor flags(DType::kBool, {3});
  flags.mutable_flat<bool>()[1] = true;
  return {
      {"f32", Tensor::from_vector<float>({1.5f, -2, 3, 4, 5, 6.25f}, {2, 3})},
      {"f64", Tensor::from_vector<double>({1e300, -0.0}, {2})},
      {"i32", Tensor::scalar<int32_t>(-7)},
      {"i64", Tensor::from_vector<int64_t>({1LL << 40, -1, 3}, {3, 1})},
      {"empty", Tensor(DType::kInt64, {0, 5})},
      {"u8", Tensor::from_vector<uint8_t>({0, 1, 2, 255, 7, 8, 9}, {7})},
      {"flags", flags},
      {"a/b/part_0", Tensor::from_vector<float>({9}, {1})},
  };
}

// A file from a header text and data bytes (the header is used as given).
std::string make_file(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

void expect_rejected(const std::string& bytes, const std::string& needle) {
  absl::StatusOr<SafetensorsContents> c = decode_safetensors(bytes, "/ckpt/ps-0.safetensors");
  ASSERT_FALSE(c.ok()) << "accepted; expected: " << needle;
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << c.status();
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("/ckpt/ps-0.safetensors: "));
  EXPECT_THAT(std::string(c.status().message()), HasSubstr(needle));
}

TEST(SafetensorsTest, RoundTripsEveryDtypeWithMetadata) {
  const std::vector<SafetensorsEntry> entries = every_dtype();
  const std::map<std::string, std::string, std::less<>> metadata = {{"format", "psflow"},
                                                                    {"task", "ps:0"}};
  absl::StatusOr<std::string> bytes = encode_safetensors(entries, metadata);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  uint64_t n = 0;
  std::memcpy(&n, bytes->data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u) << "the data must start 8-byte aligned";
  absl::StatusOr<SafetensorsContents> back = decode_safetensors(*bytes, "x.safetensors");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->metadata, metadata);
  ASSERT_EQ(back->tensors.size(), entries.size());
  for (const SafetensorsEntry& e : entries) {
    auto it = back->tensors.find(e.name);
    ASSERT_NE(it, back->tensors.end()) << e.name;
    EXPECT_EQ(it->second, e.tensor) << e.name;
    if (e.tensor.num_elements() > 0) {
      // Shared with the file's buffer, aligned for the type.
      EXPECT_EQ(reinterpret_cast<uintptr_t>(it->second.raw_data()) % dtype_size(e.tensor.dtype()),
                0u)
          << e.name;
    }
  }
}

TEST(SafetensorsTest, LayoutFollowsTheReferenceImplementation) {
  absl::StatusOr<std::string> bytes = encode_safetensors(every_dtype());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  uint64_t n = 0;
  std::memcpy(&n, bytes->data(), 8);
  const nlohmann::json header = nlohmann::json::parse(bytes->substr(8, n));
  EXPECT_FALSE(header.contains("__metadata__"));
  EXPECT_EQ(header["f32"]["dtype"], "F32");
  EXPECT_EQ(header["flags"]["dtype"], "BOOL");
  EXPECT_EQ(header["i32"]["shape"], nlohmann::json::array());
  // Largest element size first, then by name, with no holes.
  const std::vector<std::string> order = {"empty", "f64", "i64",   "a/b/part_0",
                                          "f32",   "i32", "flags", "u8"};
  uint64_t offset = 0;
  for (const std::string& name : order) {
    SCOPED_TRACE(name);
    EXPECT_EQ(header[name]["data_offsets"][0].get<uint64_t>(), offset);
    offset = header[name]["data_offsets"][1].get<uint64_t>();
  }
  EXPECT_EQ(8 + n + offset, bytes->size());
}

TEST(SafetensorsTest, FilesAreWrittenAtomicallyWithTheirDigest) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / absl::StrCat("st_test_", ::getpid())).string();
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/a.safetensors";
  absl::StatusOr<FileDigest> digest = write_safetensors_file(path, every_dtype());
  ASSERT_TRUE(digest.ok()) << digest.status();
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  absl::StatusOr<std::string> bytes = read_file(path, 1 << 20);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, *encode_safetensors(every_dtype()));
  EXPECT_EQ(digest->size, bytes->size());
  EXPECT_EQ(digest->crc32, crc32_of(*bytes));
  absl::StatusOr<SafetensorsContents> back = read_safetensors_file(path, 1 << 20);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->tensors.at("u8"), every_dtype()[5].tensor);
  // A file over the caller's limit is refused before it is read.
  EXPECT_THAT(std::string(read_safetensors_file(path, 10).status().message()), HasSubstr(path));
  EXPECT_EQ(read_file(dir + "/missing", 10).status().code(), absl::StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

TEST(SafetensorsTest, WriterRejectsWhatTheFormatCannotHold) {
  auto expect_bad = [](std::vector<SafetensorsEntry> entries, const std::string& needle) {
    absl::StatusOr<std::string> bytes = encode_safetensors(entries);
    ASSERT_FALSE(bytes.ok());
    EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(bytes.status().message()), HasSubstr(needle));
  };
  expect_bad({{"s", Tensor::from_strings({"a"})}}, "tensor 's': dtype string has no safetensors");
  expect_bad({{"x", Tensor()}}, "tensor 'x'");
  expect_bad({{"x", Tensor::scalar(1.0f)}, {"x", Tensor::scalar(2.0f)}}, "'x' appears twice");
  expect_bad({{"__metadata__", Tensor::scalar(1.0f)}}, "reserved");
  expect_bad({{"", Tensor::scalar(1.0f)}}, "reserved or empty");
}

TEST(SafetensorsTest, UnalignedTensorsAreCopied) {
  // A header of odd length puts the data at an odd offset.
  const std::string header = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  ASSERT_NE((8 + header.size()) % 4, 0u);
  float values[2] = {1.25f, -3};
  std::string data(8, '\0');
  std::memcpy(data.data(), values, 8);
  absl::StatusOr<SafetensorsContents> c = decode_safetensors(make_file(header, data), "f");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->tensors.at("a"), Tensor::from_vector<float>({1.25f, -3}, {2}));
}

TEST(SafetensorsTest, CorruptFilesAreRejectedNamingTheFileAndTheProblem) {
  const std::string f32 = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string eight(8, '\1');
  expect_rejected("abc", "too short for the 8-byte header length");
  expect_rejected(std::string("\xff\xff\xff\xff\x00\x00\x00\x00", 8) + "{}", "more than the limit");
  expect_rejected(std::string("\x40\x00\x00\x00\x00\x00\x00\x00", 8) + "{}",
                  "runs past the end of the file");
  expect_rejected(make_file("", ""), "not a JSON object");
  expect_rejected(make_file("[1, 2]", ""), "must start with '{'");
  expect_rejected(make_file("{\"a\": ", ""), "not valid JSON");
  expect_rejected(make_file("{\"a\": 1}", ""), "tensor 'a': its entry is not a JSON object");
  expect_rejected(make_file("{" + f32 + "," + f32 + "}", eight), "tensor 'a' appears twice");
  expect_rejected(make_file(R"({"a":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}})", eight),
                  "tensor 'a': dtype 'F16' is not one psflow reads");
  expect_rejected(make_file(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", eight),
                  "no string \"dtype\"");
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight),
                  "shape entry -2 is not a non-negative integer");
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})", eight),
                  "shape entry 2.5");
  expect_rejected(make_file(R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", eight),
                  "no \"shape\" array");
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", eight),
                  "no \"data_offsets\" pair");
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", eight),
                  "begin <= end");
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,16]}})", eight),
                  "run past the end of the data (8 bytes");
  expect_rejected(make_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight),
                  "shape [3] of F32 needs 12 bytes but data_offsets give 8");
  expect_rejected(
      make_file(R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}})",
                eight),
      "tensor 'a'");
  expect_rejected(make_file(R"({"a":{"dtype":"U8","shape":[6],"data_offsets":[0,6]},)"
                            R"("b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
                            eight),
                  "tensor 'b' [4, 8) overlaps tensor 'a' [0, 6)");
  expect_rejected(make_file(R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                            R"("b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]}})",
                            eight),
                  "bytes [2, 4) of the data belong to no tensor");
  expect_rejected(make_file("{" + f32 + "}", eight + "xx"),
                  "the data is 10 bytes but the tensors cover 8");
  expect_rejected(make_file(R"({"__metadata__":{"k":1}})", ""),
                  "__metadata__ entry 'k' is not a string");
  expect_rejected(make_file(R"({"__metadata__":[]})", ""), "__metadata__ is not a JSON object");
  expect_rejected(make_file(R"({"b":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})",
                            std::string("\x01\x02", 2)),
                  "bool element 1 is 2, not 0 or 1");
  expect_rejected(make_file("{\"a\":" + std::string(50, '[') + std::string(50, ']') + "}", ""),
                  "nests deeper than");
}

TEST(SafetensorsTest, EveryTruncationIsRejected) {
  const std::string valid = *encode_safetensors(every_dtype());
  ASSERT_LT(valid.size(), 4096u);
  for (size_t n = 0; n < valid.size(); ++n) {
    absl::StatusOr<SafetensorsContents> c = decode_safetensors(valid.substr(0, n), "t");
    ASSERT_FALSE(c.ok()) << "a truncation to " << n << " bytes was accepted";
    ASSERT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << c.status();
  }
}

TEST(SafetensorsTest, RandomCorruptionFailsCleanly) {
  const std::string valid = *encode_safetensors(every_dtype());
  std::mt19937 rng(12345);  // fixed seed: deterministic
  int rejected = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string bytes = valid;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      bytes[rng() % bytes.size()] = static_cast<char>(rng());
    }
    absl::StatusOr<SafetensorsContents> c = decode_safetensors(bytes, "t");
    if (!c.ok()) {
      ++rejected;
      ASSERT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << c.status();
    }
  }
  // Data bytes may change without breaking the structure; header bytes
  // mostly do break it.
  EXPECT_GT(rejected, 100);
}

}  // namespace
}  // namespace psflow::internal::checkpoint

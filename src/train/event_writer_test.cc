#include "train/event_writer.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "tensorboard/event.pb.h"

namespace psflow::internal {
namespace {

TEST(Crc32cTest, KnownValues) {
  // RFC 3720 (iSCSI) test vectors.
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
}

TEST(TfRecordTest, RoundTripAndCorruptionIsDetected) {
  std::string content;
  append_tfrecord("hello", &content);
  append_tfrecord("", &content);
  append_tfrecord(std::string(1000, 'x'), &content);
  absl::StatusOr<std::vector<std::string>> records = parse_tfrecords(content);
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 3u);
  EXPECT_EQ((*records)[0], "hello");
  EXPECT_EQ((*records)[1], "");
  EXPECT_EQ((*records)[2].size(), 1000u);

  std::string flipped = content;
  flipped[14] ^= 1;  // Inside "hello".
  EXPECT_FALSE(parse_tfrecords(flipped).ok());
  EXPECT_FALSE(parse_tfrecords(content.substr(0, content.size() - 1)).ok());
}

TEST(EventWriterTest, WritesTheVersionThenScalarsTensorBoardCanRead) {
  const std::string dir = ::testing::TempDir() + "/psflow-events";
  std::filesystem::remove_all(dir);
  std::string path;
  {
    absl::StatusOr<EventWriter> writer = EventWriter::create(dir);
    ASSERT_TRUE(writer.ok()) << writer.status();
    path = writer->path();
    EXPECT_EQ(std::filesystem::path(path).filename().string().rfind("events.out.tfevents.", 0), 0u);
    ASSERT_TRUE(writer->add_scalar("train/loss", 0.5, 1).ok());
    ASSERT_TRUE(writer->add_scalar("test/accuracy", 0.875, 2).ok());
  }
  std::ifstream file(path, std::ios::binary);
  std::stringstream content;
  content << file.rdbuf();
  absl::StatusOr<std::vector<std::string>> records = parse_tfrecords(content.str());
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 3u);
  tensorboard::Event version, loss, accuracy;
  ASSERT_TRUE(version.ParseFromString((*records)[0]));
  EXPECT_EQ(version.file_version(), "brain.Event:2");
  ASSERT_TRUE(loss.ParseFromString((*records)[1]));
  EXPECT_EQ(loss.step(), 1);
  ASSERT_EQ(loss.summary().value_size(), 1);
  EXPECT_EQ(loss.summary().value(0).tag(), "train/loss");
  EXPECT_FLOAT_EQ(loss.summary().value(0).simple_value(), 0.5f);
  ASSERT_TRUE(accuracy.ParseFromString((*records)[2]));
  EXPECT_FLOAT_EQ(accuracy.summary().value(0).simple_value(), 0.875f);
  EXPECT_GT(accuracy.wall_time(), 1.6e9);
}

}  // namespace
}  // namespace psflow::internal

#include "train/step_scalars.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tensorboard/event.pb.h"
#include "train/step_config.h"

namespace psflow::internal {
namespace {

struct Point {
  std::string tag;
  int64_t step;
  float value;
};

std::vector<Point> read_points(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream content;
  content << file.rdbuf();
  absl::StatusOr<std::vector<std::string>> records = parse_tfrecords(content.str());
  EXPECT_TRUE(records.ok()) << records.status();
  std::vector<Point> points;
  for (const std::string& record : records.value_or(std::vector<std::string>())) {
    tensorboard::Event event;
    EXPECT_TRUE(event.ParseFromString(record));
    for (const auto& v : event.summary().value()) {
      points.push_back({v.tag(), event.step(), v.simple_value()});
    }
  }
  return points;
}

TEST(LearningRateScheduleTest, ConstantOrCosine) {
  EXPECT_DOUBLE_EQ((LearningRateSchedule{0.5, 0, 0.1}.at(1000)), 0.5);
  const LearningRateSchedule cosine{0.5, 1000, 0.1};
  EXPECT_DOUBLE_EQ(cosine.at(0), 0.5);
  EXPECT_DOUBLE_EQ(cosine.at(400), cosine_decay(0.5, 1000, 0.1, 400));
  EXPECT_NEAR(cosine.at(1000), 0.05, 1e-12);
}

// A resumed run: its steps go on from the checkpoint's (450), a point each
// time the global step passes a multiple of the interval, the loss the mean
// of the steps since the last point.
TEST(StepScalarsTest, WritesLossRateAndSpeedEveryIntervalAtTheGlobalStep) {
  const std::string dir = ::testing::TempDir() + "/psflow-step-scalars";
  std::filesystem::remove_all(dir);
  std::string path;
  const LearningRateSchedule schedule{0.1, 1000, 0.1};
  {
    absl::StatusOr<EventWriter> events = EventWriter::create(dir);
    ASSERT_TRUE(events.ok()) << events.status();
    path = events->path();
    StepScalars scalars(&*events, schedule, /*batch_size=*/32, /*interval=*/100);
    scalars.begin_epoch(450);
    scalars.on_steps(30, 1.0);   // step 480: no multiple of 100 passed
    scalars.on_steps(60, 2.0);   // 510: passes 500
    scalars.on_steps(200, 1.5);  // 650: passes 600
    scalars.on_steps(240, 1.5);  // 690: none
    scalars.begin_epoch(900);    // the next epoch
    scalars.on_steps(150, 0.5);  // 1050: passes 1000
    EXPECT_TRUE(scalars.status().ok()) << scalars.status();
  }
  const std::vector<Point> points = read_points(path);
  ASSERT_EQ(points.size(), 9u);
  const int64_t steps[] = {510, 650, 1050};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(points[3 * i].tag, "step/loss");
    EXPECT_EQ(points[3 * i + 1].tag, "step/learning_rate");
    EXPECT_EQ(points[3 * i + 2].tag, "step/examples_per_sec");
    for (int k = 0; k < 3; ++k) EXPECT_EQ(points[3 * i + k].step, steps[i]);
    EXPECT_GT(points[3 * i + 2].value, 0.0f);
    EXPECT_FLOAT_EQ(points[3 * i + 1].value, static_cast<float>(schedule.at(steps[i] - 1)));
  }
  EXPECT_FLOAT_EQ(points[0].value, 2.0f);
  EXPECT_FLOAT_EQ(points[3].value, static_cast<float>((1.5 * 200 - 2.0 * 60) / 140));
  EXPECT_FLOAT_EQ(points[6].value, 0.5f);
}

TEST(StepScalarsTest, WithoutAnEventFileWritesNothing) {
  StepScalars scalars(nullptr, LearningRateSchedule{0.1, 0, 0.1}, 32, 1);
  scalars.begin_epoch(0);
  scalars.on_steps(5, 1.0);
  EXPECT_TRUE(scalars.status().ok());
}

}  // namespace
}  // namespace psflow::internal

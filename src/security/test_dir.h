// A private temporary directory removed at the end of a test (tests only).
#ifndef PSFLOW_SECURITY_TEST_DIR_H_
#define PSFLOW_SECURITY_TEST_DIR_H_

#include <filesystem>
#include <string>

#include "gtest/gtest.h"
#include "security/private_file.h"

namespace psflow::internal {

// Thread-safety: a value type owned by one test.
class TestDir {
 public:
  TestDir() {
    absl::StatusOr<std::string> dir = make_private_temp_directory("psflow-security-test-");
    EXPECT_TRUE(dir.ok()) << dir.status();
    if (dir.ok()) path_ = *dir;
  }
  ~TestDir() {
    std::error_code error;
    if (!path_.empty()) std::filesystem::remove_all(path_, error);
  }
  TestDir(const TestDir&) = delete;
  TestDir& operator=(const TestDir&) = delete;
  [[nodiscard]] std::string file(const std::string& name) const { return path_ + "/" + name; }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_SECURITY_TEST_DIR_H_

#include "train/data_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/strings.h"

namespace psflow::internal {

absl::Status check_readable_file(const std::string& path, std::string_view what,
                                 std::string_view fix) {
  struct stat info {};
  std::string problem;
  if (::stat(path.c_str(), &info) != 0) {
    problem = errno == ENOENT || errno == ENOTDIR
                  ? "is missing"
                  : absl::StrCat("cannot be read (", std::strerror(errno), ")");
  } else if (S_ISDIR(info.st_mode)) {
    problem = "is a directory, not a file";
  } else {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      problem = absl::StrCat("cannot be read (", std::strerror(errno), ")");
    } else {
      ::close(fd);
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(av(what), " ", path, " ", problem, "; ", av(fix)));
}

}  // namespace psflow::internal

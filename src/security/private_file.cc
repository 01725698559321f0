#include "security/private_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/strings.h"

namespace psflow::internal {
namespace {

// Certificates and keys are a few KiB; anything far larger is not one.
constexpr std::uintmax_t kMaxFileBytes = 1 << 20;

absl::Status errno_error(int error, std::string_view what, std::string_view path) {
  const std::string message = absl::StrCat(av(what), " '", av(path), "': ", std::strerror(error));
  switch (error) {
    case ENOENT: return absl::NotFoundError(message);
    case EACCES:
    case EPERM: return absl::PermissionDeniedError(message);
    case EEXIST: return absl::AlreadyExistsError(message);
    default: return absl::InternalError(message);
  }
}

absl::Status write_all(int fd, std::string_view contents, const std::string& path) {
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return errno_error(errno, "cannot write", path);
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return errno_error(errno, "cannot sync", path);
  return absl::OkStatus();
}

}  // namespace

absl::Status write_private_file(const std::string& path, std::string_view contents,
                                bool overwrite) {
  std::string temp = absl::StrCat(path, ".tmp-XXXXXX");
  std::vector<char> name(temp.begin(), temp.end());
  name.push_back('\0');
  // mkstemp creates the file 0600 whatever the umask.
  const int fd = ::mkstemp(name.data());
  if (fd < 0) return errno_error(errno, "cannot create a file beside", path);
  temp = name.data();
  absl::Status status = write_all(fd, contents, temp);
  if (::close(fd) != 0 && status.ok()) status = errno_error(errno, "cannot close", temp);
  if (status.ok()) {
    if (overwrite) {
      if (::rename(temp.c_str(), path.c_str()) != 0)
        status = errno_error(errno, "cannot write", path);
    } else if (::link(temp.c_str(), path.c_str()) != 0) {
      status = errno == EEXIST ? absl::AlreadyExistsError(absl::StrCat(
                                     path, " exists; remove it or pass --force to replace it"))
                               : errno_error(errno, "cannot write", path);
    }
  }
  // After a rename the temporary name is gone already; ENOENT is fine.
  ::unlink(temp.c_str());
  return status;
}

absl::Status make_private_directory(const std::string& path) {
  std::error_code error;
  const std::filesystem::path dir(path);
  if (dir.has_parent_path()) std::filesystem::create_directories(dir.parent_path(), error);
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return errno_error(errno, "cannot create the directory", path);
  }
  if (!std::filesystem::is_directory(dir, error)) {
    return absl::FailedPreconditionError(absl::StrCat(path, " exists and is not a directory"));
  }
  return absl::OkStatus();
}

std::string temp_directory_root() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
}

absl::StatusOr<std::string> make_private_temp_directory(std::string_view prefix) {
  std::string pattern = absl::StrCat(temp_directory_root(), "/", av(prefix), "XXXXXX");
  std::vector<char> name(pattern.begin(), pattern.end());
  name.push_back('\0');
  if (::mkdtemp(name.data()) == nullptr) {
    return errno_error(errno, "cannot create a private temporary directory", pattern);
  }
  return std::string(name.data());
}

absl::StatusOr<std::string> read_small_file(const std::string& path) {
  std::error_code error;
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error) return errno_error(error.value(), "cannot read", path);
  if (size > kMaxFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is ", size, " bytes, too large for a certificate or key"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return errno_error(errno != 0 ? errno : EACCES, "cannot open", path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace psflow::internal

#include "train/ps_bytes.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace psflow::internal {
namespace {

std::string human_bytes(int64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < std::size(kUnits)) {
    value /= 1024.0;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

}  // namespace

std::string ps_bytes_line(const std::vector<int64_t>& bytes) {
  std::string line = "ps bytes:";
  for (size_t i = 0; i < bytes.size(); ++i) {
    absl::StrAppend(&line, i == 0 ? " " : ", ", "ps/", i, " ", human_bytes(bytes[i]));
  }
  if (bytes.size() > 1) {
    const auto [smallest, largest] = std::minmax_element(bytes.begin(), bytes.end());
    if (*smallest > 0) {
      absl::StrAppend(
          &line, absl::StrFormat(" (largest/smallest %.2f)",
                                 static_cast<double>(*largest) / static_cast<double>(*smallest)));
    }
  }
  return line;
}

}  // namespace psflow::internal

#include "train/partitioner_flag.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace psflow::internal {

std::string min_size_spec_for(int num_ps) {
  return absl::StrCat("min_size:", kAutoMinShardBytes, ":", std::max(1, num_ps));
}

absl::StatusOr<Partitioner> parse_partitioner(const std::string& spec, int num_ps) {
  if (spec.empty() || spec == "none") return Partitioner(nullptr);
  if (spec == kAutoPartitioner) return parse_partitioner(min_size_spec_for(num_ps), num_ps);
  std::vector<std::string> parts = absl::StrSplit(spec, ':');
  std::vector<int64_t> numbers;
  for (size_t i = 1; i < parts.size(); ++i) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(parts[i], &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--partitioner '", spec, "': '", parts[i], "' is not a whole number"));
    }
    numbers.push_back(v);
  }
  const auto usage = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "--partitioner '", spec,
        "' is not understood; use auto, none, fixed:<shards>, min_size:<bytes>[:<max_shards>] or "
        "max_size:<bytes>[:<max_shards>]"));
  };
  if (parts[0] == "fixed" && numbers.size() == 1) {
    return fixed_shards_partitioner(static_cast<int>(numbers[0]));
  }
  if ((parts[0] == "min_size" || parts[0] == "max_size") && !numbers.empty() &&
      numbers.size() <= 2) {
    const int max_shards = numbers.size() == 2 ? static_cast<int>(numbers[1]) : 0;
    if (parts[0] == "min_size") return min_size_partitioner(numbers[0], std::max(1, max_shards));
    return max_size_partitioner(numbers[0], max_shards);
  }
  return usage();
}

absl::StatusOr<VariablePlacement> parse_placement(const std::string& name) {
  for (VariablePlacement p : {VariablePlacement::kFewestBytes, VariablePlacement::kRoundRobin}) {
    if (name == variable_placement_name(p)) return p;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--placement '", name,
                   "' is not known; use fewest_bytes (the ps holding the fewest bytes, the "
                   "default) or round_robin (TF's order)"));
}

}  // namespace psflow::internal

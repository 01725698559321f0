#include "cluster/slurm_hostlist.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/status_macros.h"

namespace psflow::internal {
namespace {

constexpr std::string_view kHostlistExample = "n[1-2],m5,o[3-4,6,7-9]";
constexpr std::string_view kTasksPerNodeExample = "2(x3),1";
constexpr int kMaxDigits = 18;  // Any 18-digit number fits in int64_t.
constexpr size_t kMaxQuotedChars = 80;

std::string quote(std::string_view text) { return quote_slurm_value(text); }

bool is_digit(char c) { return c >= '0' && c <= '9'; }

absl::Status hostlist_error(std::string_view hostlist, std::string_view detail) {
  return absl::InvalidArgumentError(absl::StrCat("Invalid hostlist format ", quote(hostlist), ": ",
                                                 av(detail), ". Expected a Slurm node list like ",
                                                 quote(kHostlistExample), "."));
}

absl::Status tasks_error(std::string_view tasks_per_node, std::string_view detail) {
  return absl::InvalidArgumentError(absl::StrCat(
      "Invalid tasks-per-node list format ", quote(tasks_per_node), ": ", av(detail),
      ". Expected comma-separated task counts N or N(xR) (R nodes running N tasks each) like ",
      quote(kTasksPerNodeExample), "."));
}

// a + b and a * b for non-negative counts, saturating just above the limit,
// so that no sum or product of counts can overflow.
int64_t add_capped(int64_t a, int64_t b) { return std::min(a + b, kMaxSlurmHosts + 1); }
int64_t mul_capped(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > (kMaxSlurmHosts + 1) / b ? kMaxSlurmHosts + 1 : std::min(a * b, kMaxSlurmHosts + 1);
}

// A non-empty run of at most kMaxDigits digits.
absl::StatusOr<int64_t> parse_number(std::string_view digits, std::string_view what) {
  if (digits.empty()) return absl::InvalidArgumentError(absl::StrCat("empty ", av(what)));
  if (digits.size() > static_cast<size_t>(kMaxDigits)) {
    return absl::InvalidArgumentError(
        absl::StrCat(av(what), " ", quote(digits), " has more than ", kMaxDigits, " digits"));
  }
  int64_t value = 0;
  for (char c : digits) {
    if (!is_digit(c)) {
      return absl::InvalidArgumentError(absl::StrCat(av(what), " ", quote(digits), " holds ",
                                                     quote(std::string_view(&c, 1)),
                                                     ", not a digit"));
    }
    value = value * 10 + (c - '0');
  }
  return value;
}

int digits_of(int64_t value) {
  int digits = 1;
  for (; value >= 10; value /= 10) ++digits;
  return digits;
}

// One item of a bracket group: lo..hi, each zero-padded to `width`.
struct Range {
  int64_t lo = 0;
  int64_t hi = 0;
  int width = 0;
};
using Group = std::vector<Range>;
// A host pattern: literal text and bracket groups, in order.
using Segment = std::variant<std::string_view, Group>;

struct Pattern {
  std::vector<Segment> segments;
  int64_t count = 1;      // Hosts it expands to (capped at kMaxSlurmHosts + 1).
  int64_t max_chars = 0;  // Longest host name it expands to.
};

// Splits at commas outside brackets, checking that brackets balance and do
// not nest, and that no host is empty.
absl::StatusOr<std::vector<std::string_view>> split_hostlist(std::string_view hostlist) {
  std::vector<std::string_view> hosts;
  size_t start = 0;
  size_t open = std::string_view::npos;  // Position of the unclosed '['.
  for (size_t i = 0; i < hostlist.size(); ++i) {
    const char c = hostlist[i];
    if (c == '[') {
      if (open != std::string_view::npos) {
        return hostlist_error(hostlist, absl::StrCat("'[' at character ", i + 1,
                                                     " opens a bracket inside the one opened at "
                                                     "character ",
                                                     open + 1, " (brackets do not nest)"));
      }
      open = i;
    } else if (c == ']') {
      if (open == std::string_view::npos) {
        return hostlist_error(hostlist, absl::StrCat("']' at character ", i + 1, " closes no '['"));
      }
      open = std::string_view::npos;
    } else if (c == ',' && open == std::string_view::npos) {
      if (i == start) {
        return hostlist_error(hostlist,
                              absl::StrCat("empty host name before ',' at character ", i + 1));
      }
      hosts.push_back(hostlist.substr(start, i - start));
      start = i + 1;
    }
  }
  if (open != std::string_view::npos) {
    return hostlist_error(hostlist,
                          absl::StrCat("'[' at character ", open + 1, " is never closed"));
  }
  if (start < hostlist.size()) {
    hosts.push_back(hostlist.substr(start));
  } else if (!hostlist.empty()) {
    return hostlist_error(hostlist, "empty host name after the last ','");
  }
  return hosts;
}

// The inside of one bracket group, e.g. "3-4,6,7-9".
absl::StatusOr<Group> parse_group(std::string_view inside) {
  Group group;
  size_t start = 0;
  while (true) {
    const size_t comma = inside.find(',', start);
    const std::string_view item = inside.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("empty item in \"[", av(inside), "]\"; write numbers or ranges like 3-5"));
    }
    const size_t dash = item.find('-');
    Range range;
    if (dash == std::string_view::npos) {
      PSFLOW_ASSIGN_OR_RETURN(range.lo, parse_number(item, "number"));
      range.hi = range.lo;
      range.width = static_cast<int>(item.size());
    } else {
      const std::string_view lo = item.substr(0, dash);
      const std::string_view hi = item.substr(dash + 1);
      PSFLOW_ASSIGN_OR_RETURN(range.lo, parse_number(lo, "range start"));
      PSFLOW_ASSIGN_OR_RETURN(range.hi, parse_number(hi, "range end"));
      if (range.lo > range.hi) {
        return absl::InvalidArgumentError(absl::StrCat(
            "range ", quote(item), " runs backwards; write the smaller number first, like ",
            quote(absl::StrCat(av(hi), "-", av(lo)))));
      }
      range.width = static_cast<int>(lo.size());
    }
    group.push_back(range);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return group;
}

// One host of the list ("o[3-4,6]x", split_hostlist checked its brackets).
absl::StatusOr<Pattern> parse_pattern(std::string_view host) {
  Pattern pattern;
  size_t i = 0;
  while (i < host.size()) {
    const size_t open = host.find('[', i);
    if (open != i) {
      const std::string_view literal = host.substr(i, open - i);
      pattern.segments.emplace_back(literal);
      pattern.max_chars += static_cast<int64_t>(literal.size());
      if (open == std::string_view::npos) break;
    }
    const size_t close = host.find(']', open);
    PSFLOW_ASSIGN_OR_RETURN(Group group, parse_group(host.substr(open + 1, close - open - 1)));
    int64_t count = 0;
    int max_width = 0;
    for (const Range& range : group) {
      count = add_capped(count, std::min(range.hi - range.lo + 1, kMaxSlurmHosts + 1));
      max_width = std::max({max_width, range.width, digits_of(range.hi)});
    }
    pattern.count = mul_capped(pattern.count, count);
    pattern.max_chars += max_width;
    pattern.segments.emplace_back(std::move(group));
    i = close + 1;
  }
  return pattern;
}

std::string padded(int64_t value, int width) {
  std::string digits = absl::StrCat(value);
  if (static_cast<int>(digits.size()) < width) {
    digits.insert(0, static_cast<size_t>(width) - digits.size(), '0');
  }
  return digits;
}

// Appends the hosts of a checked pattern: a product over its segments.
void expand_pattern(const Pattern& pattern, std::vector<std::string>& hosts) {
  std::vector<std::string> names = {std::string()};
  for (const Segment& segment : pattern.segments) {
    if (const auto* literal = std::get_if<std::string_view>(&segment)) {
      for (std::string& name : names) name.append(*literal);
      continue;
    }
    std::vector<std::string> values;
    for (const Range& range : std::get<Group>(segment)) {
      for (int64_t v = range.lo; v <= range.hi; ++v) values.push_back(padded(v, range.width));
    }
    std::vector<std::string> product;
    product.reserve(names.size() * values.size());
    for (const std::string& name : names) {
      for (const std::string& value : values) product.push_back(absl::StrCat(name, value));
    }
    names = std::move(product);
  }
  for (std::string& name : names) hosts.push_back(std::move(name));
}

}  // namespace

std::string quote_slurm_value(std::string_view value) {
  const bool cut = value.size() > kMaxQuotedChars;
  return absl::StrCat("\"", absl::CHexEscape(av(value.substr(0, kMaxQuotedChars))),
                      cut ? "..." : "", "\"");
}

absl::StatusOr<std::vector<std::string>> expand_hostlist(std::string_view hostlist) {
  PSFLOW_ASSIGN_OR_RETURN(std::vector<std::string_view> parts, split_hostlist(hostlist));
  // Check everything, and count, before expanding anything.
  std::vector<Pattern> patterns;
  patterns.reserve(parts.size());
  int64_t total = 0;
  for (std::string_view part : parts) {
    absl::StatusOr<Pattern> pattern = parse_pattern(part);
    if (!pattern.ok()) {
      return hostlist_error(
          hostlist, absl::StrCat("in host ", quote(part), ", ", pattern.status().message()));
    }
    if (pattern->max_chars > kMaxSlurmHostNameChars) {
      return hostlist_error(
          hostlist,
          absl::StrCat("host ", quote(part), " expands to names of up to ", pattern->max_chars,
                       " characters, more than ", kMaxSlurmHostNameChars));
    }
    total = add_capped(total, pattern->count);
    if (total > kMaxSlurmHosts) {
      return hostlist_error(hostlist,
                            absl::StrCat("it expands to more than ", kMaxSlurmHosts, " hosts"));
    }
    patterns.push_back(*std::move(pattern));
  }
  std::vector<std::string> hosts;
  hosts.reserve(static_cast<size_t>(total));
  for (const Pattern& pattern : patterns) expand_pattern(pattern, hosts);
  return hosts;
}

absl::StatusOr<std::vector<int>> expand_tasks_per_node(std::string_view tasks_per_node) {
  struct Item {
    int tasks = 0;
    int64_t repeat = 1;
  };
  std::vector<Item> items;
  int64_t nodes = 0;
  size_t start = 0;
  while (true) {
    const size_t comma = tasks_per_node.find(',', start);
    const std::string_view item = tasks_per_node.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item.empty()) {
      return tasks_error(tasks_per_node, comma == std::string_view::npos && start == 0
                                             ? std::string_view("the list is empty")
                                             : std::string_view("it has an empty item"));
    }
    std::string_view count = item;
    std::string_view repeat;
    if (const size_t paren = item.find('('); paren != std::string_view::npos) {
      count = item.substr(0, paren);
      const std::string_view suffix = item.substr(paren);
      if (suffix.size() < 4 || suffix.substr(0, 2) != "(x" || suffix.back() != ')') {
        return tasks_error(tasks_per_node, absl::StrCat("item ", quote(item),
                                                        " does not end in (xR), R a node count"));
      }
      repeat = suffix.substr(2, suffix.size() - 3);
    }
    Item parsed;
    absl::StatusOr<int64_t> tasks = parse_number(count, "task count");
    if (!tasks.ok()) {
      return tasks_error(tasks_per_node,
                         absl::StrCat("in item ", quote(item), ", ", tasks.status().message()));
    }
    if (*tasks > kMaxSlurmTasksPerNode) {
      return tasks_error(tasks_per_node,
                         absl::StrCat("item ", quote(item), " puts ", *tasks,
                                      " tasks on one node, more than ", kMaxSlurmTasksPerNode));
    }
    parsed.tasks = static_cast<int>(*tasks);
    if (!repeat.empty()) {
      absl::StatusOr<int64_t> times = parse_number(repeat, "node count");
      if (!times.ok()) {
        return tasks_error(tasks_per_node,
                           absl::StrCat("in item ", quote(item), ", ", times.status().message()));
      }
      if (*times == 0) {
        return tasks_error(tasks_per_node,
                           absl::StrCat("item ", quote(item), " repeats over zero nodes"));
      }
      parsed.repeat = *times;
    }
    nodes = add_capped(nodes, std::min(parsed.repeat, kMaxSlurmHosts + 1));
    if (nodes > kMaxSlurmHosts) {
      return tasks_error(tasks_per_node,
                         absl::StrCat("it covers more than ", kMaxSlurmHosts, " nodes"));
    }
    items.push_back(parsed);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  std::vector<int> result;
  result.reserve(static_cast<size_t>(nodes));
  for (const Item& item : items)
    result.insert(result.end(), static_cast<size_t>(item.repeat), item.tasks);
  return result;
}

}  // namespace psflow::internal

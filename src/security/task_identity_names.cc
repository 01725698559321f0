#include "security/task_identity_names.h"

#include <arpa/inet.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/strings.h"

namespace psflow::internal {
namespace {

std::string_view strip_brackets(std::string_view host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    return host.substr(1, host.size() - 2);
  }
  return host;
}

// 4 or 6 for an IP literal, 0 for a name.
int ip_version(std::string_view host, unsigned char* bytes) {
  const std::string text(host);
  if (inet_pton(AF_INET, text.c_str(), bytes) == 1) return 4;
  if (inet_pton(AF_INET6, text.c_str(), bytes) == 1) return 6;
  return 0;
}

}  // namespace

std::string task_common_name(std::string_view job, int index) {
  return absl::StrCat(av(job), "/", index);
}

std::string task_file_stem(std::string_view job, int index) {
  return absl::StrCat(av(job), "-", index);
}

bool is_loopback_name(std::string_view host) {
  host = strip_brackets(host);
  if (absl::AsciiStrToLower(av(host)) == "localhost") return true;
  unsigned char bytes[16] = {};
  switch (ip_version(host, bytes)) {
    case 4: return bytes[0] == 127;
    case 6:
      return std::all_of(bytes, bytes + 15, [](unsigned char b) { return b == 0; }) &&
             bytes[15] == 1;
    default: return false;
  }
}

std::vector<std::string> subject_alt_names(std::string_view host, bool also_loopback) {
  host = strip_brackets(host);
  std::vector<std::string> names;
  auto add = [&names](std::string name) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(std::move(name));
    }
  };
  unsigned char bytes[16] = {};
  if (!host.empty()) {
    add(absl::StrCat(ip_version(host, bytes) != 0 ? "IP:" : "DNS:", av(host)));
  }
  if (also_loopback || is_loopback_name(host)) {
    add("DNS:localhost");
    add("IP:127.0.0.1");
    add("IP:::1");
  }
  return names;
}

}  // namespace psflow::internal

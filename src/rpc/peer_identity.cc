#include "rpc/peer_identity.h"

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/strings.h"

namespace psflow::internal {
namespace {

constexpr size_t kMaxJobBytes = 64;
constexpr int kMaxIndex = 1000000;
// A CN longer than this is shown cut (it comes from the peer).
constexpr size_t kMaxShownCommonName = 128;

bool valid_job(std::string_view job) {
  if (job.empty() || job.size() > kMaxJobBytes) return false;
  for (const char c : job) {
    if (!absl::ascii_islower(c) && !absl::ascii_isdigit(c) && c != '_' && c != '-') return false;
  }
  return true;
}

bool parse_index(std::string_view text, int* index) {
  if (text.empty() || text.size() > 7) return false;
  for (const char c : text) {
    if (!absl::ascii_isdigit(c)) return false;
  }
  if (text.size() > 1 && text[0] == '0') return false;
  int value = 0;
  if (!absl::SimpleAtoi(av(text), &value) || value < 0 || value >= kMaxIndex) return false;
  *index = value;
  return true;
}

std::string shown(std::string_view text) {
  std::string out = absl::CHexEscape(av(text.substr(0, kMaxShownCommonName)));
  if (text.size() > kMaxShownCommonName) absl::StrAppend(&out, "...");
  return out;
}

// "ipv4:127.0.0.1:5123" -> "ipv4:127.0.0.1"; "ipv6:[::1]:5123" -> "ipv6:[::1]".
std::string_view without_port(std::string_view peer) {
  const size_t colon = peer.rfind(':');
  const size_t scheme = peer.find(':');
  if (colon == std::string_view::npos || colon == scheme) return peer;
  if (absl::StartsWith(av(peer), "unix")) return peer;
  return peer.substr(0, colon);
}

}  // namespace

std::string PeerIdentity::describe() const {
  if (!authenticated) return absl::StrCat("an unauthenticated peer (", shown(peer), ")");
  if (job.empty()) {
    return absl::StrCat("a peer whose certificate names no task (CN '", common_name,
                        "', not <job>/<index>)");
  }
  return absl::StrCat(job, "/", index);
}

std::string PeerIdentity::owner() const {
  if (!authenticated) return absl::StrCat("host:", av(without_port(peer)));
  if (job.empty()) return absl::StrCat("cn:?", common_name);
  return absl::StrCat("cn:", job, "/", index);
}

PeerIdentity identity_from_common_name(std::string_view common_name) {
  PeerIdentity identity;
  identity.authenticated = true;
  identity.common_name = shown(common_name);
  const size_t slash = common_name.find('/');
  if (slash == std::string_view::npos) return identity;
  const std::string_view job = common_name.substr(0, slash);
  int index = -1;
  if (!valid_job(job) || !parse_index(common_name.substr(slash + 1), &index)) return identity;
  identity.job = std::string(job);
  identity.index = index;
  return identity;
}

PeerIdentity peer_identity(const grpc::ServerContextBase& context) {
  PeerIdentity identity;
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  // gRPC marks the peer authenticated only once its certificate verified
  // against the CA (servers require and verify client certificates).
  if (auth != nullptr && auth->IsPeerAuthenticated()) {
    const std::vector<grpc::string_ref> names = auth->FindPropertyValues("x509_common_name");
    // A certificate has one CN; were there several, the first decides.
    identity = identity_from_common_name(
        names.empty() ? std::string_view() : std::string_view(names[0].data(), names[0].size()));
  }
  identity.peer = context.peer();
  return identity;
}

bool is_loopback_peer(std::string_view peer) {
  const absl::string_view p = av(peer);
  return absl::StartsWith(p, "ipv4:127.") || absl::StartsWith(p, "ipv6:[::1]") ||
         absl::StartsWith(p, "ipv6:[::ffff:127.") || absl::StartsWith(p, "unix:") ||
         absl::StartsWith(p, "unix-abstract:");
}

}  // namespace psflow::internal

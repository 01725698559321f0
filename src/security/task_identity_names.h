// The names a task's certificate carries (docs/security.md): Subject CN
// "<job>/<index>", subject alternative names for its address host, and the
// file names of its credentials in a credentials directory.
#ifndef PSFLOW_SECURITY_TASK_IDENTITY_NAMES_H_
#define PSFLOW_SECURITY_TASK_IDENTITY_NAMES_H_

#include <string>
#include <string_view>
#include <vector>

namespace psflow::internal {

// "ps/1": the Subject CN of task 1 of job "ps".
[[nodiscard]] std::string task_common_name(std::string_view job, int index);
// "ps-1": the stem of its files (ps-1.crt, ps-1.key).
[[nodiscard]] std::string task_file_stem(std::string_view job, int index);
inline constexpr char kCaCertFile[] = "ca.crt";
inline constexpr char kCaKeyFile[] = "ca.key";

// True for "localhost", 127.0.0.0/8 and ::1 (brackets allowed).
[[nodiscard]] bool is_loopback_name(std::string_view host);

// OpenSSL subjectAltName entries for a task at `host`: "IP:10.0.0.5" for an
// IP literal, "DNS:ps-0.svc" for a name; a loopback host also gets
// "DNS:localhost", "IP:127.0.0.1" and "IP:::1", so that clients reach it by
// any loopback name; so does any host with `also_loopback` (a cluster
// reached through local proxies or port forwards). No duplicates, in that
// order.
[[nodiscard]] std::vector<std::string> subject_alt_names(std::string_view host,
                                                         bool also_loopback = false);

}  // namespace psflow::internal

#endif  // PSFLOW_SECURITY_TASK_IDENTITY_NAMES_H_

// Test helper: a cluster CA and task certificates made with the openssl
// command line, in the layout tasks read (--tls-dir): ca.crt and
// <job>-<index>.crt / .key, keys 0600. Certificates of any CN can be made,
// also ones `psflow certs` would never issue (a second chief, a CN that
// names no task), to test what a valid certificate with the wrong role may
// do. Header-only; used by the multi-process tests in this directory.
#ifndef PSFLOW_TESTS_INTEGRATION_TEST_CERTIFICATES_H_
#define PSFLOW_TESTS_INTEGRATION_TEST_CERTIFICATES_H_

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "test_process.h"

namespace psflow::internal::testing {

inline constexpr char kOpensslBinary[] = "/usr/bin/openssl";

// Runs openssl with `args`; the error carries its stderr.
inline absl::Status run_openssl(std::vector<std::string> args) {
  args.insert(args.begin(), kOpensslBinary);
  TestProcess openssl(args, test_environment());
  if (openssl.pid() <= 0) return absl::InternalError("cannot start " + std::string(kOpensslBinary));
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  const std::string err = openssl.read_stderr(deadline);
  const int code = openssl.wait_exit_code(deadline);
  if (code != 0) {
    return absl::InternalError(absl::StrCat("openssl ", args[1], " exited with ", code, ": ", err,
                                            " (install openssl: scripts/install-deps.sh)"));
  }
  return absl::OkStatus();
}

inline std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A CA (ca.crt, ca.key) in `dir`, which must exist.
inline absl::Status make_test_ca(const std::string& dir) {
  absl::Status s =
      run_openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                   "-nodes", "-keyout", dir + "/ca.key", "-out", dir + "/ca.crt", "-days", "2",
                   "-subj", "/CN=psflow test CA", "-addext", "basicConstraints=critical,CA:TRUE",
                   "-addext", "keyUsage=critical,keyCertSign,cRLSign"});
  if (!s.ok()) return s;
  const std::string key = dir + "/ca.key";
  if (::chmod(key.c_str(), 0600) != 0) return absl::InternalError("cannot chmod " + key);
  return absl::OkStatus();
}

// <stem>.crt and <stem>.key in `dir`: Subject CN `common_name`, SANs
// 127.0.0.1 and localhost, signed by the CA in `ca_dir` (make_test_ca).
inline absl::Status make_test_certificate(const std::string& dir, const std::string& stem,
                                          const std::string& common_name,
                                          const std::string& ca_dir) {
  const std::string key = dir + "/" + stem + ".key";
  const std::string csr = dir + "/" + stem + ".csr";
  const std::string ext = dir + "/" + stem + ".ext";
  // -subj separates RDNs with '/': the CN's own slashes are escaped.
  const std::string subject = "/CN=" + absl::StrReplaceAll(common_name, {{"/", "\\/"}});
  absl::Status s = run_openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                                "-nodes", "-keyout", key, "-out", csr, "-subj", subject});
  if (!s.ok()) return s;
  {
    std::ofstream out(ext);
    out << "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
           "keyUsage=critical,digitalSignature,keyEncipherment\n"
           "extendedKeyUsage=serverAuth,clientAuth\n";
  }
  s = run_openssl({"x509", "-req", "-in", csr, "-CA", ca_dir + "/ca.crt", "-CAkey",
                   ca_dir + "/ca.key", "-CAcreateserial", "-out", dir + "/" + stem + ".crt",
                   "-days", "2", "-extfile", ext});
  if (!s.ok()) return s;
  if (::chmod(key.c_str(), 0600) != 0) return absl::InternalError("cannot chmod " + key);
  return absl::OkStatus();
}

}  // namespace psflow::internal::testing

#endif  // PSFLOW_TESTS_INTEGRATION_TEST_CERTIFICATES_H_

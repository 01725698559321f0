// What make tsan's TSAN_OPTIONS (the Makefile) make of code TSan cannot
// see: Debian's gRPC, abseil and OpenSSL are not built with TSan. With
// ignore_noninstrumented_modules=1 the memory calls such a library makes
// (memcpy, memset, free) are not reported, since the loads and stores
// around them are invisible anyway and their reports were hand-offs
// ordered by the library's own atomics; the library's locks still order,
// and a race between two accesses of psflow code is still reported.
// Built and run in TSan builds only (src/CMakeLists.txt), against
// psflow_tsan_probe (src/base/tsan_probe/).
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct ProbeRun {
  int exit_code = -1;
  std::string output;  // the probe's stderr: TSan's reports
};

// Runs one case of the probe under this test's TSAN_OPTIONS (make tsan's)
// plus `extra`, with the reports on stderr rather than in make tsan's
// report files (which would fail the run for the races this test makes on
// purpose).
ProbeRun run_probe(const std::string& which, const std::string& extra = "") {
  const char* inherited = std::getenv("TSAN_OPTIONS");
  const std::string options =
      absl::StrCat(inherited == nullptr ? "" : inherited, ":log_path=stderr:exitcode=0", extra);
  const std::string command =
      absl::StrCat("TSAN_OPTIONS='", options, "' '", PSFLOW_TSAN_PROBE_PATH, "' ", which, " 2>&1");
  ProbeRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return run;
  char chunk[4096];
  // Bounded: the probe's cases end (each thread pair is joined, the one
  // wait is bounded to 10 s), and then the pipe reads EOF.
  for (size_t n; (n = std::fread(chunk, 1, sizeof(chunk), pipe)) > 0;) run.output.append(chunk, n);
  const int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

constexpr char kRace[] = "WARNING: ThreadSanitizer: data race";

TEST(TsanOptionsTest, MakeTsanIgnoresWhatUninstrumentedCodeDoesThroughIntercepts) {
  const char* inherited = std::getenv("TSAN_OPTIONS");
  ASSERT_NE(inherited, nullptr) << "run under make tsan, which sets TSAN_OPTIONS";
  EXPECT_THAT(std::string(inherited), HasSubstr("ignore_noninstrumented_modules=1"));
  const ProbeRun run = run_probe("library-copy");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, Not(HasSubstr(kRace)));
}

// The control of the test above: the same case is a race TSan reports
// when the option is off, so the case does exercise one.
TEST(TsanOptionsTest, WithoutTheOptionTheLibrarysCopyIsReported) {
  const ProbeRun run = run_probe("library-copy", ":ignore_noninstrumented_modules=0");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr(kRace));
}

TEST(TsanOptionsTest, AnUninstrumentedLibrarysMutexStillOrders) {
  const ProbeRun run = run_probe("library-sync");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, Not(HasSubstr(kRace)));
}

TEST(TsanOptionsTest, ARaceBetweenTwoInstrumentedAccessesIsStillReported) {
  const ProbeRun run = run_probe("own-race");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr(kRace));
  EXPECT_THAT(run.output, HasSubstr("write_value"));
}

}  // namespace
}  // namespace psflow::internal

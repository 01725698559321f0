#!/usr/bin/env bash
# make tsan's test run: ctest in the TSan build with every process's
# ThreadSanitizer output in files of one directory (TSAN_OPTIONS log_path),
# then every report printed and the run failed if there is one.
#
# Why files: the multi-process tests start psflow tasks whose stderr goes
# to a pipe the test reads only in part, and stops most of them with
# SIGKILL. A report a task printed to stderr would be lost and its exit
# code (66) never seen; a report in a file of its own survives the kill.
#
# Usage: scripts/run-tsan-tests.sh <tsan build dir> [ctest args...]
set -uo pipefail
build_dir=$(cd "$1" && pwd)
shift
reports="$build_dir/tsan-reports"
rm -rf "$reports"
mkdir -p "$reports"
# exitcode=0: a process with reports exits with its own code, so that a
# test checking a task's or the CLI's exit code fails only on a real
# failure; the reports fail the run below instead.
export TSAN_OPTIONS="${TSAN_OPTIONS:-}:log_path=$reports/report:exitcode=0"
start=$(date +%s)
(cd "$build_dir" && ctest --output-on-failure "$@")
status=$?
echo "run-tsan-tests: ctest took $(( $(date +%s) - start )) s (exit $status)"
mapfile -t files < <(find "$reports" -type f -name 'report.*' | sort)
if [ "${#files[@]}" -gt 0 ]; then
  for f in "${files[@]}"; do
    echo "==== $f"
    cat "$f"
  done
  echo "run-tsan-tests: ${#files[@]} process(es) wrote ThreadSanitizer reports (above)" >&2
  exit 1
fi
echo "run-tsan-tests: no ThreadSanitizer reports"
exit "$status"

#!/usr/bin/env bash
# Runs one libFuzzer harness for a bounded time over its seed corpus.
#   run_fuzzer.sh HARNESS SEED_DIR WORK_DIR
# PSFLOW_FUZZ_SECONDS (default 20) bounds the run. New inputs are written to
# WORK_DIR/corpus, crashes to WORK_DIR/ (crash-<sha1>, leak-, timeout-,
# oom-), never to SEED_DIR. Exit status: libFuzzer's (0 when nothing was
# found). A crash input becomes a seed and a regression test (see
# docs/security.md, "Fuzzing and sanitizers").
set -euo pipefail
harness=$1 seeds=$2 work=$3
seconds=${PSFLOW_FUZZ_SECONDS:-20}
mkdir -p "$work/corpus"
# -timeout: an input that takes over 10 s is reported as a hang;
# -rss_limit_mb: one that needs over 2 GiB as out-of-memory; -max_len:
# larger than every seed, small enough for thousands of runs a second.
exec "$harness" "$work/corpus" "$seeds" -max_total_time="$seconds" -timeout=10 \
  -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
  -artifact_prefix="$work/"

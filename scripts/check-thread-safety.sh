#!/usr/bin/env bash
# Clang's thread-safety analysis over every translation unit of our own
# code: each is compiled by Debian's clang++ with the flags of the main
# build (from its compile_commands.json) plus -Wthread-safety, as errors.
# Only the front end runs (-fsyntax-only): the analysis needs no code
# generation, so the check costs a fraction of a second build. GCC ignores
# the ABSL_GUARDED_BY / ABSL_LOCKS_EXCLUDED annotations; this is where they
# are checked.
#
#   scripts/check-thread-safety.sh [BUILD_DIR [REGEX]]
# BUILD_DIR defaults to build; REGEX limits the check to the source files
# whose path matches it (e.g. 'src/ps/').
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
only=${2:-}
clangxx=${CLANGXX:-clang++-14}
db=$build/compile_commands.json
if ! command -v "$clangxx" >/dev/null; then
  echo "check-thread-safety: $clangxx not found; scripts/install-deps.sh installs it" >&2
  exit 1
fi
if [ ! -f "$db" ]; then
  echo "check-thread-safety: $db not found; configure the build first (make build)" >&2
  exit 1
fi
jobs=${JOBS:-$(nproc)}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# One line per translation unit of ours: directory, then the command with
# the compiler, launcher and output flags removed.
python3 - "$db" "$root" "$only" > "$out/commands" <<'PY'
import json, re, shlex, sys
db, root, only = sys.argv[1], sys.argv[2], sys.argv[3]
ours = tuple(f"{root}/{d}/" for d in ("src", "tests", "bench", "examples"))
for entry in json.load(open(db)):
    f = entry["file"]
    if not f.startswith(ours) or (only and not re.search(only, f)):
        continue
    args = shlex.split(entry["command"])
    while args and ("ccache" in args[0] or args[0].endswith(("c++", "g++", "gcc", "cc"))):
        args.pop(0)
    kept, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-c", "-MD", "-MMD"):
            continue
        kept.append(a)
    print(entry["directory"] + "\t" + shlex.join(kept))
PY
total=$(wc -l < "$out/commands")
echo "check-thread-safety: $total translation units, $jobs at a time, with $clangxx"

export clangxx out
check_one() {
  local dir=${1%%$'\t'*} cmd=${1#*$'\t'}
  local log
  log=$(mktemp "$out/log.XXXXXX")
  if ! (cd "$dir" && eval "\"$clangxx\" -fsyntax-only -Wthread-safety -Werror $cmd") >"$log" 2>&1; then
    cat "$log" >&2
    echo fail >> "$log.failed"
  fi
}
export -f check_one
tr '\n' '\0' < "$out/commands" | xargs -0 -P "$jobs" -I{} bash -c 'check_one "$1"' _ {}
failed=$(find "$out" -name '*.failed' | wc -l)
if [ "$failed" -ne 0 ]; then
  echo "check-thread-safety: $failed of $total translation units fail clang's checks (above)" >&2
  exit 1
fi
echo "check-thread-safety: all $total translation units pass"

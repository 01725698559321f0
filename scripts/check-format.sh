#!/usr/bin/env bash
# Checks (default) or applies (--fix) the house style of .clang-format to
# every C++ file the repository tracks, with Debian's clang-format-14 (the
# version is pinned: other versions format some constructs differently).
set -euo pipefail
cd "$(dirname "$0")/.."
clang_format=${CLANG_FORMAT:-clang-format-14}
if ! command -v "$clang_format" >/dev/null; then
  echo "check-format: $clang_format not found; scripts/install-deps.sh installs it" >&2
  exit 1
fi
mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.cc' '*.h' | grep -v '^proto/')
if [ "${1:-}" = "--fix" ]; then
  "$clang_format" -i "${files[@]}"
  echo "check-format: formatted ${#files[@]} files"
  exit 0
fi
if ! "$clang_format" --dry-run --Werror "${files[@]}" 2>"${TMPDIR:-/tmp}/check-format.$$"; then
  grep -E '^[^ ].*: error:' "${TMPDIR:-/tmp}/check-format.$$" | cut -d: -f1 | sort -u | sed 's/^/  /' >&2
  rm -f "${TMPDIR:-/tmp}/check-format.$$"
  echo "check-format: the files above differ from .clang-format; run 'make format'" >&2
  exit 1
fi
rm -f "${TMPDIR:-/tmp}/check-format.$$"
echo "check-format: ${#files[@]} files match .clang-format"

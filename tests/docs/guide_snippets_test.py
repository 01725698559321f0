#!/usr/bin/env python3
"""The code in docs/ guides is quoted from files that are compiled and tested.

Every ```cpp and ```cmake block of a guide must follow a marker line

  <!-- snippet: examples/custom_training_loop.cc -->

naming a file of this repository, and its lines must appear in that file as
consecutive lines, each with the same added indentation (a snippet may be
cut out of a function body). So a change to the example that the guide does
not follow fails here instead of leaving the guide wrong. Run by ctest
(examples_guide_snippets_test):

  python3 tests/docs/guide_snippets_test.py docs/custom_model.md
"""

import os
import re
import sys

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECKED_LANGUAGES = {"cpp", "c++", "cmake"}
MARKER = re.compile(r"^<!-- snippet: (\S+) -->$")


def blocks(text):
    """(language, first line number, lines, marker path or None) of each fenced block."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\S*)$", lines[i])
        if not fence:
            i += 1
            continue
        start = i
        end = start + 1
        while end < len(lines) and lines[end] != "```":
            end += 1
        marker = None
        before = start - 1
        while before >= 0 and lines[before].strip() == "":
            before -= 1
        if before >= 0:
            found = MARKER.match(lines[before].strip())
            marker = found.group(1) if found else None
        yield fence.group(1), start + 1, lines[start + 1:end], marker
        i = end + 1


def found_in(snippet, source):
    """Whether `snippet` is a run of consecutive lines of `source`, indented alike."""
    first = next((line for line in snippet if line.strip()), None)
    if first is None:
        return False
    for i, line in enumerate(source):
        if not line.endswith(first) or line[:len(line) - len(first)].strip():
            continue
        indent = line[:len(line) - len(first)]
        if i + len(snippet) > len(source):
            continue
        if all((not want.strip() and not got.strip()) or got == indent + want
               for want, got in zip(snippet, source[i:i + len(snippet)])):
            return True
    return False


def check(guide):
    with open(guide) as f:
        text = f.read()
    failures = []
    checked = 0
    for language, line, snippet, marker in blocks(text):
        if language not in CHECKED_LANGUAGES:
            continue
        where = f"{guide}:{line}"
        if marker is None:
            failures.append(f"{where}: a ```{language} block without a <!-- snippet: FILE --> "
                            "marker before it")
            continue
        path = os.path.join(SOURCE_DIR, marker)
        if not os.path.isfile(path):
            failures.append(f"{where}: the snippet's file {marker} does not exist")
            continue
        with open(path) as f:
            source = f.read().split("\n")
        if not found_in(snippet, source):
            failures.append(f"{where}: this block is not in {marker} (as consecutive lines):\n"
                            + "\n".join(snippet))
            continue
        checked += 1
    return checked, failures


def main():
    guides = sys.argv[1:] or [os.path.join(SOURCE_DIR, "docs", "custom_model.md")]
    total = 0
    failures = []
    for guide in guides:
        checked, failed = check(guide)
        total += checked
        failures += failed
    for failure in failures:
        print(f"FAILED: {failure}", file=sys.stderr)
    if failures:
        return 1
    if total == 0:
        print("FAILED: no snippet checked", file=sys.stderr)
        return 1
    print(f"{total} snippets match their files")
    return 0


if __name__ == "__main__":
    sys.exit(main())

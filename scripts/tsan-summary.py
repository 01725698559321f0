#!/usr/bin/env python3
"""Groups the ThreadSanitizer reports of a make tsan run by where they are.

Usage: scripts/tsan-summary.py <dir with report.<pid> files> [--examples N]

For each report, each of the two accesses is attributed to its first frame
that is not an interceptor (malloc, memcpy, operator new, epoll_*, ...) nor
inlined library header code (/usr/include): either psflow code (a source
path outside /usr) or the uninstrumented library it came from (libgrpc,
libssl, ...). Reports are counted per pair, most frequent first, so that
each group is classified once: a race in psflow (fixed in psflow) or a
report wholly inside an uninstrumented library (a narrow suppression in
fuzz/tsan.supp naming the library function).
"""
import argparse
import collections
import pathlib
import re

FRAME = re.compile(r"^\s+#\d+ (.*?) (\S+) \(([^+)]+)\+0x")
ACCESS = re.compile(r"^  (Read|Write|Atomic read|Atomic write|Previous [a-z ]+) of size")
INTERCEPTORS = ("memcpy", "memmove", "memset", "memcmp", "free", "malloc", "realloc",
                "calloc", "operator new", "operator delete", "epoll_", "pthread_", "close",
                "read", "write", "strlen", "strdup", "posix_memalign", "sendmsg", "recvmsg",
                "eventfd", "__interceptor", "__tsan")


def reports(directory):
    for path in sorted(pathlib.Path(directory).glob("report.*")):
        for block in path.read_text(errors="replace").split("=================="):
            if "WARNING: ThreadSanitizer" in block:
                yield path.name, block


def accesses(block):
    stacks, current = [], None
    for line in block.splitlines():
        if ACCESS.match(line):
            current = []
            stacks.append(current)
        elif not line.startswith("    #"):
            current = None
        elif current is not None:
            m = FRAME.match(line)
            if m:
                current.append(m.groups())
    return stacks


def origin(stack):
    for function, source, module in stack:
        if not module.startswith("lib"):
            if source == "<null>" and function.startswith(INTERCEPTORS):
                continue
            if source.startswith("/usr/"):
                continue
            return "psflow " + re.sub(r"\(.*", "", function)[:100]
        return module + " " + re.sub(r"\(.*", "", function)[:100]
    return "(interceptor only)"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("directory")
    parser.add_argument("--examples", type=int, default=0,
                        help="print the first report of the N largest groups")
    args = parser.parse_args()
    counts, example = collections.Counter(), {}
    for name, block in reports(args.directory):
        kind = re.search(r"WARNING: ThreadSanitizer: ([^(]*)", block).group(1).strip()
        key = (kind,) + tuple(sorted(origin(s) for s in accesses(block)))
        counts[key] += 1
        example.setdefault(key, (name, block))
    print(f"{sum(counts.values())} reports in {len(counts)} groups")
    for key, n in counts.most_common():
        print(f"{n:6d}  {key[0]}: " + "  <->  ".join(key[1:]))
    for key, _ in counts.most_common(args.examples):
        name, block = example[key]
        print(f"\n#### {name}: {key}\n{block}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Runs every benchmark binary in <build-dir>/bench and collects the results.

Each executable there is a Google Benchmark program (bench/*_bench.cc). This
script runs them one after another, then writes <build-dir>/bench/results.json:
a list of objects

    {"name", "value", "unit", "binary"
     [, "baseline_name", "baseline_value", "ratio"] [, "paired_baseline", "ratio"]}

where the unit is "GB/s" (1e9 bytes) for benchmarks that set bytes processed,
"items/s" for items processed, and the benchmark's time unit otherwise. A
benchmark whose label contains "baseline=<other benchmark name>" is compared
with that benchmark: ratio = value / baseline_value. A benchmark that times
its baseline itself, interleaved with its own iterations so both see the same
host load, reports a counter "ratio_vs_<baseline>"; that is its ratio, and
the baseline column reads "<baseline> (paired)". User counters named like
"p50_us" or "p99.9_ms" (latency percentiles) become extra entries
"<name>/p50" in that unit.

Prints an aligned table and exits non-zero when any binary fails, times out,
writes unreadable output, or reports a benchmark error. Standard library only.
"""

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

PERCENTILE_COUNTER = re.compile(r"^(p\d+(?:\.\d+)?)_(ns|us|ms|s)$")
PAIRED_RATIO_COUNTER = re.compile(r"^ratio_vs_(\w+)$")
BASELINE_LABEL = re.compile(r"baseline=([^\s,;]+)")


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default="build",
                        help="CMake build directory (default: build)")
    parser.add_argument("--benchmark_min_time", default=None,
                        help="passed through to every binary, e.g. 0.1")
    parser.add_argument("--benchmark_filter", default=None,
                        help="passed through to every binary (a regex)")
    parser.add_argument("--output", default=None,
                        help="results file (default: <build-dir>/bench/results.json)")
    parser.add_argument("--timeout", type=float, default=900,
                        help="seconds allowed per binary (default: 900)")
    return parser.parse_args(argv)


def find_binaries(bench_dir):
    binaries = []
    for entry in sorted(os.listdir(bench_dir)):
        path = os.path.join(bench_dir, entry)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            binaries.append(path)
    return binaries


def run_binary(path, args):
    """Returns (benchmark entries, error message or None)."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
        out_path = out.name
    command = [path, "--benchmark_format=json",
               "--benchmark_out=" + out_path, "--benchmark_out_format=json"]
    if args.benchmark_min_time is not None:
        command.append("--benchmark_min_time=" + str(args.benchmark_min_time))
    if args.benchmark_filter is not None:
        command.append("--benchmark_filter=" + args.benchmark_filter)
    try:
        proc = subprocess.run(command, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True,
                              timeout=args.timeout, check=False)
        if proc.returncode != 0:
            tail = proc.stderr.strip().splitlines()[-5:]
            return [], "exit code %d%s" % (
                proc.returncode, (": " + " | ".join(tail)) if tail else "")
        with open(out_path, encoding="utf-8") as f:
            text = f.read()
        # A filter that matches none of a binary's benchmarks leaves no report.
        if not text.strip() and args.benchmark_filter is not None:
            return [], None
        report = json.loads(text)
        return report.get("benchmarks", []), None
    except subprocess.TimeoutExpired:
        return [], "timed out after %g s" % args.timeout
    except (OSError, ValueError) as e:
        return [], "unreadable output: %s" % e
    finally:
        try:
            os.unlink(out_path)
        except OSError:
            pass


def select_runs(entries):
    """One entry per benchmark: the median aggregate when repetitions were
    requested, the plain run otherwise."""
    by_name = {}
    order = []
    for e in entries:
        name = e.get("run_name", e.get("name"))
        if name not in by_name:
            by_name[name] = []
            order.append(name)
        by_name[name].append(e)
    selected = []
    for name in order:
        runs = by_name[name]
        aggregates = {e.get("aggregate_name"): e for e in runs
                      if e.get("run_type") == "aggregate"}
        chosen = aggregates.get("median") or aggregates.get("mean")
        if chosen is None:
            chosen = [e for e in runs if e.get("run_type") != "aggregate"][-1]
        selected.append((name, chosen))
    return selected


def to_results(binary, entries):
    """Returns (results, errors) for one binary's benchmark entries."""
    results = []
    errors = []
    for name, e in select_runs(entries):
        if e.get("error_occurred"):
            errors.append("%s: %s" % (name, e.get("error_message", "error")))
            continue
        if "bytes_per_second" in e:
            value, unit = e["bytes_per_second"] / 1e9, "GB/s"
        elif "items_per_second" in e:
            value, unit = e["items_per_second"], "items/s"
        else:
            value, unit = e["real_time"], e.get("time_unit", "ns")
        result = {"name": name, "value": value, "unit": unit, "binary": binary}
        match = BASELINE_LABEL.search(e.get("label", ""))
        if match:
            result["baseline_name"] = match.group(1)
        for key, counter_value in e.items():
            paired = PAIRED_RATIO_COUNTER.match(key)
            if paired and isinstance(counter_value, (int, float)):
                result["paired_baseline"] = paired.group(1) + " (paired)"
                result["ratio"] = float(counter_value)
        results.append(result)
        percentiles = []
        for key, counter_value in e.items():
            counter = PERCENTILE_COUNTER.match(key)
            if counter and isinstance(counter_value, (int, float)):
                percentiles.append((float(counter.group(1)[1:]), counter.group(1),
                                    counter.group(2), float(counter_value)))
        for _, percentile, unit, counter_value in sorted(percentiles):
            results.append({"name": "%s/%s" % (name, percentile),
                            "value": counter_value, "unit": unit,
                            "binary": binary})
    return results, errors


def resolve_baselines(results):
    warnings = []
    by_binary = {(r["binary"], r["name"]): r for r in results}
    by_name = {}
    for r in results:
        by_name.setdefault(r["name"], r)
    for r in results:
        if "baseline_name" not in r:
            continue
        base = by_binary.get((r["binary"], r["baseline_name"])) or \
            by_name.get(r["baseline_name"])
        if base is None:
            warnings.append("%s: baseline %s was not run" % (r["name"], r["baseline_name"]))
            continue
        r["baseline_value"] = base["value"]
        if base["unit"] != r["unit"]:
            warnings.append("%s: unit %s differs from baseline's %s; no ratio"
                            % (r["name"], r["unit"], base["unit"]))
        elif base["value"] > 0:
            r["ratio"] = r["value"] / base["value"]
    return warnings


def fmt(value):
    if value is None:
        return ""
    if value == 0 or not math.isfinite(value):
        return str(value)
    if abs(value) >= 1e6 or abs(value) < 1e-3:
        return "%.3e" % value
    return "%.4g" % value


def print_table(results):
    header = ("name", "value", "unit", "baseline", "ratio")
    rows = [(r["name"], fmt(r["value"]), r["unit"],
             r.get("baseline_name", r.get("paired_baseline", "")),
             "%.2f" % r["ratio"] if "ratio" in r else "") for r in results]
    widths = [max(len(row[i]) for row in rows + [header]) for i in range(5)]
    right = (False, True, False, False, True)

    def line(cells):
        return "  ".join(c.rjust(w) if r else c.ljust(w)
                         for c, w, r in zip(cells, widths, right)).rstrip()

    print(line(header))
    print(line(tuple("-" * w for w in widths)))
    for row in rows:
        print(line(row))


def main(argv):
    args = parse_args(argv)
    bench_dir = os.path.join(args.build_dir, "bench")
    output = args.output or os.path.join(bench_dir, "results.json")
    if not os.path.isdir(bench_dir):
        print("no benchmark directory %s; build first" % bench_dir, file=sys.stderr)
        return 2
    binaries = find_binaries(bench_dir)
    if not binaries:
        print("no benchmark binaries in %s" % bench_dir, file=sys.stderr)
        return 2

    results = []
    failures = []
    for path in binaries:
        name = os.path.basename(path)
        start = time.monotonic()
        print("running %s ..." % name, file=sys.stderr, flush=True)
        entries, error = run_binary(path, args)
        if error:
            failures.append("%s: %s" % (name, error))
        binary_results, errors = to_results(name, entries)
        results.extend(binary_results)
        failures.extend("%s: %s" % (name, e) for e in errors)
        print("  %d results in %.1f s" % (len(binary_results), time.monotonic() - start),
              file=sys.stderr)

    for warning in resolve_baselines(results):
        print("warning: " + warning, file=sys.stderr)
    with open(output, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
        f.write("\n")
    print_table(results)
    print("\nwrote %d results to %s" % (len(results), output))
    if failures:
        print("\nFAILED:", file=sys.stderr)
        for failure in failures:
            print("  " + failure, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

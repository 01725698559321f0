#!/usr/bin/env python3
"""`psflow train --overlap on` against `--overlap off` on loopback.

The local cluster (1 ps, 2 workers as processes), mlp 784-256-10 with adam,
`--steps-per-execution 10` (overlap works within a closure's steps), one
epoch per run; for each batch size the two settings alternate (on, off,
off, on, ...) `--pairs` times so that both see the same host load. Reports
the median examples/s of each (the steady rate over the epoch, as
summary.json gives it) and merges into <build-dir>/bench/results.json
(entries of binary "overlap_bench" are replaced):

  overlap_loopback/b<N>/off   examples/s
  overlap_loopback/b<N>/on    examples/s, ratio = on / off

Usage: overlap_bench.py --build-dir build [--batches 64,256] [--pairs 2]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_merge import merge_results  # noqa: E402

BINARY = "overlap_bench"


def run(args, work, batch, overlap, tag):
    run_dir = os.path.join(work, tag)
    command = [args.psflow, "train", "--model", "mlp", "--num-ps", "1", "--num-workers", "2",
               "--batch-size", str(batch), "--epochs", str(args.epochs),
               "--steps-per-execution", str(args.steps_per_execution), "--overlap", overlap,
               "--run-dir", run_dir, "--startup-timeout", "120"]
    r = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout,
                       check=False)
    if r.returncode != 0:
        raise RuntimeError(f"failed ({r.returncode}): {' '.join(command)}\n{r.stderr[-3000:]}")
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    if summary.get("steps") != summary.get("optimizer_iterations"):
        raise RuntimeError(f"steps {summary.get('steps')} != optimizer iterations "
                           f"{summary.get('optimizer_iterations')} in {run_dir}")
    shutil.rmtree(run_dir, ignore_errors=True)
    return float(summary["examples_per_sec"]), float(summary["test_accuracy"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--batches", default="64,256")
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--steps-per-execution", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    args.psflow = os.path.join(args.build_dir, "psflow")
    work = tempfile.mkdtemp(prefix="psflow-overlap-bench-")
    entries = []
    try:
        for batch in (int(b) for b in args.batches.split(",")):
            got = {"on": [], "off": []}
            for i in range(args.pairs):
                order = ("on", "off") if i % 2 == 0 else ("off", "on")
                for overlap in order:
                    rate, acc = run(args, work, batch, overlap, f"b{batch}-{overlap}-{i}")
                    got[overlap].append(rate)
                    print(f"  b{batch} overlap {overlap}: {rate:.0f} examples/s, "
                          f"test accuracy {acc:.4f}", flush=True)
            on, off = statistics.median(got["on"]), statistics.median(got["off"])
            name = f"overlap_loopback/b{batch}"
            entries.append({"name": f"{name}/off", "value": off, "unit": "examples/s",
                            "binary": BINARY})
            entries.append({"name": f"{name}/on", "value": on, "unit": "examples/s",
                            "binary": BINARY, "baseline_name": f"{name}/off",
                            "baseline_value": off, "ratio": on / off})
            print(f"overlap_loopback b{batch}: on {on:.0f}, off {off:.0f} examples/s, "
                  f"on / off = {on / off:.3f}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    output = os.path.join(args.build_dir, "bench", "results.json")
    os.makedirs(os.path.dirname(output), exist_ok=True)
    merge_results(output, BINARY, entries)
    print(f"overlap_bench: {len(entries)} results merged into {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""psflow train with float32 against bfloat16 on the wire, same run.

For each configuration (batch size, workers; one ps, loopback) this runs
`psflow train --model mlp --num-ps 1` with `--wire-dtype float32` and
`--wire-dtype bfloat16`, alternating (float32, bfloat16, float32, ...) so
both see the same host load, and reports the median of each:

  examples_per_s   training examples per second in the steady state:
                   epochs 2.. (every epoch when there is one), training
                   time only (as bench/train_vs_torch.py counts it)
  test_accuracy    after the last epoch (issue target: bfloat16 within
                   0.005 of float32 after 5 epochs)

Entries are merged into <build-dir>/bench/results.json (binary
"wire_dtype"), named wire_dtype/b<batch>_w<workers>/bfloat16_<figure> with
the float32 entry of the same figure as baseline and ratio = bf16 / fp32
(for test_accuracy the entry also carries the difference).

Usage: wire_dtype.py --build-dir build [--configs b64_w2,b256_w2]
       [--repeats 2] [--epochs 5] [--insecure]
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from results_merge import merge_results  # noqa: E402
from torch_rpc_harness import run_psflow_train, steady_rate  # noqa: E402

BINARY = "wire_dtype"
CONFIGS = [("b64_w2", 64, 2), ("b256_w2", 256, 2)]
WIRE = ["float32", "bfloat16"]


def run(args, work, batch, workers, wire, tag):
    run_dir = os.path.join(work, f"{tag}-{wire}")
    command = ["train", "--model", "mlp",
               "--num-ps", "1", "--num-workers", str(workers), "--batch-size", str(batch),
               "--epochs", str(args.epochs), "--seed", str(args.seed), "--wire-dtype", wire]
    if args.insecure:
        command.append("--insecure")
    summary, _ = run_psflow_train(os.path.join(args.build_dir, "psflow"), command, run_dir,
                                  args.timeout)
    if summary.get("wire_dtype", "float32") != wire:
        raise RuntimeError(f"{run_dir}: summary.json says wire_dtype "
                           f"{summary.get('wire_dtype')}, expected {wire}")
    return {"examples_per_s": steady_rate(summary["history"]),
            "test_accuracy": float(summary["test_accuracy"])}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build-dir", default="build")
    p.add_argument("--configs", default=",".join(c[0] for c in CONFIGS))
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--insecure", action="store_true", help="psflow train --insecure (mTLS off)")
    p.add_argument("--timeout", type=float, default=900, help="seconds per run")
    p.add_argument("--output", default=None,
                   help="results file (default: <build-dir>/bench/results.json)")
    args = p.parse_args()
    known = {c[0]: c for c in CONFIGS}
    wanted = [c for c in args.configs.split(",") if c]
    for name in wanted:
        if name not in known:
            p.error(f"unknown config {name!r}; known: {', '.join(known)}")
    output = args.output or os.path.join(args.build_dir, "bench", "results.json")
    work = tempfile.mkdtemp(prefix="psflow-wire-dtype-")
    entries = []
    try:
        print(f"wire_dtype: {args.repeats} run(s) of each per config, {args.epochs} epochs, "
              f"load average {os.getloadavg()[0]:.1f}", flush=True)
        for name in wanted:
            _, batch, workers = known[name]
            runs = {w: [] for w in WIRE}
            for i in range(args.repeats):
                start = time.monotonic()
                for w in WIRE:
                    runs[w].append(run(args, work, batch, workers, w, f"{name}-{i}"))
                f32, b16 = runs["float32"][-1], runs["bfloat16"][-1]
                print(f"  {name} run {i + 1}: float32 {f32['examples_per_s']:.0f} examples/s "
                      f"acc {f32['test_accuracy']:.4f} | bfloat16 {b16['examples_per_s']:.0f} "
                      f"examples/s acc {b16['test_accuracy']:.4f} "
                      f"({time.monotonic() - start:.0f} s)", flush=True)
            for figure, unit in [("examples_per_s", "examples/s"), ("test_accuracy", "accuracy")]:
                common = {"unit": unit, "binary": BINARY, "batch_size": batch,
                          "num_workers": workers, "num_ps": 1, "epochs": args.epochs,
                          "runs": args.repeats, "insecure": args.insecure}
                f = statistics.median(r[figure] for r in runs["float32"])
                b = statistics.median(r[figure] for r in runs["bfloat16"])
                base = {"name": f"{BINARY}/{name}/float32_{figure}", "value": f, **common,
                        "samples": [r[figure] for r in runs["float32"]]}
                mine = {"name": f"{BINARY}/{name}/bfloat16_{figure}", "value": b, **common,
                        "samples": [r[figure] for r in runs["bfloat16"]],
                        "baseline_name": base["name"], "baseline_value": f,
                        "ratio": b / f if f > 0 else None}
                if figure == "test_accuracy":
                    mine["difference"] = b - f
                entries.extend([mine, base])
        merge_results(output, BINARY, entries)
        for e in entries:
            if "ratio" in e:
                print(f"{e['name']:<44} {e['value']:>10.4g} {e['unit']:<10} "
                      f"float32 {e['baseline_value']:>10.4g}  ratio {e['ratio']:.3f}")
        print(f"wire_dtype: {len(entries)} results merged into {output}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

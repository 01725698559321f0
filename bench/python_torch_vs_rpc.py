#!/usr/bin/env python3
"""psflow with Python (torch) steps against a plain torch.distributed.rpc ps.

The same torch model (784-256-10 MLP), batch (64), optimizer (Adam 1e-3,
constant rate, applied on the ps), data (Fashion-MNIST) and worker count
(2), both ways in one run:

  * psflow: examples/python/torch_mlp.py, its step in Python on psflow
    workers (`psflow server --python torch_mlp`), 1 ps;
  * torch: bench/torch_rpc_ps.py (one ps process, workers that pull,
    compute and push over RPC).

Figure: steady-state training examples/s (epochs 2.., training time only),
median of --repeats runs of each side, merged into
<build-dir>/bench/results.json (bench/results_merge.py) with torch as the
baseline and the ratio psflow / torch (the target: >= 1.5). psflow runs
twice: with its default mutual TLS, and with --insecure (torch's RPC does
not encrypt).

    PYTHONPATH=build/python python3 bench/python_torch_vs_rpc.py --build-dir build
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from results_merge import merge_results  # noqa: E402

BINARY = "python_torch_vs_rpc"
SYSTEM_PYTHON = "/usr/bin/python3"


def steady_rate(history):
    """Examples/s over epochs 2.. (all when there is one)."""
    rest = history[1:] or history
    examples = sum(h["examples_per_sec"] * h["seconds"] for h in rest)
    return examples / sum(h["seconds"] for h in rest)


def run(command, out, env, timeout):
    r = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False,
                       env=env)
    if r.returncode != 0:
        raise RuntimeError("failed (%d): %s\n%s" % (r.returncode, " ".join(command),
                                                   r.stderr[-3000:]))
    with open(out) as f:
        return json.load(f)


def run_psflow(args, work, tag, insecure=False):
    out = os.path.join(work, "psflow-%s%s.json" % (tag, "-insecure" if insecure else ""))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(os.path.abspath(args.build_dir), "python")]
        + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.setdefault("PSFLOW_BINARY", os.path.join(os.path.abspath(args.build_dir), "psflow"))
    command = [args.python, os.path.join(ROOT, "examples", "python", "torch_mlp.py"),
               "--epochs", str(args.epochs), "--num-workers", "2", "--batch-size", "64",
               "--seed", str(args.seed), "--json", out] + (["--insecure"] if insecure else [])
    result = run(command, out, env, args.timeout)
    history = result["history"]
    return {"examples_per_s": steady_rate(history), "test_accuracy": result["test_accuracy"]}


def run_torch(args, work, tag):
    out = os.path.join(work, "torch-%s.json" % tag)
    command = [args.python, os.path.join(HERE, "torch_rpc_ps.py"), "--num-workers", "2",
               "--batch-size", "64", "--epochs", str(args.epochs), "--seed", str(args.seed),
               "--lr-schedule", "constant", "--timeout", str(args.timeout), "--json", out]
    result = run(command, out, dict(os.environ), args.timeout + 60)
    history = result["history"]
    rate = result.get("examples_per_sec")
    return {"examples_per_s": float(rate) if rate else steady_rate(history),
            "test_accuracy": float(result["test_accuracy"])}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default="build")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--output", default=None)
    p.add_argument("--no-merge", action="store_true", help="print only")
    args = p.parse_args()
    if not 1 <= args.epochs <= 100 or not 1 <= args.repeats <= 20:
        sys.exit("--epochs must be in [1, 100] and --repeats in [1, 20]")
    args.python = SYSTEM_PYTHON if os.path.exists(SYSTEM_PYTHON) else sys.executable
    output = args.output or os.path.join(args.build_dir, "bench", "results.json")
    work = tempfile.mkdtemp(prefix="psflow-python-vs-rpc-")
    try:
        print("python_torch_vs_rpc: %d run(s) of each side, %d epochs, load average %.1f"
              % (args.repeats, args.epochs, os.getloadavg()[0]), flush=True)
        mine, plain, theirs = [], [], []
        for i in range(args.repeats):
            start = time.monotonic()
            mine.append(run_psflow(args, work, str(i)))
            # Torch's RPC does not encrypt: psflow also runs without TLS.
            plain.append(run_psflow(args, work, str(i), insecure=True))
            theirs.append(run_torch(args, work, str(i)))
            print("  run %d: psflow (Python steps) %.0f examples/s acc %.4f | --insecure %.0f "
                  "examples/s acc %.4f | torch rpc %.0f examples/s acc %.4f (%.0f s)"
                  % (i + 1, mine[-1]["examples_per_s"], mine[-1]["test_accuracy"],
                     plain[-1]["examples_per_s"], plain[-1]["test_accuracy"],
                     theirs[-1]["examples_per_s"], theirs[-1]["test_accuracy"],
                     time.monotonic() - start), flush=True)
        t_rate = statistics.median(r["examples_per_s"] for r in theirs)
        common = {"unit": "examples/s", "binary": BINARY, "batch_size": 64, "num_workers": 2,
                  "num_ps": 1, "runs": args.repeats, "epochs": args.epochs}
        base = {"name": BINARY + "/torch_rpc_examples_per_s", "value": t_rate, **common,
                "samples": [r["examples_per_s"] for r in theirs]}
        entries = [base]
        for name, runs in (("psflow_python", mine), ("psflow_python_insecure", plain)):
            p_rate = statistics.median(r["examples_per_s"] for r in runs)
            entry = {"name": "%s/%s_examples_per_s" % (BINARY, name), "value": p_rate, **common,
                     "samples": [r["examples_per_s"] for r in runs],
                     "baseline_name": base["name"], "baseline_value": t_rate,
                     "ratio": p_rate / t_rate if t_rate > 0 else None}
            entries.append(entry)
            print("%-60s %8.0f examples/s  torch %8.0f  ratio %.2f"
                  % (entry["name"], p_rate, t_rate, entry["ratio"] or 0.0))
        if not args.no_merge:
            merge_results(output, BINARY, entries)
            print("python_torch_vs_rpc: merged into %s" % output)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

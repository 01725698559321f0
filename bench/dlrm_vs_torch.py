#!/usr/bin/env python3
"""psflow's dlrm against a torch.distributed.rpc parameter server, same run.

Writes a generated Criteo-shaped file (`psflow datagen criteo`), then runs
`psflow train --model dlrm --num-ps 1 --num-workers 2` on it (mTLS on, its
default) and bench/torch_rpc_dlrm.py (the same model, optimizer, batch,
split and epochs; torch.nn.EmbeddingBag tables with sparse gradients on one
ps process, 2 workers), alternating (psflow, torch, psflow, torch, ...) so
both see the same host load, and reports the median of each:

  examples_per_s   training examples per second in the steady state
                   (epochs 2.., training time only: startup and the
                   per-epoch test evaluation excluded), the same rule on
                   both sides; cpu_seconds of each whole run beside it
  test_auc         held-out AUC after the last epoch

Entries are merged into <build-dir>/bench/results.json (binary
"dlrm_vs_torch"; earlier entries of that binary are replaced), named
dlrm_vs_torch/<rows>_b<batch>_w2/psflow_<figure> with the torch entry as
baseline and ratio = psflow / torch (issue 20's target for examples/s: at
least 2).

Usage: dlrm_vs_torch.py --build-dir build [--quick] [--rows 100000]
       [--repeats 2] [--epochs 3]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from results_merge import merge_results  # noqa: E402
from torch_rpc_harness import run_baseline, run_psflow_train, steady_rate  # noqa: E402

BINARY = "dlrm_vs_torch"
WORKERS = 2


def run_psflow(args, work, data, tag):
    run_dir = os.path.join(work, f"psflow-{tag}")
    command = ["train", "--model", "dlrm", "--data-dir", data, "--num-ps", "1",
               "--num-workers", str(WORKERS), "--batch-size", str(args.batch_size),
               "--epochs", str(args.epochs), "--seed", str(args.seed),
               "--steps-per-execution", "10"]
    summary, cpu = run_psflow_train(args.psflow, command, run_dir, args.timeout)
    batch = args.batch_size
    return {"examples_per_s": steady_rate(summary["history"], lambda h: h["steps"] * batch),
            "test_auc": float(summary["test_auc"]), "cpu_seconds": cpu,
            "table_rows": summary.get("table", {}).get("rows")}


def run_torch(args, work, data, tag):
    out = os.path.join(work, f"torch-{tag}.json")
    result, cpu = run_baseline("torch_rpc_dlrm.py",
                               ["--data", data, "--num-workers", str(WORKERS),
                                "--batch-size", str(args.batch_size), "--epochs",
                                str(args.epochs), "--seed", str(args.seed)],
                               out, args.timeout)
    return {"examples_per_s": steady_rate(result["history"], lambda h: h["examples"]),
            "test_auc": float(result["test_auc"]), "cpu_seconds": cpu,
            "table_rows": result.get("table_rows"), "blas": result.get("blas", [])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--quick", action="store_true",
                        help="1 run of each side, 2 epochs (default: 2 runs, 3 epochs)")
    parser.add_argument("--rows", type=int, default=100000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=900, help="seconds per run")
    parser.add_argument("--output", default=None,
                        help="results file (default: <build-dir>/bench/results.json)")
    args = parser.parse_args()
    args.repeats = args.repeats or (1 if args.quick else 2)
    args.epochs = args.epochs or (2 if args.quick else 3)
    if not 1 <= args.repeats <= 20 or not 1 <= args.epochs <= 100:
        sys.exit("--repeats must be in [1, 20] and --epochs in [1, 100]")
    if not 1000 <= args.rows <= 100_000_000:
        sys.exit("--rows must be in [1000, 100000000]")
    args.psflow = os.path.join(args.build_dir, "psflow")
    if not os.access(args.psflow, os.X_OK):
        sys.exit(f"no {args.psflow}; build first (make build)")
    output = args.output or os.path.join(args.build_dir, "bench", "results.json")
    work = tempfile.mkdtemp(prefix="psflow-dlrm-vs-torch-")
    try:
        data = os.path.join(work, "criteo.tsv")
        subprocess.run([args.psflow, "datagen", "criteo", "--rows", str(args.rows), "--seed", "1",
                        "--out", data], check=True, capture_output=True, timeout=600)
        print(f"dlrm_vs_torch: {args.rows} generated rows, batch {args.batch_size}, "
              f"{WORKERS} workers, 1 ps, {args.epochs} epochs, {args.repeats} run(s) of each "
              f"side, load average {os.getloadavg()[0]:.1f}", flush=True)
        psflow_runs, torch_runs = [], []
        for i in range(args.repeats):
            p = run_psflow(args, work, data, str(i))
            print(f"  psflow: {p['examples_per_s']:.0f} examples/s, test auc "
                  f"{p['test_auc']:.4f}, cpu {p['cpu_seconds']:.1f} s", flush=True)
            t = run_torch(args, work, data, str(i))
            print(f"  torch:  {t['examples_per_s']:.0f} examples/s, test auc "
                  f"{t['test_auc']:.4f}, cpu {t['cpu_seconds']:.1f} s", flush=True)
            psflow_runs.append(p)
            torch_runs.append(t)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    name = f"{BINARY}/{args.rows}_b{args.batch_size}_w{WORKERS}"
    entries = []
    for figure, unit in (("examples_per_s", "examples/s"), ("test_auc", "auc")):
        p = statistics.median(r[figure] for r in psflow_runs)
        t = statistics.median(r[figure] for r in torch_runs)
        common = {"unit": unit, "binary": BINARY, "batch_size": args.batch_size,
                  "num_workers": WORKERS, "num_ps": 1, "rows": args.rows,
                  "epochs": args.epochs, "runs": args.repeats}
        base = {"name": f"{name}/torch_{figure}", "value": t, **common,
                "samples": [r[figure] for r in torch_runs]}
        mine = {"name": f"{name}/psflow_{figure}", "value": p, **common,
                "samples": [r[figure] for r in psflow_runs],
                "baseline_name": base["name"], "baseline_value": t,
                "ratio": p / t if t > 0 else None}
        if figure == "examples_per_s":
            mine["cpu_seconds"] = statistics.median(r["cpu_seconds"] for r in psflow_runs)
            base["cpu_seconds"] = statistics.median(r["cpu_seconds"] for r in torch_runs)
            base["blas"] = torch_runs[0].get("blas", [])
            mine["table_rows"] = psflow_runs[0]["table_rows"]
            base["table_rows"] = torch_runs[0]["table_rows"]
        entries.extend([mine, base])
        print(f"{name}: {figure} psflow {p:.4g} torch {t:.4g} ratio "
              f"{mine['ratio']:.2f}" if mine["ratio"] else f"{name}: {figure} no ratio",
              flush=True)
    merge_results(output, BINARY, entries)
    print(f"merged {len(entries)} entries into {output}", flush=True)


if __name__ == "__main__":
    main()

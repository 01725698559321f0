#!/usr/bin/env python3
"""psflow train against a torch.distributed.rpc parameter server, same run.

For each configuration (batch size, workers) this runs `psflow train --model
mlp --num-ps 1` (the release build) and bench/torch_rpc_ps.py with the same
model, optimizer, learning-rate schedule, batch, worker count and epochs,
alternating (psflow, torch, psflow, torch, ...) so both see the same host
load, and reports the median of each:

  examples_per_s      training examples per second in the steady state:
                      epochs 2.. (every epoch when there is one), training
                      time only (startup and the per-epoch evaluation of the
                      test set excluded) - the same rule on both sides
  seconds_to_<acc>    training seconds up to the end of the first epoch whose
                      test accuracy reaches the target (0.87); both sides
                      evaluate after every epoch. Left out when a run of
                      either side never reaches it
  test_accuracy       after the last epoch
  psflow_insecure_*   b64_w2 only: psflow train --insecure (mTLS off; torch's
                      RPC does not encrypt), a third run in each round
  cpu_seconds         user + system CPU of the whole run (all its processes,
                      startup included), an extra field of the examples_per_s
                      entries

Entries are merged into <build-dir>/bench/results.json (binary
"train_vs_torch"; earlier entries of that binary are replaced), named
train_vs_torch/b<batch>_w<workers>/psflow_<figure> with the torch entry of the
same figure as baseline and ratio = psflow / torch (for seconds: below 1 is
psflow ahead).

Usage: train_vs_torch.py --build-dir build [--quick] [--configs b64_w2,...]
       [--repeats 2] [--epochs 5]
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
from torch_rpc_harness import run_baseline, run_psflow_train, seconds_to, steady_rate  # noqa: E402

BINARY = "train_vs_torch"
# (name, batch size, workers); the first is the target configuration.
CONFIGS = [("b64_w2", 64, 2), ("b32_w2", 32, 2), ("b256_w2", 256, 2), ("b64_w1", 64, 1)]


def run_psflow(args, work, batch, workers, tag, insecure=False):
    run_dir = os.path.join(work, f"psflow-{tag}{'-insecure' if insecure else ''}")
    command = ["train", "--model", "mlp", "--num-ps", "1",
               "--num-workers", str(workers), "--batch-size", str(batch),
               "--epochs", str(args.epochs), "--seed", str(args.seed)]
    if insecure:
        command.append("--insecure")
    summary, cpu = run_psflow_train(args.psflow, command, run_dir, args.timeout)
    if summary.get("steps") != summary.get("optimizer_iterations"):
        raise RuntimeError(f"steps {summary.get('steps')} != optimizer iterations "
                           f"{summary.get('optimizer_iterations')} in {run_dir}")
    history = summary["history"]
    return {"examples_per_s": steady_rate(history),
            "seconds_to_target": seconds_to(history, args.target_accuracy,
                                            lambda h: h["test_accuracy"]),
            "test_accuracy": float(summary["test_accuracy"]), "cpu_seconds": cpu}


def run_torch(args, work, batch, workers, tag):
    out = os.path.join(work, f"torch-{tag}.json")
    result, cpu = run_baseline("torch_rpc_ps.py",
                               ["--num-workers", str(workers), "--batch-size", str(batch),
                                "--epochs", str(args.epochs), "--seed", str(args.seed),
                                "--target-accuracy", str(args.target_accuracy)],
                               out, args.timeout)
    history = result["history"]
    return {"examples_per_s": steady_rate(history),
            "seconds_to_target": seconds_to(history, args.target_accuracy,
                                            lambda h: h["test_accuracy"]),
            "test_accuracy": float(result["test_accuracy"]), "cpu_seconds": cpu,
            "blas": result.get("blas", [])}


def median_or_none(values):
    if any(v is None for v in values):
        return None
    return statistics.median(values)


def config_entries(name, batch, workers, psflow_runs, torch_runs, target, side="psflow"):
    prefix = f"{BINARY}/{name}"
    entries = []
    figures = [("examples_per_s", "examples/s"),
               (f"seconds_to_{target:g}", "s"),
               ("test_accuracy", "accuracy")]
    for figure, unit in figures:
        key = "seconds_to_target" if figure.startswith("seconds_to_") else figure
        p = median_or_none([r[key] for r in psflow_runs])
        t = median_or_none([r[key] for r in torch_runs])
        if p is None or t is None:
            print(f"  {name}: {figure} left out: a run did not reach {target:g} "
                  f"(psflow {[r[key] for r in psflow_runs]}, torch {[r[key] for r in torch_runs]})",
                  flush=True)
            continue
        common = {"unit": unit, "binary": BINARY, "batch_size": batch, "num_workers": workers,
                  "num_ps": 1, "runs": len(psflow_runs)}
        base = {"name": f"{prefix}/torch_{figure}", "value": t, **common,
                "samples": [r[key] for r in torch_runs]}
        mine = {"name": f"{prefix}/{side}_{figure}", "value": p, **common,
                "samples": [r[key] for r in psflow_runs],
                "baseline_name": base["name"], "baseline_value": t,
                "ratio": p / t if t > 0 else None}
        if figure == "examples_per_s":
            mine["cpu_seconds"] = statistics.median(r["cpu_seconds"] for r in psflow_runs)
            base["cpu_seconds"] = statistics.median(r["cpu_seconds"] for r in torch_runs)
        entries.extend([mine] if side != "psflow" else [mine, base])
    return entries


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--quick", action="store_true",
                        help="1 run of each side, 2 epochs (default: 2 runs, 5 epochs)")
    parser.add_argument("--configs", default=",".join(c[0] for c in CONFIGS))
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-insecure", action="store_true",
                        help="skip the extra psflow --insecure (mTLS off) runs of b64_w2")
    parser.add_argument("--target-accuracy", type=float, default=0.87)
    parser.add_argument("--timeout", type=float, default=900, help="seconds per run")
    parser.add_argument("--output", default=None,
                        help="results file (default: <build-dir>/bench/results.json)")
    args = parser.parse_args()
    args.repeats = args.repeats or (1 if args.quick else 2)
    args.epochs = args.epochs or (2 if args.quick else 5)
    if not 1 <= args.repeats <= 20 or not 1 <= args.epochs <= 100:
        sys.exit("--repeats must be in [1, 20] and --epochs in [1, 100]")
    args.psflow = os.path.join(args.build_dir, "psflow")
    if not os.access(args.psflow, os.X_OK):
        sys.exit(f"no {args.psflow}; build first (make build)")
    wanted = args.configs.split(",")
    known = {c[0]: c for c in CONFIGS}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        sys.exit(f"unknown configs {unknown}; choose from {list(known)}")
    output = args.output or os.path.join(args.build_dir, "bench", "results.json")
    work = tempfile.mkdtemp(prefix="psflow-train-vs-torch-")
    entries = []
    try:
        print(f"train_vs_torch: {args.repeats} run(s) of each side per config, "
              f"{args.epochs} epochs, load average {os.getloadavg()[0]:.1f}", flush=True)
        for name in wanted:
            _, batch, workers = known[name]
            psflow_runs, torch_runs, insecure_runs = [], [], []
            # The target configuration also runs psflow with mTLS off (torch's
            # RPC has no encryption): what TLS costs, beside the default.
            insecure = name == CONFIGS[0][0] and not args.no_insecure
            for i in range(args.repeats):
                start = time.monotonic()
                psflow_runs.append(run_psflow(args, work, batch, workers, f"{name}-{i}"))
                if insecure:
                    insecure_runs.append(run_psflow(args, work, batch, workers, f"{name}-{i}",
                                                    insecure=True))
                    print(f"  {name} run {i + 1}: psflow --insecure "
                          f"{insecure_runs[-1]['examples_per_s']:.0f} examples/s", flush=True)
                torch_runs.append(run_torch(args, work, batch, workers, f"{name}-{i}"))
                p, t = psflow_runs[-1], torch_runs[-1]
                print(f"  {name} run {i + 1}: psflow {p['examples_per_s']:.0f} examples/s "
                      f"acc {p['test_accuracy']:.4f} to-target {p['seconds_to_target']} | "
                      f"torch {t['examples_per_s']:.0f} examples/s acc {t['test_accuracy']:.4f} "
                      f"to-target {t['seconds_to_target']} ({time.monotonic() - start:.0f} s)",
                      flush=True)
            if torch_runs[0].get("blas"):
                print(f"  torch BLAS: {', '.join(torch_runs[0]['blas'])}", flush=True)
            entries.extend(config_entries(name, batch, workers, psflow_runs, torch_runs,
                                          args.target_accuracy))
            if insecure_runs:
                entries.extend(config_entries(name, batch, workers, insecure_runs, torch_runs,
                                              args.target_accuracy, side="psflow_insecure"))
        merge_results(output, BINARY, entries)
        for e in entries:
            if "ratio" in e:
                print(f"{e['name']:<48} {e['value']:>10.4g} {e['unit']:<10} "
                      f"torch {e['baseline_value']:>10.4g}  ratio {e['ratio']:.2f}")
        print(f"train_vs_torch: {len(entries)} results merged into {output}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

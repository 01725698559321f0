#!/usr/bin/env python3
"""gRPC's TCP experiments on and off, alternated in one run.

gRPC 1.51 has three pre-release TCP experiments, switched on process-wide by
GRPC_EXPERIMENTS=tcp_rcv_lowat,tcp_read_chunks,tcp_frame_size_tuning before
gRPC starts. This script measures them paired: every round runs each
measurement once with the variable set (in the bench process and, inherited,
in every task it starts) and once without, in alternating order, so both
see the same moment's load on a shared host:

  * dense 4 MiB pull and push against raw TCP: variable_bench's
    BM_PairedWithRawTcp (ratio_vs_raw_tcp, 1 = as fast as raw TCP on the
    same loopback, measured back to back with each op);
  * `psflow train --model mlp --num-ps 1 --num-workers 2 --batch-size 64`:
    steady-state examples/s (epochs 2.., training time only, as
    bench/train_vs_torch.py counts it).

Each with the default mutual TLS and with --insecure. Prints every run and
the medians per setting; --json writes them.

Usage: tcp_experiments.py --build-dir build [--rounds 3] [--epochs 3]
       [--skip-train] [--skip-dense]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from torch_rpc_harness import run_psflow_train, steady_rate  # noqa: E402

EXPERIMENTS = "tcp_rcv_lowat,tcp_read_chunks,tcp_frame_size_tuning"
DENSE_FILTER = "BM_PairedWithRawTcp/bytes:4194304/"


def environment(on):
    env = dict(os.environ)
    env.pop("GRPC_EXPERIMENTS", None)
    if on:
        env["GRPC_EXPERIMENTS"] = EXPERIMENTS
    return env


def dense(args, on, insecure):
    """{"pull": ratio, "push": ratio}: medians of the run's repetitions."""
    command = [os.path.join(args.build_dir, "bench", "variable_bench"),
               f"--benchmark_filter={DENSE_FILTER}", "--benchmark_repetitions=3",
               "--benchmark_report_aggregates_only=true", "--benchmark_format=json"]
    if insecure:
        command.append("--insecure")
    r = subprocess.run(command, capture_output=True, text=True, env=environment(on),
                       timeout=args.timeout, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"variable_bench failed ({r.returncode}): {r.stderr[-2000:]}")
    ratios = {}
    for b in json.loads(r.stdout)["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        ratios["push" if "push:1" in b["name"] else "pull"] = b["ratio_vs_raw_tcp"]
    if set(ratios) != {"pull", "push"}:
        raise RuntimeError(f"variable_bench: no pull and push medians in {r.stdout[-2000:]}")
    return ratios


def train(args, work, on, insecure, tag):
    command = ["train", "--model", "mlp", "--num-ps", "1", "--num-workers", "2",
               "--batch-size", "64", "--epochs", str(args.epochs), "--seed", "0"]
    if insecure:
        command.append("--insecure")
    summary, _ = run_psflow_train(os.path.join(args.build_dir, "psflow"), command,
                                  os.path.join(work, tag), args.timeout, env=environment(on))
    return steady_rate(summary["history"])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default="build")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--epochs", type=int, default=3, help="epochs of each training run")
    p.add_argument("--skip-train", action="store_true")
    p.add_argument("--skip-dense", action="store_true")
    p.add_argument("--timeout", type=float, default=600, help="seconds per run")
    p.add_argument("--json", default=None, help="also write the runs and medians here")
    args = p.parse_args()
    if not 1 <= args.rounds <= 20 or not 1 <= args.epochs <= 20:
        p.error("--rounds and --epochs must be in [1, 20]")
    runs = {}
    work = tempfile.mkdtemp(prefix="psflow-tcp-experiments-")
    try:
        print(f"tcp_experiments: {args.rounds} rounds, load average "
              f"{os.getloadavg()[0]:.1f}", flush=True)
        for i in range(args.rounds):
            # Alternate which setting goes first, so neither always follows the other.
            order = (True, False) if i % 2 == 0 else (False, True)
            for insecure in (False, True):
                transport = "insecure" if insecure else "mtls"
                for on in order:
                    setting = "on" if on else "off"
                    if not args.skip_dense:
                        ratios = dense(args, on, insecure)
                        for op, ratio in ratios.items():
                            runs.setdefault(f"{op}_ratio/{transport}/{setting}", []).append(ratio)
                        print(f"  round {i + 1} {transport} {setting}: pull {ratios['pull']:.2f} "
                              f"push {ratios['push']:.2f} of raw TCP", flush=True)
                    if not args.skip_train:
                        rate = train(args, work, on, insecure, f"{i}-{transport}-{setting}")
                        runs.setdefault(f"train_examples_per_s/{transport}/{setting}",
                                        []).append(rate)
                        print(f"  round {i + 1} {transport} {setting}: train {rate:.0f} "
                              f"examples/s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    medians = {k: statistics.median(v) for k, v in runs.items()}
    for key in sorted(medians):
        if key.endswith("/on"):
            off = key[:-3] + "/off"
            print(f"{key[:-3]:<36} on {medians[key]:>9.4g}  off {medians[off]:>9.4g}  "
                  f"on/off {medians[key] / medians[off]:.3f}  runs on {runs[key]} "
                  f"off {runs[off]}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"experiments": EXPERIMENTS, "runs": runs, "medians": medians}, f,
                      indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

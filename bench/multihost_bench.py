#!/usr/bin/env python3
"""Training throughput across hosts against link delay and bandwidth.

Every row trains the same job (the default model, mlp 784-256-10 with adam,
one epoch of Fashion-MNIST at --batch-size 256, 2 ps and 2 workers) and
reports examples per second. The baseline, measured in the same run, is the
embedded local cluster on loopback (`psflow train` without TF_CONFIG); the
other rows put each task on a host of its own (tests/multihost/: network
namespaces on a bridge) and change the links:

  delay 0, 1, 10, 50 ms   each way on every link (a user-space delay proxy:
                          this kernel has no netem); the proxy's real added
                          round trip is measured and printed too
  bandwidth 1 Gbit/s, 100 Mbit/s   a tbf cap on both ends of every link

Results are merged into <build-dir>/bench/results.json (entries of binary
"multihost_bench" are replaced) in the format of run_benchmarks.py, with
ratio = row / local baseline. Needs root (network namespaces); otherwise it
says so and exits 0 without results.

Usage: multihost_bench.py --build-dir build [--epochs 1] [--rows NAME,...]
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "multihost"))
import cluster  # noqa: E402
import netns_hosts  # noqa: E402

ROWS = [("delay_0ms", 0, None), ("delay_1ms", 1, None), ("delay_10ms", 10, None),
        ("delay_50ms", 50, None), ("bandwidth_1gbit", 0, "1gbit"),
        ("bandwidth_100mbit", 0, "100mbit")]
from results_merge import merge_results  # noqa: E402

BINARY = "multihost_bench"


def train_args(args, run_dir):
    return ["train", "--epochs", str(args.epochs), "--batch-size", str(args.batch_size),
            "--run-dir", run_dir, "--startup-timeout", "60"]


def examples_per_sec(run_dir):
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    if summary.get("steps") != summary.get("optimizer_iterations"):
        raise RuntimeError(f"steps {summary.get('steps')} != optimizer iterations "
                           f"{summary.get('optimizer_iterations')} in {run_dir}")
    return float(summary["examples_per_sec"])


def run_local(args, work):
    run_dir = os.path.join(work, "local")
    r = subprocess.run([args.psflow, *train_args(args, run_dir)], capture_output=True,
                       text=True, timeout=args.timeout)
    if r.returncode != 0:
        raise RuntimeError(f"local run failed ({r.returncode}): {r.stderr[-2000:]}")
    return examples_per_sec(run_dir)


def run_row(args, work, name, delay_ms, rate):
    run_dir = os.path.join(work, name)
    log_dir = os.path.join(work, name + "-logs")
    os.makedirs(log_dir)
    with netns_hosts.Hosts(5) as hosts:
        if rate:
            for i in range(5):
                hosts.cap_bandwidth(i, rate)
        chief_config = cluster.start_tasks(hosts, args.psflow, log_dir, delay_ms)
        rc = hosts.run(cluster.CHIEF, [args.psflow, *train_args(args, run_dir)],
                       env={"TF_CONFIG": chief_config},
                       log=os.path.join(log_dir, "chief.log"), timeout=args.timeout)
    if rc != 0:
        cluster.print_logs(log_dir)
        raise RuntimeError(f"{name}: psflow train exited with {rc}")
    return examples_per_sec(run_dir)


def measured_round_trip_ms(delay_ms, rounds=20):
    """The round trip a delay proxy adds on loopback, measured: a 1-byte
    echo through the proxy minus the same echo without it (median)."""
    echo = socket.socket()
    echo.bind(("127.0.0.1", 0))
    echo.listen()

    def serve():
        conn, _ = echo.accept()
        with conn:
            while True:
                b = conn.recv(1)
                if not b:
                    return
                conn.sendall(b)

    def median_rtt(port):
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        times = []
        for _ in range(rounds):
            t = time.monotonic()
            s.sendall(b"x")
            s.recv(1)
            times.append(time.monotonic() - t)
        s.close()
        return sorted(times)[len(times) // 2] * 1000

    threading.Thread(target=serve, daemon=True).start()
    direct = median_rtt(echo.getsockname()[1])
    threading.Thread(target=serve, daemon=True).start()
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    proxy = subprocess.Popen([sys.executable, os.path.join(HERE, "..", "tests", "multihost",
                                                           "delay_proxy.py"),
                              "--delay-ms", str(delay_ms),
                              f"127.0.0.1:{port}=127.0.0.1:{echo.getsockname()[1]}"],
                             stdout=subprocess.PIPE, text=True)
    try:
        if proxy.stdout.readline().strip() != "ready":
            raise RuntimeError("the delay proxy did not start")
        return median_rtt(port) - direct
    finally:
        proxy.kill()
        proxy.wait()
        echo.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--rows", default=",".join(r[0] for r in ROWS))
    args = parser.parse_args()
    args.psflow = os.path.join(args.build_dir, "psflow")
    reason = netns_hosts.can_make_namespaces()
    if reason:
        print(f"multihost_bench: skipped: {reason}")
        return 0
    wanted = set(args.rows.split(","))
    unknown = wanted - {r[0] for r in ROWS}
    if unknown:
        sys.exit(f"unknown rows {sorted(unknown)}; choose from {[r[0] for r in ROWS]}")
    work = tempfile.mkdtemp(prefix="psflow-multihost-bench-")
    try:
        print("multihost_bench: local baseline ...", flush=True)
        local = run_local(args, work)
        print(f"  local cluster on loopback: {local:.0f} examples/s", flush=True)
        entries = [{"name": "multihost/local_loopback", "value": local, "unit": "examples/s",
                    "binary": BINARY}]
        for name, delay_ms, rate in ROWS:
            if name not in wanted:
                continue
            value = run_row(args, work, name, delay_ms, rate)
            entry = {"name": f"multihost/{name}", "value": value, "unit": "examples/s",
                     "binary": BINARY, "baseline_name": "multihost/local_loopback",
                     "baseline_value": local, "ratio": value / local}
            if delay_ms > 0:
                entry["measured_added_rtt_ms"] = measured_round_trip_ms(delay_ms)
            entries.append(entry)
            extra = (f"; proxy adds {entry['measured_added_rtt_ms']:.1f} ms per round trip"
                     if delay_ms > 0 else "")
            print(f"  {name}: {value:.0f} examples/s, ratio {value / local:.3f}{extra}",
                  flush=True)
        output = os.path.join(args.build_dir, "bench", "results.json")
        os.makedirs(os.path.dirname(output), exist_ok=True)
        merge_results(output, BINARY, entries)
        print(f"multihost_bench: {len(entries)} results merged into {output}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

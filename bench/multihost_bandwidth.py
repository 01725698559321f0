#!/usr/bin/env python3
"""Training throughput across hosts against link bandwidth, with the bound
each link allows.

Every row trains the same job (mlp 784-256-10 with adam, one epoch of
Fashion-MNIST, 2 ps and 2 workers, each task on a host of its own:
tests/multihost/, network namespaces on a bridge) with one setting of the
links and of psflow:

  links   uncapped, 1 Gbit/s, 100 Mbit/s (a tbf cap on both ends of every
          link, as netns_hosts.Hosts.cap_bandwidth sets it)
  modes   default           psflow's default flags
          overlap_<other>   --overlap set to what the default is not (the
                            default "auto" is on across hosts with
                            more than one step per closure)
          round_robin_none  TF's placement with no partitioner
                            (--placement round_robin --partitioner none)
          bf16              --wire-dtype bfloat16 (skipped, with the reason
                            printed, when the binary has no such flag)

The link bound of a row: in the same run, raw TCP throughput T is measured
between a worker's host and a ps's host (one connection, 3 s, after the cap
is set); each step moves, in each direction, b_i bytes over ps i's link
(its parameters: the bytes summary.json says it holds, halved for bf16) and
B = sum(b_i) over the link of the worker that runs it. With W workers the
links allow min(min_i T / b_i, W * T / B) steps/s, times the batch size in
examples/s; the row's ratio is examples/s over that bound (links are full
duplex: pulls and pushes use opposite directions, so the bound counts each
direction once).

Results are merged into <build-dir>/bench/results.json (entries of binary
"multihost_bandwidth" are replaced) as multihost_bandwidth/<link>/<mode>,
value examples/s, baseline the bound. Needs root (network namespaces);
otherwise it says so and exits 0 without results.

Usage: multihost_bandwidth.py --build-dir build [--batch-size 256]
       [--steps-per-execution 10] [--links uncapped,1gbit,100mbit]
       [--modes default,overlap,round_robin_none,bf16]
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "multihost"))
import cluster  # noqa: E402
import netns_hosts  # noqa: E402

from results_merge import merge_results  # noqa: E402

BINARY = "multihost_bandwidth"
LINKS = {"uncapped": None, "1gbit": "1gbit", "100mbit": "100mbit"}
TCP_PORT = 5201
TCP_SECONDS = 3.0

# One-connection TCP throughput: the receiver prints bytes and seconds.
RECEIVER = r"""
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", int(sys.argv[1]))); s.listen(1); print("ready", flush=True)
c, _ = s.accept(); n = 0; t0 = None
while True:
    b = c.recv(1 << 20)
    if not b: break
    if t0 is None: t0 = time.monotonic()
    n += len(b)
print(f"received {n} {time.monotonic() - t0}", flush=True)
"""
SENDER = r"""
import socket, sys, time
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
buf = b"\0" * (1 << 20); end = time.monotonic() + float(sys.argv[3])
while time.monotonic() < end: c.sendall(buf)
c.close()
"""


def tcp_throughput(hosts, work, name, sender, receiver):
    """Bytes/s of one TCP connection from host `sender` to host `receiver`."""
    log = os.path.join(work, f"{name}-tcp.log")
    proc = hosts.start(receiver, [sys.executable, "-c", RECEIVER, str(TCP_PORT)], log=log)
    if netns_hosts.wait_for_line(log, r"^ready$", 30, proc) is None:
        raise RuntimeError(f"the TCP receiver did not start; see {log}")
    rc = hosts.run(sender, [sys.executable, "-c", SENDER, hosts.address(receiver),
                            str(TCP_PORT), str(TCP_SECONDS)], timeout=60)
    if rc != 0:
        raise RuntimeError(f"the TCP sender exited with {rc}")
    line = netns_hosts.wait_for_line(log, r"^received ", 30, proc)
    if line is None:
        raise RuntimeError(f"no TCP result; see {log}")
    _, n, seconds = line.split()
    return int(n) / float(seconds)


def help_text(psflow):
    return subprocess.run([psflow, "train", "--help"], capture_output=True, text=True,
                          check=True).stdout


def modes(psflow, wanted, steps_per_execution):
    text = help_text(psflow)
    m = re.search(r"--overlap TEXT:\{[a-z,]+\}=(auto|on|off)", text)
    # "auto" is on for a TF_CONFIG cluster (every row here) that runs more
    # than one step per closure.
    auto = "on" if steps_per_execution > 1 else "off"
    default_overlap = (auto if m.group(1) == "auto" else m.group(1)) if m else None
    out = []
    for mode in wanted:
        if mode == "default":
            out.append(("default", [], 1.0, None))
        elif mode == "overlap":
            if default_overlap is None:
                out.append(("overlap", None, 1.0, "this psflow has no --overlap flag"))
            else:
                other = "off" if default_overlap == "on" else "on"
                out.append((f"overlap_{other}", ["--overlap", other], 1.0, None))
        elif mode == "round_robin_none":
            out.append((mode, ["--placement", "round_robin", "--partitioner", "none"], 1.0,
                        None))
        elif mode == "bf16":
            skip = None if "--wire-dtype" in text else "this psflow has no --wire-dtype flag"
            out.append((mode, ["--wire-dtype", "bfloat16"], 0.5, skip))
        else:
            sys.exit(f"unknown mode {mode!r}")
    return out


def run_row(args, work, link, rate, mode, flags, byte_factor):
    name = f"{link}-{mode}"
    run_dir = os.path.join(work, name)
    log_dir = os.path.join(work, name + "-logs")
    os.makedirs(log_dir)
    with netns_hosts.Hosts(5) as hosts:
        if rate:
            for i in range(5):
                hosts.cap_bandwidth(i, rate)
        tcp = tcp_throughput(hosts, log_dir, name, cluster.WORKERS[0], cluster.PS[0])
        chief_config = cluster.start_tasks(hosts, args.psflow, log_dir)
        rc = hosts.run(cluster.CHIEF,
                       [args.psflow, "train", "--epochs", str(args.epochs), "--batch-size",
                        str(args.batch_size), "--steps-per-execution",
                        str(args.steps_per_execution), "--run-dir", run_dir,
                        "--startup-timeout", "60", *flags],
                       env={"TF_CONFIG": chief_config},
                       log=os.path.join(log_dir, "chief.log"), timeout=args.timeout)
    if rc != 0:
        cluster.print_logs(log_dir)
        raise RuntimeError(f"{name}: psflow train exited with {rc}")
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    if summary.get("steps") != summary.get("optimizer_iterations"):
        raise RuntimeError(f"{name}: steps {summary.get('steps')} != optimizer iterations "
                           f"{summary.get('optimizer_iterations')}")
    ps_bytes = [b * byte_factor for b in summary["ps_bytes"]]
    workers = int(summary["num_workers"])
    steps_per_s = min(min(tcp / b for b in ps_bytes if b > 0), workers * tcp / sum(ps_bytes))
    bound = steps_per_s * args.batch_size
    value = float(summary["examples_per_sec"])
    return {"name": f"{BINARY}/{link}/{mode}", "value": value, "unit": "examples/s",
            "binary": BINARY, "baseline_name": "link bound", "baseline_value": bound,
            "ratio": value / bound, "tcp_bytes_per_s": tcp, "ps_bytes": summary["ps_bytes"],
            "wire_byte_factor": byte_factor, "test_accuracy": summary.get("test_accuracy"),
            "batch_size": args.batch_size, "steps_per_execution": args.steps_per_execution,
            "flags": flags}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--steps-per-execution", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--links", default=",".join(LINKS))
    parser.add_argument("--modes", default="default,overlap,round_robin_none,bf16")
    args = parser.parse_args()
    args.psflow = os.path.join(args.build_dir, "psflow")
    reason = netns_hosts.can_make_namespaces()
    if reason:
        print(f"multihost_bandwidth: skipped: {reason}")
        return 0
    links = args.links.split(",")
    unknown = set(links) - set(LINKS)
    if unknown:
        sys.exit(f"unknown links {sorted(unknown)}; choose from {list(LINKS)}")
    rows = modes(args.psflow, args.modes.split(","), args.steps_per_execution)
    work = tempfile.mkdtemp(prefix="psflow-multihost-bandwidth-")
    entries = []
    try:
        for link in links:
            for mode, flags, factor, skip in rows:
                if skip:
                    print(f"  {link}/{mode}: skipped: {skip}", flush=True)
                    continue
                e = run_row(args, work, link, LINKS[link], mode, flags, factor)
                entries.append(e)
                print(f"  {link}/{mode}: {e['value']:.0f} examples/s, bound "
                      f"{e['baseline_value']:.0f} (TCP {e['tcp_bytes_per_s'] / 1e6:.1f} MB/s), "
                      f"ratio {e['ratio']:.3f}, test accuracy {e['test_accuracy']}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if entries:
            output = os.path.join(args.build_dir, "bench", "results.json")
            os.makedirs(os.path.dirname(output), exist_ok=True)
            merge_results(output, BINARY, entries)
            print(f"multihost_bandwidth: {len(entries)} results merged into {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

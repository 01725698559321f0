#!/usr/bin/env python3
"""Link faults between hosts during training (network namespaces as hosts).

Scenarios (one per run, --scenario):
  worker_cut      a worker's link is cut for longer than the coordinator's
                  worker timeout, then restored: training goes on with the
                  other worker meanwhile (no stall beyond the bound), and
                  finishes with every step applied exactly once.
  ps_cut          a ps's link is cut: the chief stops with UNAVAILABLE naming
                  the ps (TF's behaviour) within the bound.
  ps_cut_recover  the same with --ps-recovery: once the link is back the run
                  rolls back to its last checkpoint and finishes, every step
                  applied exactly once.
  loss            1 % of the packets every host sends are dropped.
  delay_loss      the same, and every link delayed by --delay-ms (50) each
                  way (a delay proxy: this kernel has no netem); a larger
                  batch keeps the run short.
  bandwidth       every link capped at --rate (tbf, both directions).

Each run: 1 chief, 2 ps, 2 workers, one host each.
Exit 0 on success, 1 on failure, 77 (skip) where namespaces cannot be made.
"""

import argparse
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netns_hosts  # noqa: E402
from cluster import (CHIEF, MIN_ACCURACY, PS, WORKERS, check_summary, print_logs,  # noqa: E402
                     start_tasks)

# The coordinator gives a worker up after this long without an answer
# (ClusterCoordinator's worker_timeout; docs/fault_tolerance.md).
WORKER_TIMEOUT = 20.0
# How long training may make no progress while a worker is cut off: the
# worker timeout plus the time to run the lost closure again elsewhere.
MAX_STALL = WORKER_TIMEOUT + 10.0
PS1, WORKER1 = PS[1], WORKERS[1]
PROGRESS = re.compile(r"epoch (\d+)/\d+ \[[^\]]*\] (\d+)/(\d+) steps")


class Progress:
    """Global steps seen in the chief's log, with when they were seen."""

    def __init__(self, path):
        self.log = netns_hosts.LogFollower(path)
        self.samples = []  # (monotonic time, global step)

    def poll(self):
        now = time.monotonic()
        for line in self.log.lines():
            m = PROGRESS.search(line)
            if m:
                epoch, step, per_epoch = (int(g) for g in m.groups())
                self.samples.append((now, (epoch - 1) * per_epoch + step))

    def longest_stall(self, since):
        """Longest time after `since` between two progress increments."""
        points = [(t, s) for t, s in self.samples if t >= since]
        worst, last_t, last_s = 0.0, since, None
        for t, s in points:
            if last_s is None or s > last_s:
                worst = max(worst, t - last_t)
                last_t, last_s = t, s
        return worst


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--psflow", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--scenario", required=True,
                        choices=["worker_cut", "ps_cut", "ps_cut_recover", "loss", "delay_loss",
                                 "bandwidth"])
    parser.add_argument("--epochs", type=int, default=0, help="0: the scenario's default")
    parser.add_argument("--cut-seconds", type=float, default=30.0)
    parser.add_argument("--rate", default="100mbit")
    parser.add_argument("--delay-ms", type=float, default=50)
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--train-args", default="",
                        help="more `psflow train` flags, space-separated (e.g. "
                        "'--steps-per-execution 10 --overlap on')")
    args = parser.parse_args()
    epochs = args.epochs or {"worker_cut": 5, "ps_cut": 3, "ps_cut_recover": 3}.get(
        args.scenario, 1)

    shutil.rmtree(args.work_dir, ignore_errors=True)
    log_dir = os.path.join(args.work_dir, "logs")
    run_dir = os.path.join(args.work_dir, "run")
    os.makedirs(log_dir)
    chief_log = os.path.join(log_dir, "chief.log")
    failures = []

    with netns_hosts.Hosts(5) as hosts:
        if args.scenario in ("loss", "delay_loss"):
            for i in range(5):
                hosts.lose(i, 1)
        if args.scenario == "bandwidth":
            for i in range(5):
                hosts.cap_bandwidth(i, args.rate)
        chief_config = start_tasks(hosts, args.psflow, log_dir,
                                   args.delay_ms if args.scenario == "delay_loss" else 0)
        argv = [args.psflow, "train", "--epochs", str(epochs), "--run-dir", run_dir,
                "--startup-timeout", "60"]
        if args.scenario == "delay_loss":
            argv += ["--batch-size", "256"]
        if args.scenario == "ps_cut_recover":
            argv += ["--ps-recovery", "--ps-recovery-timeout", "120"]
        argv += args.train_args.split()
        started = time.monotonic()
        chief = hosts.start(CHIEF, argv, env={"TF_CONFIG": chief_config},
                            log=chief_log)
        progress = Progress(chief_log)
        cut_at = None
        if args.scenario in ("worker_cut", "ps_cut", "ps_cut_recover"):
            # Cut once training is well under way (the first epoch's
            # checkpoint exists for the ps scenarios).
            pattern = r"epoch 1/\d+: train loss" if args.scenario != "worker_cut" else \
                r"epoch 1/\d+ \[.*\] [0-9]{3,}/"
            if netns_hosts.wait_for_line(chief_log, pattern, 300, chief) is None:
                failures.append("training never got under way")
            else:
                host = WORKER1 if args.scenario == "worker_cut" else PS1
                hosts.cut(host)
                cut_at = time.monotonic()
                print(f"cut host {host} ({hosts.address(host)}) at "
                      f"{cut_at - started:.1f} s", flush=True)
                deadline = cut_at + args.cut_seconds
                while time.monotonic() < deadline and chief.poll() is None:
                    progress.poll()
                    time.sleep(0.2)
                if args.scenario != "ps_cut":
                    hosts.heal(host)
                    print(f"healed host {host} at {time.monotonic() - started:.1f} s",
                          flush=True)
        deadline = started + args.timeout
        while chief.poll() is None and time.monotonic() < deadline:
            progress.poll()
            time.sleep(0.2)
        progress.poll()
        if chief.poll() is None:
            failures.append(f"psflow train still running after {args.timeout} s")
        rc = chief.returncode
        ended = time.monotonic()
        if args.scenario != "ps_cut":
            for p in hosts.procs[:-1]:
                if p.poll() is not None:
                    failures.append(f"a task exited during training (status {p.returncode})")

    with open(chief_log, errors="replace") as f:
        log = f.read()
    if args.scenario == "ps_cut":
        if rc == 0:
            failures.append("training finished although a ps was cut off for good")
        if "/job:ps/replica:0/task:1" not in log:
            failures.append("the chief's error does not name the ps that was cut off")
        if cut_at is not None:
            print(f"stopped {ended - cut_at:.1f} s after the cut")
        result = f"stopped with status {rc}"
    else:
        if rc != 0:
            failures.append(f"psflow train exited with {rc}")
        result = "no summary"
        if rc == 0:
            # delay_loss trains at batch 256: fewer steps, a lower one-epoch level.
            _, result = check_summary(run_dir, failures,
                                      0.78 if args.scenario == "delay_loss" else MIN_ACCURACY)
        if args.scenario == "worker_cut" and cut_at is not None:
            stall = progress.longest_stall(cut_at)
            print(f"longest stall after the cut: {stall:.1f} s (bound {MAX_STALL} s)")
            if stall > MAX_STALL:
                failures.append(f"training stalled {stall:.1f} s with a worker cut off; the "
                                f"bound is {MAX_STALL} s")
    print("\n".join(log.splitlines()[-4:]))
    for f in failures:
        print(f"FAIL: {f}")
    if failures:
        print_logs(log_dir)
        return 1
    print(f"OK ({args.scenario}): {result}; {ended - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

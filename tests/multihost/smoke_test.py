#!/usr/bin/env python3
"""Multi-host smoke test: 1 chief, 2 ps and 2 workers on 5 hosts.

Each task runs the same psflow binary in its own network namespace with its
own TF_CONFIG naming the other hosts' addresses, exactly as a TFJob sets it.
The chief trains one epoch of the default model; the test checks that the
run finished, that every step was applied exactly once (the optimizer's
iteration count equals the steps taken) and that the test accuracy reaches
the one-epoch level of a local run.

Then, on the same hosts, --insecure on a namespace (non-loopback) address: a
ps without credentials and without --insecure exits 2 naming the fix; with
--insecure it serves, warning at start and when a client (the chief of a
second, plaintext cluster) first connects.

Usage: smoke_test.py --psflow BUILD/psflow --work-dir DIR
Exit 0 on success, 1 on failure, 77 (skip) where namespaces cannot be made.
"""

import argparse
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netns_hosts  # noqa: E402
from cluster import (CHIEF, PS, WORKERS, check_summary, print_logs, start_tasks,  # noqa: E402
                     tf_config)

INSECURE_PORT = 2223
# An empty PSFLOW_TLS_DIR counts as unset: no credentials.
NO_TLS = {"PSFLOW_TLS_DIR": ""}


def check_insecure(hosts, psflow, log_dir, run_dir):
    """The --insecure checks on non-loopback addresses; returns failures."""
    cluster = {"chief": [f"{hosts.address(CHIEF)}:{INSECURE_PORT}"],
               "ps": [f"{hosts.address(PS[0])}:{INSECURE_PORT}"],
               "worker": [f"{hosts.address(WORKERS[0])}:{INSECURE_PORT}"]}
    failures = []
    refused_log = os.path.join(log_dir, "insecure-refused.log")
    rc = hosts.run(PS[0], [psflow, "server"],
                   env={**NO_TLS, "TF_CONFIG": tf_config(cluster, "ps", 0)},
                   log=refused_log, timeout=60)
    with open(refused_log, errors="replace") as f:
        refused = f.read()
    if rc != 2 or "has no TLS credentials" not in refused or "--insecure" not in refused:
        failures.append(f"a ps without credentials on {cluster['ps'][0]} exited {rc}, not 2 "
                        f"with the message: {refused.strip()}")
    ps_log = os.path.join(log_dir, "insecure-ps.log")
    ps = hosts.start(PS[0], [psflow, "server", "--insecure"],
                     env={**NO_TLS, "TF_CONFIG": tf_config(cluster, "ps", 0)}, log=ps_log)
    hosts.start(WORKERS[0], [psflow, "server", "--insecure"],
                env={**NO_TLS, "TF_CONFIG": tf_config(cluster, "worker", 0)},
                log=os.path.join(log_dir, "insecure-worker.log"))
    if netns_hosts.wait_for_line(ps_log, r"mTLS off \(--insecure\): plaintext on "
                                 + hosts.address(PS[0]), 60, ps) is None:
        failures.append(f"the --insecure ps did not warn at start; see {ps_log}")
        return failures
    chief = hosts.start(CHIEF, [psflow, "train", "--insecure", "--epochs", "1", "--run-dir",
                                run_dir + "-insecure", "--startup-timeout", "60"],
                        env={**NO_TLS, "TF_CONFIG": tf_config(cluster, "chief", 0)},
                        log=os.path.join(log_dir, "insecure-chief.log"))
    pattern = (r"an unauthenticated client connected from .*" + re.escape(hosts.address(CHIEF))
               + r".* over plaintext \(--insecure")
    if netns_hosts.wait_for_line(ps_log, pattern, 120, ps) is None:
        failures.append(f"the --insecure ps did not warn when the chief connected; see {ps_log}")
    if chief.poll() is None:
        chief.terminate()
        chief.wait(timeout=60)
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--psflow", required=True)
    parser.add_argument("--work-dir", required=True)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--delay-ms", type=float, default=0,
                        help="delay added to every link, each direction")
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()

    shutil.rmtree(args.work_dir, ignore_errors=True)
    log_dir = os.path.join(args.work_dir, "logs")
    run_dir = os.path.join(args.work_dir, "run")
    os.makedirs(log_dir)

    with netns_hosts.Hosts(5) as hosts:
        chief_config = start_tasks(hosts, args.psflow, log_dir, args.delay_ms)
        print(f"chief's TF_CONFIG: {chief_config}", flush=True)
        chief_log = os.path.join(log_dir, "chief.log")
        rc = hosts.run(0, [args.psflow, "train", "--epochs", str(args.epochs), "--run-dir",
                           run_dir, "--startup-timeout", "60"],
                       env={"TF_CONFIG": chief_config}, log=chief_log,
                       timeout=args.timeout)
        for p in hosts.procs[:-1]:
            if p.poll() is not None:
                print(f"FAIL: a task exited during training (status {p.returncode})")
                print_logs(log_dir)
                return 1
        if rc != 0:
            print(f"FAIL: psflow train exited with {rc}")
            print_logs(log_dir)
            return 1
        insecure_failures = check_insecure(hosts, args.psflow, log_dir, run_dir)

    with open(chief_log, errors="replace") as f:
        sys.stdout.writelines(f.readlines()[-3:])
    failures = []
    summary, result = check_summary(run_dir, failures)
    if summary.get("num_ps") != 2 or summary.get("num_workers") != 2:
        failures.append(f"summary says {summary.get('num_ps')} ps and "
                        f"{summary.get('num_workers')} workers, expected 2 and 2")
    failures += insecure_failures
    for f in failures:
        print(f"FAIL: {f}")
    if failures:
        print_logs(log_dir)
        return 1
    print(f"OK: 5 hosts, {result}; --insecure refused without it, warned at start and on "
          "connection with it")
    return 0


if __name__ == "__main__":
    sys.exit(main())

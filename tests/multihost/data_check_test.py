#!/usr/bin/env python3
"""A worker whose host lacks the training data stops the run before it starts.

Worker 1's host sees an empty directory at the data path (a bind mount in
its own mount namespace, which `ip netns exec` gives it); the other hosts
see the data. The chief must fail before any training step, naming the
worker, its address, its host and the missing file, and saying where
workers look for their data.

Usage: data_check_test.py --psflow BUILD/psflow --work-dir DIR
Exit 0 on success, 1 on failure, 77 (skip) where namespaces cannot be made.
"""

import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netns_hosts  # noqa: E402
from cluster import CHIEF, WORKERS, print_logs, start_tasks  # noqa: E402

DATA_DIR = "/usr/share/datasets/fashion-mnist"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--psflow", required=True)
    parser.add_argument("--work-dir", required=True)
    args = parser.parse_args()
    shutil.rmtree(args.work_dir, ignore_errors=True)
    log_dir = os.path.join(args.work_dir, "logs")
    empty = os.path.join(args.work_dir, "empty")
    os.makedirs(log_dir)
    os.makedirs(empty)
    if not os.path.isdir(DATA_DIR):
        netns_hosts.skip(f"{DATA_DIR} is missing (install dataset-fashion-mnist)")

    with netns_hosts.Hosts(5) as hosts:
        def without_data(job, index, argv):
            if (job, index) != ("worker", 1):
                return argv
            return ["sh", "-c", 'mount --bind "$0" "$1" && shift && exec "$@"', empty, DATA_DIR,
                    *argv]

        chief_config = start_tasks(hosts, args.psflow, log_dir, wrap=without_data)
        chief_log = os.path.join(log_dir, "chief.log")
        rc = hosts.run(CHIEF, [args.psflow, "train", "--epochs", "1", "--run-dir",
                               os.path.join(args.work_dir, "run"), "--startup-timeout", "60"],
                       env={"TF_CONFIG": chief_config}, log=chief_log,
                       timeout=300)

    with open(chief_log, errors="replace") as f:
        log = f.read()
    failures = []
    if rc == 0:
        failures.append("training ran although worker 1 cannot read its data")
    if " steps " in log or "epoch 1/1 [" in log:
        failures.append("a training step ran before the data check failed")
    for needed in [f"/job:worker/replica:0/task:1 ({hosts.address(WORKERS[1])}:2222)",
                   "on host ", f"{DATA_DIR}/train-images-idx3-ubyte.gz",
                   "same path on every host"]:
        if needed not in log:
            failures.append(f"the chief's error does not say '{needed}'")
    if "/job:worker/replica:0/task:0" in log:
        failures.append("the error names worker 0, which can read its data")
    print("\n".join(log.splitlines()[-3:]))
    for f in failures:
        print(f"FAIL: {f}")
    if failures:
        print_logs(log_dir)
        return 1
    print("OK: the run stopped before its first step, naming the worker, host and file")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The cluster the multi-host tests run: 1 chief, 2 ps and 2 workers, one
host each (hosts 0..4 of a netns_hosts.Hosts), every task's TF_CONFIG as a
TFJob would set it.

With a delay, every task that opens connections (the chief and the workers)
gets a delay proxy (delay_proxy.py) on its own host, and its TF_CONFIG names
the proxy's loopback addresses instead of its peers': every connection
between hosts then carries the delay in both directions.

Every connection is mutual TLS: start_tasks makes the cluster's certificates
with `psflow certs` (loopback names included, for the proxies) and sets
PSFLOW_TLS_DIR for every process started after it, the chief included.
"""

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

import netns_hosts

PORT = 2222
# A local one-epoch run of the default model (mlp, adam, batch 32) reaches
# 0.85-0.86 test accuracy; logistic regression reaches 0.81.
MIN_ACCURACY = 0.82
CHIEF, PS, WORKERS = 0, (1, 2), (3, 4)
PROXY_PORT_BASE = 7000
_HERE = os.path.dirname(os.path.abspath(__file__))


def cluster_of(hosts):
    addr = lambda i: f"{hosts.address(i)}:{PORT}"  # noqa: E731
    return {"chief": [addr(CHIEF)], "ps": [addr(i) for i in PS],
            "worker": [addr(i) for i in WORKERS]}


def tf_config(cluster, job, index):
    return json.dumps({"cluster": cluster, "task": {"type": job, "index": index}})


def print_logs(log_dir):
    for name in sorted(os.listdir(log_dir)):
        with open(os.path.join(log_dir, name), errors="replace") as f:
            lines = f.readlines()
        print(f"--- {name} (last 30 lines) ---")
        sys.stdout.writelines(lines[-30:])


def _proxied(hosts, host, cluster, jobs, delay_ms, log_dir, name):
    """Starts a delay proxy on `host` for every task of `jobs` and returns
    the cluster as that host should see it."""
    seen = {job: list(tasks) for job, tasks in cluster.items()}
    routes = []
    port = PROXY_PORT_BASE
    for job in jobs:
        for i, address in enumerate(cluster[job]):
            local = f"127.0.0.1:{port}"
            routes.append(f"{local}={address}")
            seen[job][i] = local
            port += 1
    log = os.path.join(log_dir, f"proxy-{name}.log")
    proc = hosts.start(host, [sys.executable, os.path.join(_HERE, "delay_proxy.py"),
                              "--delay-ms", str(delay_ms), *routes], log=log)
    if netns_hosts.wait_for_line(log, r"^ready$", 30, proc) is None:
        raise RuntimeError(f"the delay proxy on host {host} did not start; see {log}")
    return seen


def make_certificates(psflow, cluster):
    """Writes the cluster's CA and task certificates into a new private
    directory (removed at exit) and points PSFLOW_TLS_DIR at it."""
    tls_dir = tempfile.mkdtemp(prefix="psflow-multihost-tls-")
    atexit.register(shutil.rmtree, tls_dir, True)
    subprocess.run([psflow, "certs", "--cluster-spec", json.dumps(cluster), "--out", tls_dir,
                    "--loopback-names"], check=True, stdout=subprocess.DEVNULL)
    os.environ["PSFLOW_TLS_DIR"] = tls_dir
    return tls_dir


def start_tasks(hosts, psflow, log_dir, delay_ms=0, wrap=None):
    """Starts the ps and worker tasks over mutual TLS (make_certificates);
    returns the chief's TF_CONFIG. `wrap(job, index, argv)`, when given,
    returns the command line a task runs instead of argv (e.g. argv behind
    a setup step)."""
    wrap = wrap or (lambda job, index, argv: argv)
    cluster = cluster_of(hosts)
    make_certificates(psflow, cluster)
    for index, host in enumerate(PS):
        hosts.start(host, wrap("ps", index, [psflow, "server"]),
                    env={"TF_CONFIG": tf_config(cluster, "ps", index)},
                    log=os.path.join(log_dir, f"ps{index}.log"))
    for index, host in enumerate(WORKERS):
        seen = cluster
        if delay_ms > 0:
            seen = _proxied(hosts, host, cluster, ["ps"], delay_ms, log_dir, f"worker{index}")
        hosts.start(host, wrap("worker", index, [psflow, "server"]),
                    env={"TF_CONFIG": tf_config(seen, "worker", index)},
                    log=os.path.join(log_dir, f"worker{index}.log"))
    seen = cluster
    if delay_ms > 0:
        seen = _proxied(hosts, CHIEF, cluster, ["ps", "worker"], delay_ms, log_dir, "chief")
    return tf_config(seen, "chief", 0)


def check_summary(run_dir, failures, min_accuracy=MIN_ACCURACY):
    """Checks the run's summary.json (every step applied exactly once, the
    accuracy floor), adding what fails to `failures`; returns the summary
    and a one-line description."""
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    steps, iterations = summary.get("steps"), summary.get("optimizer_iterations")
    rolled_back = summary.get("rolled_back_steps", 0)
    if not steps or steps != iterations:
        failures.append(f"steps {steps} but optimizer iterations {iterations}: a step was lost "
                        "or applied twice")
    accuracy = summary.get("test_accuracy", 0)
    if accuracy < min_accuracy:
        failures.append(f"test accuracy {accuracy} below {min_accuracy}")
    return summary, (f"{steps} steps ({rolled_back} rolled back and redone), "
                     f"test accuracy {accuracy}")

"""LocalCluster: a real ps/worker cluster of `psflow server` processes on
this machine, as the C++ psflow::LocalCluster (include/psflow/local_cluster.h).

    with psflow.LocalCluster(num_ps=2, num_workers=2) as cluster:
        strategy = psflow.distribute.ParameterServerStrategy(cluster.cluster_resolver())
"""

import os
import shutil

from psflow import _psflow
from psflow.distribute.cluster_resolver import SimpleClusterResolver
from psflow.train import ClusterSpec

__all__ = ["LocalCluster", "find_binary"]


def _is_executable(path):
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_binary(binary=None):
    """The psflow binary the tasks run: `binary` when given, else
    $PSFLOW_BINARY, else the build's or the installation's psflow, else
    `psflow` on PATH. FileNotFoundError names every place tried."""
    if binary is not None:
        if not _is_executable(binary):
            raise FileNotFoundError("LocalCluster: binary %r is not an executable file" % binary)
        return os.path.abspath(binary)
    tried = []
    env = os.environ.get("PSFLOW_BINARY")
    if env:
        if _is_executable(env):
            return os.path.abspath(env)
        raise FileNotFoundError("LocalCluster: PSFLOW_BINARY=%r is not an executable file" % env)
    tried.append("$PSFLOW_BINARY (unset)")
    try:
        from psflow import _build_info
        dirs = _build_info.BINARY_DIRS
    except ImportError:
        dirs = ()
    for directory in dirs:
        candidate = os.path.join(directory, "psflow")
        if _is_executable(candidate):
            return candidate
        tried.append(candidate)
    on_path = shutil.which("psflow")
    if on_path:
        return on_path
    tried.append("psflow on PATH")
    raise FileNotFoundError("LocalCluster: no psflow binary found; tried %s. Build it "
                            "(make build), install it (cmake --install), or set "
                            "PSFLOW_BINARY to its path" % ", ".join(tried))


def _modules(python_module):
    if python_module is None:
        return []
    if isinstance(python_module, str):
        python_module = [python_module]
    modules = []
    for m in python_module:
        if not isinstance(m, str) or not m or not all(p.isidentifier() for p in m.split(".")):
            raise ValueError("LocalCluster: python_module must be module names such as "
                             "'my_model.steps', got %r" % (m,))
        modules.append(m)
    return modules


def _export_python_environment():
    """What the tasks (children, which inherit this environment) need to
    import psflow and the user's modules as this process does: this
    interpreter ($PSFLOW_PYTHON) and its import path ($PYTHONPATH)."""
    import sys
    os.environ.setdefault("PSFLOW_PYTHON", sys.executable)
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [package_root] + [os.path.abspath(p or os.curdir) for p in sys.path
                              if p == "" or (os.path.isdir(p) and "site-packages" not in p
                                             and "dist-packages" not in p
                                             and not p.startswith(sys.base_prefix))]
    current = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    merged = []
    for p in current + paths:
        if p not in merged:
            merged.append(p)
    os.environ["PYTHONPATH"] = os.pathsep.join(merged)


def _count(value, what, minimum):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("LocalCluster: %s must be an int, got %r" % (what, value))
    if value < minimum:
        raise ValueError("LocalCluster: %s must be >= %d, got %d" % (what, minimum, value))
    return value


class LocalCluster:
    """`num_ps` ps and `num_workers` worker tasks as children of this
    process, on loopback, each answering its health check before start()
    returns; stopped (and reaped) by stop() or at the end of a `with`.

    Connections are mutual TLS with a fresh CA per cluster (this process
    presents the chief's certificate while the cluster lives) unless
    `insecure`. `log_dir`: one log file per task there (else the tasks
    write to this process's stderr). `server_flags` go to every task's
    `psflow server` command line. `python_module` (a module name or a
    list): every worker imports it (`psflow server --python MODULE`, a
    Python process; the ps tasks ignore it), so that its
    @psflow.function steps run on the workers; the tasks get this interpreter and import path
    ($PSFLOW_PYTHON, $PYTHONPATH of this process are set for them).
    """

    def __init__(self, num_ps=2, num_workers=2, *, binary=None, host="127.0.0.1",
                 startup_timeout=30.0, log_dir=None, max_restarts=0, server_flags=(),
                 insecure=False, tls_dir=None, python_module=None):
        self._python_modules = _modules(python_module)
        self._num_ps = _count(num_ps, "num_ps", 1)
        self._num_workers = _count(num_workers, "num_workers", 1)
        self._max_restarts = _count(max_restarts, "max_restarts", 0)
        if not isinstance(startup_timeout, (int, float)) or startup_timeout <= 0:
            raise ValueError("LocalCluster: startup_timeout must be a positive number of "
                             "seconds, got %r" % (startup_timeout,))
        if isinstance(server_flags, str) or not all(isinstance(f, str) for f in server_flags):
            raise TypeError("LocalCluster: server_flags must be a list of str, got %r"
                            % (server_flags,))
        self._binary = binary
        self._host = host
        self._startup_timeout = float(startup_timeout)
        self._log_dir = log_dir
        self._server_flags = list(server_flags)
        self._insecure = bool(insecure)
        self._tls_dir = tls_dir
        self._native = None

    def start(self):
        if self._native is not None:
            raise RuntimeError("LocalCluster: already started")
        binary = find_binary(self._binary)
        flags = list(self._server_flags)
        if self._python_modules:
            _export_python_environment()
            flags += ["--python", ",".join(self._python_modules)]
        self._native = _psflow._LocalCluster(
            self._num_ps, self._num_workers, binary, self._host, self._startup_timeout,
            self._log_dir or "", self._max_restarts, flags, self._insecure,
            self._tls_dir or "")
        return self

    def stop(self, grace=5.0):
        """SIGTERM to every task, SIGKILL after `grace` seconds; reaps them."""
        if self._native is not None:
            self._native.stop(float(grace))

    def __enter__(self):
        return self.start() if self._native is None else self

    def __exit__(self, *exc):
        self.stop()
        return False

    def _started(self):
        if self._native is None:
            raise RuntimeError("LocalCluster: not started (use start() or `with`)")
        return self._native

    @property
    def cluster_spec(self):
        """The tasks, with a "chief" entry for this process."""
        import json
        return ClusterSpec(json.loads(self._started().cluster_spec_json()))

    def cluster_resolver(self):
        """A resolver naming this process the chief of the cluster."""
        return SimpleClusterResolver(self.cluster_spec, task_type="chief", task_id=0)

    def pid(self, job, index):
        return self._started().pid(job, index)

    def signal_task(self, job, index, signal):
        """Sends `signal` to one task (e.g. signal.SIGKILL)."""
        self._started().signal_task(job, index, int(signal))

    def restart_count(self, job, index):
        return self._started().restart_count(job, index)

    def wait_for_restart(self, job, index, restarts, timeout=30.0):
        return self._started().wait_for_restart(job, index, restarts, float(timeout))

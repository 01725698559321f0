"""Hosts on one machine for multi-host tests: network namespaces on a bridge.

Each "host" is a network namespace with its own address on a private
bridge, as separate machines on one switch would be. Processes started on a
host see only that host's network (its address and loopback), so tasks
reach each other exactly as they would across machines: through the
addresses their TF_CONFIG names.

Everything made here is named after the process that made it (namespaces
"pfmh-<pid>-h<i>", bridge "pfb<pid>", host-side veths "pfv<pid>h<i>"), and
removed on exit, on SIGTERM/SIGINT, and, after a run that was killed, by the
next run (a name whose pid is no longer alive is stale). Processes started
on a host die with the harness (PR_SET_PDEATHSIG).

Link faults use the kernel's own tools: a cut link is the host's interface
set down; loss is an nftables rule in the host's output chain; a bandwidth
cap is a tbf qdisc on both ends of the host's link. This kernel has no
netem, so there is no added delay here.
"""

import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import time

SKIP = 77  # ctest's SKIP_RETURN_CODE for this suite
SUBNET = "10.77.0"
_PREFIX = "pfmh-"
_PR_SET_PDEATHSIG = 1


def skip(reason):
    print(f"SKIP: {reason}", flush=True)
    sys.exit(SKIP)


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_netns_pids(ns):
    r = _ip("netns", "pids", ns, check=False)
    for line in r.stdout.split():
        try:
            os.kill(int(line), signal.SIGKILL)
        except (ValueError, ProcessLookupError):
            pass


def remove_stale():
    """Removes namespaces, bridges and veths of runs whose process is gone."""
    r = _ip("netns", "list", check=False)
    for line in r.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.match(r"pfmh-(\d+)-h\d+$", name)
        if m and not _pid_alive(int(m.group(1))):
            _kill_netns_pids(name)
            _ip("netns", "del", name, check=False)
    r = _ip("-o", "link", "show", check=False)
    for line in r.stdout.splitlines():
        m = re.match(r"\d+: (pf[bv](\d+)\S*?)[@:]", line)
        if m and not _pid_alive(int(m.group(2))):
            _ip("link", "del", m.group(1), check=False)


def can_make_namespaces():
    """None when namespaces can be made here, else the reason they cannot."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "the ip tool (iproute2) is not installed"
    probe = f"{_PREFIX}{os.getpid()}-probe"
    r = _ip("netns", "add", probe, check=False)
    if r.returncode != 0:
        return f"ip netns add failed: {r.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def _die_with_parent():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    os.setsid()


class Hosts:
    """N hosts on one bridge; use as a context manager.

    Thread-safety: not thread-safe; one test drives it.
    """

    def __init__(self, n):
        if n < 1 or n > 200:
            raise ValueError(f"between 1 and 200 hosts, got {n}")
        self.n = n
        self.pid = os.getpid()
        self.bridge = f"pfb{self.pid}"
        self.namespaces = [f"{_PREFIX}{self.pid}-h{i}" for i in range(n)]
        self.procs = []
        self._old_handlers = {}

    def address(self, i):
        return f"{SUBNET}.{i + 1}"

    def veth(self, i):
        return f"pfv{self.pid}h{i}"

    def __enter__(self):
        reason = can_make_namespaces()
        if reason:
            skip(reason)
        remove_stale()
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._old_handlers[sig] = signal.signal(sig, self._on_signal)
        try:
            self._make()
        except Exception:
            self.close()
            raise
        return self

    def _make(self):
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("link", "set", self.bridge, "up")
        for i, ns in enumerate(self.namespaces):
            _ip("netns", "add", ns)
            _ip("link", "add", self.veth(i), "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("link", "set", self.veth(i), "master", self.bridge)
            _ip("link", "set", self.veth(i), "up")
            _ip("-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")

    def _on_signal(self, signum, frame):
        self.close()
        sys.exit(128 + signum)

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.procs = []
        for ns in self.namespaces:
            _kill_netns_pids(ns)
            _ip("netns", "del", ns, check=False)
        for i in range(self.n):
            _ip("link", "del", self.veth(i), check=False)
        _ip("link", "del", self.bridge, check=False)
        for sig, old in self._old_handlers.items():
            signal.signal(sig, old)
        self._old_handlers = {}

    def start(self, i, argv, env=None, log=None):
        """Starts argv on host i; output goes to the file `log` (a path)."""
        full_env = dict(os.environ)
        # Each namespace stands for a host of its own; the kernel is shared,
        # so without this the tasks would find each other on "the same host"
        # and move tensors through shared memory instead of the links.
        full_env["PSFLOW_SHARED_MEMORY"] = "off"
        full_env.update(env or {})
        out = open(log, "wb") if log else subprocess.DEVNULL
        try:
            p = subprocess.Popen(["ip", "netns", "exec", self.namespaces[i], *argv],
                                 env=full_env, stdout=out, stderr=subprocess.STDOUT,
                                 preexec_fn=_die_with_parent)
        finally:
            if log:
                out.close()
        self.procs.append(p)
        return p

    def run(self, i, argv, env=None, log=None, timeout=600):
        """Runs argv on host i to the end (bounded by `timeout` seconds)."""
        p = self.start(i, argv, env, log)
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            raise

    # --- link faults -------------------------------------------------------

    def cut(self, i):
        _ip("-n", self.namespaces[i], "link", "set", "eth0", "down")

    def heal(self, i):
        _ip("-n", self.namespaces[i], "link", "set", "eth0", "up")

    def cap_bandwidth(self, i, rate="100mbit"):
        for args in (["-n", self.namespaces[i]], []):
            dev = "eth0" if args else self.veth(i)
            subprocess.run(["tc", *args, "qdisc", "replace", "dev", dev, "root", "tbf", "rate",
                            rate, "burst", "256kb", "latency", "50ms"], check=True,
                           capture_output=True)


    def lose(self, i, percent):
        """Drops `percent` % of the packets host i sends, at random (nftables)."""
        ns = self.namespaces[i]
        script = ("table inet psflow_loss {\n  chain out {\n"
                  "    type filter hook output priority 0;\n"
                  f"    oifname \"eth0\" numgen random mod 100 < {int(percent)} drop\n  }}\n}}\n")
        subprocess.run(["ip", "netns", "exec", ns, "nft", "-f", "-"], input=script, text=True,
                       check=True, capture_output=True)

    def stop_losing(self, i):
        subprocess.run(["ip", "netns", "exec", self.namespaces[i], "nft", "delete", "table",
                        "inet", "psflow_loss"], check=False, capture_output=True)


class LogFollower:
    """Reads a growing log file: each call to lines() gives the lines
    completed since the last call (a progress bar's \\r ends one too)."""

    def __init__(self, path):
        self.path = path
        self.pos = 0
        self.buf = ""

    def lines(self):
        try:
            with open(self.path, errors="replace") as f:
                f.seek(self.pos)
                chunk = f.read()
                self.pos = f.tell()
        except FileNotFoundError:
            return []
        self.buf += chunk
        *done, self.buf = re.split(r"[\r\n]", self.buf)
        return done


def wait_for_line(path, pattern, timeout, proc=None):
    """The first line of the file at `path` matching `pattern` (a regex),
    once it appears; None after `timeout` seconds or once `proc` has ended
    without writing it. Polls the file as it grows (a progress event, not a
    fixed pause)."""
    deadline = time.monotonic() + timeout
    rx = re.compile(pattern)
    log = LogFollower(path)
    while time.monotonic() < deadline:
        ended = proc is not None and proc.poll() is not None
        for line in log.lines():
            if rx.search(line):
                return line
        if ended:
            return None
        time.sleep(0.1)
    return None

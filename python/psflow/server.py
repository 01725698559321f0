"""`python3 -m psflow.server --python MODULE[,MODULE...] <psflow server flags>`:
one ps or worker task served from this process, after importing MODULE, so
that the Python step functions it registers (@psflow.function) run on this
worker. `psflow server --python MODULE ...` execs this (see
docs/python.md); every other flag is `psflow server`'s.
"""

import importlib
import os
import signal
import sys


def _split(argv):
    modules, rest = [], []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--python":
            if i + 1 >= len(argv):
                raise SystemExit("psflow.server: --python needs a module name")
            modules.extend(m for m in argv[i + 1].split(",") if m)
            i += 2
            continue
        if arg.startswith("--python="):
            modules.extend(m for m in arg[len("--python="):].split(",") if m)
        else:
            rest.append(arg)
        i += 1
    return modules, rest


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    modules, rest = _split(argv)
    # The task waits for these signals on a thread of its own; threads the
    # user's modules start (torch's, numpy's) must not receive them first.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    if "" not in sys.path:
        sys.path.insert(0, "")
    from psflow import _psflow
    for module in modules:
        importlib.import_module(module)
    return _psflow._run_task(["psflow", "server"] + rest)


if __name__ == "__main__":
    code = main()
    # No interpreter shutdown: runtime threads that outlive the task (gRPC's)
    # must not meet a finalizing interpreter.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)

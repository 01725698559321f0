"""What the torch.distributed.rpc baselines and the benchmarks running them share.

Two halves, both free of a torch import at module level (the driver scripts
run under any python3):

  * The baseline processes (bench/torch_rpc_ps.py, bench/torch_rpc_dlrm.py):
    rerunning the script under an interpreter with Debian's torch and with
    OpenBLAS and one thread in the environment, spawning rank 0 ("ps") and
    ranks 1..W ("worker<i>") and their RPC rendezvous on loopback, handing
    one epoch's step quota to the workers, collecting rank 0's result with a
    deadline, and printing / writing it as `RESULT <json>`.
  * The benchmarks comparing runs (bench/train_vs_torch.py,
    bench/dlrm_vs_torch.py, bench/wire_dtype.py, bench/tcp_experiments.py):
    running `psflow train` or a baseline script once and reading its
    summary, the steady-state rate and the time to a target, the CPU the
    run's processes used.
"""

import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
OPENBLAS_DIR = "/usr/lib/x86_64-linux-gnu/openblas-pthread"
SYSTEM_PYTHON = "/usr/bin/python3"
REEXEC_MARK = "PSFLOW_TORCH_BASELINE_ENV"

# ---- the run's figures ----------------------------------------------------


def steady_rate(history, examples_of=None):
    """Examples per training second over epochs 2.. (every epoch when there
    is only one). examples_of(h) counts an epoch's examples (default:
    h["examples"])."""
    examples_of = examples_of or (lambda h: h["examples"])
    epochs = history[1:] if len(history) >= 2 else history
    seconds = sum(h["seconds"] for h in epochs)
    return sum(examples_of(h) for h in epochs) / seconds if seconds > 0 else 0.0


def seconds_to(history, target, accuracy_of):
    """Training seconds up to the end of the first epoch whose accuracy
    reaches target; None if none does."""
    elapsed = 0.0
    for h in history:
        elapsed += h["seconds"]
        if accuracy_of(h) >= target:
            return elapsed
    return None


def children_cpu_seconds():
    """User + system CPU of this process's waited-for children so far."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


# ---- running a benchmark's sides ------------------------------------------


def run_psflow_train(psflow, argv, run_dir, timeout, env=None):
    """Runs `psflow <argv> --run-dir <run_dir> --startup-timeout 120` and
    returns (summary.json's object, CPU seconds of the run's processes); the
    run directory is removed. Raises RuntimeError naming the command and the
    end of its stderr when it fails."""
    command = [psflow, *argv, "--run-dir", run_dir, "--startup-timeout", "120"]
    cpu = children_cpu_seconds()
    r = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env,
                       check=False)
    cpu = children_cpu_seconds() - cpu
    if r.returncode != 0:
        raise RuntimeError(f"psflow train failed ({r.returncode}): {' '.join(command)}\n"
                           f"{r.stderr[-3000:]}")
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    shutil.rmtree(run_dir, ignore_errors=True)
    return summary, cpu


def run_baseline(script, argv, out, timeout):
    """Runs bench/<script> <argv> --timeout <timeout> --json <out> with this
    interpreter (the script finds torch itself) and returns (its result
    object, CPU seconds of its processes). Raises RuntimeError when it
    fails."""
    command = [sys.executable, os.path.join(HERE, script), *argv, "--timeout", str(timeout),
               "--json", out]
    cpu = children_cpu_seconds()
    r = subprocess.run(command, capture_output=True, text=True, timeout=timeout + 60,
                       check=False)
    cpu = children_cpu_seconds() - cpu
    if r.returncode != 0:
        raise RuntimeError(f"torch baseline failed ({r.returncode}): {' '.join(command)}\n"
                           f"{r.stderr[-3000:]}")
    with open(out) as f:
        return json.load(f), cpu


# ---- a baseline's processes -----------------------------------------------


def reexec_if_needed(script):
    """Runs script again under an interpreter with torch and with the BLAS
    and thread settings in the environment (the loader reads them at start,
    so they cannot be set from inside); returns in the rerun."""
    if os.environ.get(REEXEC_MARK) == "1":
        return
    env = dict(os.environ)
    env[REEXEC_MARK] = "1"
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    if os.path.isdir(OPENBLAS_DIR):
        env["LD_LIBRARY_PATH"] = OPENBLAS_DIR + (
            ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    python = sys.executable
    try:
        import torch  # noqa: F401
    except ImportError:
        if os.path.exists(SYSTEM_PYTHON):
            python = SYSTEM_PYTHON
    os.execve(python, [python, os.path.abspath(script), *sys.argv[1:]], env)


def loaded_blas():
    """The BLAS library files this process mapped."""
    found = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "blas" in os.path.basename(path):
                found.add(path)
    return sorted(found)


def init_threads():
    import torch
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass  # already set in this process


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_epoch(ps, worker_run_epoch, num_workers, steps, deadline, epoch):
    """Hands ps (its set_quota) an epoch of steps, runs worker_run_epoch on
    every worker until they are used up, and returns (the workers' results,
    seconds). Each result's first element is the steps that worker ran;
    raises RuntimeError when they do not add up to steps."""
    import torch.distributed.rpc as rpc
    ps.set_quota(steps)
    start = time.perf_counter()
    futures = [rpc.rpc_async(f"worker{i}", worker_run_epoch,
                             timeout=max(1.0, deadline - time.monotonic()))
               for i in range(num_workers)]
    results = [f.wait() for f in futures]
    seconds = time.perf_counter() - start
    done = sum(r[0] for r in results)
    if done != steps:
        raise RuntimeError(f"epoch {epoch}: {done} steps ran, {steps} were handed out")
    return results, seconds


def run_rank(rank, args, port, deadline, queue, setup, drive, transports):
    """One process of the baseline (the target of a spawned process):
    setup(rank, args) builds the rank's state (rank 0: the ps; others: a
    worker) and returns a context, the RPC agent joins the rendezvous on
    loopback port, and rank 0 runs drive(args, context, deadline) and puts
    (result with "blas" added, error) on queue after the agent shut down.
    transports: TensorPipe's transports, None for its default."""
    import torch.distributed.rpc as rpc
    init_threads()
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    extra = {"_transports": transports} if transports is not None else {}
    options = rpc.TensorPipeRpcBackendOptions(
        num_worker_threads=args.rpc_threads,
        rpc_timeout=max(1.0, deadline - time.monotonic()), **extra)
    context = setup(rank, args)
    name = "ps" if rank == 0 else f"worker{rank - 1}"
    rpc.init_rpc(name, rank=rank, world_size=args.num_workers + 1,
                 rpc_backend_options=options)
    result = error = None
    if rank == 0:
        try:
            result = drive(args, context, deadline)
            result["blas"] = loaded_blas()
        except Exception as e:  # reported by the parent, after shutdown
            error = f"{type(e).__name__}: {e}"
    rpc.shutdown()
    if rank == 0:
        queue.put((result, error))


def launch(args, setup, drive, transports, name):
    """Spawns the W + 1 processes of run_rank, waits for rank 0's result
    until args.timeout, and returns it with "wall_seconds" added; None after
    printing `<name>: failed: ...` to stderr. setup and drive must be
    module-level functions (they are pickled by name)."""
    import torch.multiprocessing as mp
    init_threads()
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    deadline = time.monotonic() + args.timeout
    port = free_port()
    procs = [ctx.Process(target=run_rank,
                         args=(rank, args, port, deadline, queue, setup, drive, transports))
             for rank in range(args.num_workers + 1)]
    launched = time.perf_counter()
    for p in procs:
        p.start()
    result = error = None
    try:
        result, error = queue.get(timeout=max(1.0, deadline - time.monotonic()))
    except Exception as e:  # queue.Empty on timeout
        error = f"no result within --timeout {args.timeout} s ({type(e).__name__})"
    for p in procs:
        p.join(timeout=max(1.0, min(30.0, deadline - time.monotonic())))
        if p.is_alive():
            p.kill()
            p.join(timeout=10)
    if error or result is None:
        print(f"{name}: failed: {error}", file=sys.stderr)
        return None
    result["wall_seconds"] = time.perf_counter() - launched
    return result


def report(result, summary, json_path):
    """Prints summary, then `RESULT <json>`, and writes result to json_path
    when one is given."""
    print(summary)
    print("RESULT " + json.dumps(result), flush=True)
    if json_path:
        with open(json_path, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")

#!/usr/bin/env python3
"""Where a training step's CPU goes: `psflow train` under `perf record`.

Runs `psflow train --model mlp --batch-size 64 --num-workers 2 --num-ps 1
--epochs 2` (the release build) under `perf record --call-graph dwarf`
(software event cpu-clock: this machine's perf has no hardware counters),
which follows the chief into the ps and worker processes it starts. Only the
steady state counts: the samples between the first and the last progress
line of epoch 2 (startup, epoch 1, evaluation and checkpoints excluded); the
steps in that window come from the same progress lines. Each sample is
charged to a category by its call chain (the rules below, first match wins;
a chain the unwinder could not follow past its leaf is charged by the leaf),
per process role (chief, ps, worker), and reported as CPU-seconds per 1000
steps and as a percent of the step's CPU across all processes.

Prints the tables as Markdown (the "Step profile" section of
docs/benchmarks.md is this output) and, with --json, writes them as an
object. --keep leaves perf.data and the perf script text in --work-dir.

Usage: step_profile.py --build-dir build [--batch-size 64] [--workers 2]
       [--frequency 499] [--insecure] [--json out.json] [--work-dir DIR --keep]
Needs: perf (Debian linux-perf); run as root or with
kernel.perf_event_paranoid <= 1 to see the kernel's share.
"""

import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

# (category, roles or None for every role, regex on the call chain's symbols
# joined leaf first by " < "). First match wins; order from the most to the
# least specific. "pull" is the worker reading the parameters from the ps,
# "push" the gradients going to the ps and applied there.
RULES = [
    ("compute (forward/backward)", {"worker"},
     r"mlp_forward_backward|dense_forward|dense_backward|relu_backward|nn::relu@|"
     r"sparse_softmax_cross_entropy|^Eigen::internal::(gebp|gemm|general_matrix)|"
     r"^[^<]*@libopenblas"),
    ("data pipeline", {"worker"},
     r"flatten_images|fill_buffer|ShuffleIterator|BatchIterator|PrefetchIterator|"
     r"stack_elements|Dataset|dataset_|IteratorGetNext|get_next_batch|Tensor::slice|"
     r"read_idx|load_fashion_mnist"),
    ("metrics", None,
     r"correct_predictions|SparseCategoricalAccuracy|StepSums|StepResult|ClassifierStepMetrics|"
     r"Progress|EventWriter|StepScalars|step_scalars|StepObserver|RunReporter|write_record"),
    ("push: optimizer apply (ps)", {"ps"},
     r"update_dense|apply_dense_gradient|apply_sparse|first_non_finite|VariableShard::apply|"
     r"OptimizerKernel|optimizer_kernels"),
    # The ps's requests carry the gradients (reads are a few bytes), its
    # responses the parameters (update responses are a few bytes).
    ("push: decode (ps)", {"ps"},
     r"decode_execute_request|read_op|read_optimizer|TensorProtoReader|WireStream|"
     r"decode_tensor|codec_decode|optimizer_from_proto"),
    ("pull: encode (ps)", {"ps"},
     r"encode_execute_response|write_tensor_proto|write_op|put_varint|ByteBufferWriter|"
     r"byte_buffer_writer|codec_encode|SnapshotResults|snapshot_results"),
    ("pull: ps read", {"ps"},
     r"read_value|ReadValue|VariableStore::find|VariableShard::read|snapshot|execute_variable_ops"),
    ("push: encode (worker)", {"worker"},
     r"encode_execute_request|write_tensor_proto|write_op|put_varint|ByteBufferWriter|"
     r"byte_buffer_writer|codec_encode"),
    ("pull: decode (worker)", {"worker"},
     r"decode_execute_response|TensorProtoReader|WireStream|read_message|Tensor::from_buffer|"
     r"codec_decode|ReadCache|read_cache"),
    ("push: request (worker)", {"worker"},
     r"apply_gradients|RequestBatch|GradientAndVariable|assign_add|update_binding"),
    ("pull: request (worker)", {"worker"},
     r"read_values|read_value|ReadValue|VariableHandle|ShardedVariable::read"),
    ("dispatch (chief)", {"chief"},
     r"WorkerDispatcher|ClosureQueue|RemoteValue|Cluster::schedule|ClusterCoordinator|"
     r"run_function|RunFunction|structure_to_proto|structure_from_proto|Structure|"
     r"run_epoch_closures|closure"),
    ("dispatch (worker executor)", {"worker"},
     r"ExecutorServiceImpl|structure_from_proto|structure_to_proto|RunFunction|"
     r"run_training_steps|StepConfig|ParsedCall|DisposePerWorker|per_worker|FunctionRunner|"
     r"ResultCache|WorkerContext|resolve_step_state|StepState"),
    ("health checks", None,
     r"TaskHeartbeats|get_status|GetStatus|HealthCheck|Watchdog|ps_monitor|PsMonitor"),
    # Below: chains that did not unwind into psflow's code (gRPC's threads,
    # or an unwinder stopped by a library without symbols), by library.
    ("transport: kernel TCP", None,
     r"^(tcp_|__tcp|sock_|inet_|skb_|__skb|_copy_to_iter|_copy_from_iter|copy_user|"
     r"loopback_xmit|__netif|net_rx|ip_|__ip|__dev_queue|__sys_sendmsg|__sys_recvmsg)|"
     r"< (tcp_sendmsg|tcp_recvmsg|sock_sendmsg|sock_recvmsg|__sys_sendmsg|__sys_recvmsg)@"),
    ("threads: wake-ups, switches, polling", None,
     r"finish_task_switch|__schedule@|futex|schedule_hrtimeout|ep_poll|do_epoll|"
     r"try_to_wake_up|_raw_spin_unlock_irqrestore|^pthread_cond|^__lll_lock|syscall_exit|"
     r"^epoll_wait|^syscall@"),
    ("memory: malloc/free, page faults", None,
     r"^(_int_malloc|_int_free|malloc|free|cfree|unlink_chunk|malloc_consolidate|sysmalloc|"
     r"__libc_malloc|__libc_free|_int_memalign|clear_page|__memset|tcache|operator new|"
     r"operator delete)|page_fault|clear_page_erms|do_anonymous_page|folio|__munmap|"
     r"allocate_buffer|TensorBuffer::allocate"),
    ("transport: TLS (OpenSSL)", None, r"^[^<]*@(libssl|libcrypto)"),
    ("transport: gRPC", None,
     r"^[^<]*@(libgrpc|libgpr|libprotobuf|libaddress_sorting|libupb|libabsl)|"
     r"@(libgrpc|libgpr)|grpc::|peer_identity|identity_from_common_name|TaskStatus"),
    ("copies (memcpy, caller not unwound)", None, r"^__mem(cpy|move)"),
    ("kernel other", None, r"^[^<]*@\[kernel"),
]
ROLES = ("chief", "ps", "worker")
PROGRESS = re.compile(r"^epoch (\d+)/(\d+) \[.*\] (\d+)/(\d+) steps")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build-dir", default="build")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--frequency", type=int, default=499, help="samples per second per CPU")
    p.add_argument("--stack-bytes", type=int, default=16384,
                   help="user stack copied per sample for the DWARF unwinder")
    p.add_argument("--json", default=None)
    p.add_argument("--work-dir", default=None)
    p.add_argument("--keep", action="store_true")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--insecure", action="store_true",
                   help="psflow train --insecure: mTLS off (default: on, as psflow train)")
    p.add_argument("--reanalyze", default=None, metavar="DIR",
                   help="classify the recording a --keep run left in DIR again")
    return p.parse_args(argv)


def record(args, work):
    """Runs psflow train under perf; returns (task pids by role, window
    (start, end) in CLOCK_MONOTONIC seconds, steps in the window)."""
    run_dir = os.path.join(work, "run")
    command = ["perf", "record", "-F", str(args.frequency), "-k", "CLOCK_MONOTONIC",
               "--call-graph", f"dwarf,{args.stack_bytes}", "-o",
               os.path.join(work, "perf.data"), "--",
               os.path.join(args.build_dir, "psflow"), "train", "--model", "mlp",
               "--batch-size", str(args.batch_size), "--num-workers", str(args.workers),
               "--num-ps", "1", "--epochs", "2", "--run-dir", run_dir,
               "--startup-timeout", "120"] + (["--insecure"] if args.insecure else [])
    pids = {}
    window = []  # (monotonic time, steps done) of each progress line of epoch 2
    lines = []
    deadline = time.monotonic() + args.timeout
    with open(os.path.join(work, "perf-record.log"), "w") as log:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True)
        # Bounds the loop below in time: a run past --timeout is killed,
        # which ends its output.
        killer = threading.Timer(args.timeout, proc.kill)
        killer.start()
        for line in proc.stdout:
            now = time.monotonic()
            lines.append(line)
            m = re.match(r"^(ps|worker) (\d+) \S+ pid=(\d+)", line)
            if m:
                pids[int(m.group(3))] = m.group(1)
            m = PROGRESS.match(line)
            if m and m.group(1) == "2":
                window.append((now, int(m.group(3))))
        rc = proc.wait(timeout=max(1.0, deadline - time.monotonic()) + 10)
        killer.cancel()
    if rc != 0:
        sys.exit(f"step_profile: perf record / psflow train exited with {rc}:\n"
                 + "".join(lines[-20:]))
    if len(window) < 2 or window[-1][1] <= window[0][1]:
        sys.exit("step_profile: too few progress lines in epoch 2 to time a window:\n"
                 + "".join(lines[-20:]))
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    rate = summary["history"][-1]["examples"] / summary["history"][-1]["seconds"]
    meta = {"pids": {str(k): v for k, v in pids.items()},
            "window": [window[0][0], window[-1][0]],
            "steps": window[-1][1] - window[0][1], "rate": rate,
            "batch_size": args.batch_size, "workers": args.workers}
    with open(os.path.join(work, "meta.json"), "w") as f:
        json.dump(meta, f)
    return pids, (window[0][0], window[-1][0]), window[-1][1] - window[0][1], rate


def samples(work):
    """Yields (pid, time, period ns, [(symbol, dso)] leaf first)."""
    env = dict(os.environ, DEBUGINFOD_URLS="")
    out = subprocess.run(
        ["perf", "script", "--no-inline", "-i", os.path.join(work, "perf.data"),
         "-F", "pid,tid,comm,time,period,ip,sym,dso"],
        capture_output=True, text=True, env=env, check=True).stdout
    head = re.compile(r"^.*?\s(\d+)/\d+\s+([\d.]+):\s+(\d+)\s*$")
    frame = re.compile(r"^\s*[0-9a-f]+\s+(.*) \((.*)\)\s*$")
    cur = None
    for line in out.splitlines():
        if not line.strip():
            if cur:
                yield cur
            cur = None
            continue
        if not line[0].isspace():
            m = head.match(line)
            cur = (int(m.group(1)), float(m.group(2)), int(m.group(3)), []) if m else None
        elif cur is not None:
            m = frame.match(line)
            if m:
                cur[3].append((m.group(1), os.path.basename(m.group(2))))
    if cur:
        yield cur


TEMPLATE_ARGS = re.compile(r"<[^<>]*>")


def bare(symbol):
    """The symbol without template arguments (run_training_steps<MlpSpec,
    ClassifierStepMetrics> is not metrics) and without parameters."""
    symbol = symbol.split("(", 1)[0]
    for _ in range(16):  # nesting depth
        stripped = TEMPLATE_ARGS.sub("", symbol)
        if stripped == symbol:
            break
        symbol = stripped
    return symbol


def chain_text(frames):
    """"symbol@library" leaf first, joined by " < "."""
    return " < ".join(f"{bare(sym)}@{dso.split('.so')[0]}" for sym, dso in frames)


def classify(role, frames, compiled):
    text = chain_text(frames)
    for name, roles, rx in compiled:
        if roles is not None and role not in roles:
            continue
        if rx.search(text):
            return name
    return "other"


def main(argv):
    args = parse_args(argv)
    if shutil.which("perf") is None:
        sys.exit("step_profile: no perf (Debian linux-perf)")
    work = args.reanalyze or args.work_dir or tempfile.mkdtemp(prefix="psflow-step-profile-")
    os.makedirs(work, exist_ok=True)
    try:
        if args.reanalyze:
            with open(os.path.join(work, "meta.json")) as f:
                meta = json.load(f)
            pids = {int(k): v for k, v in meta["pids"].items()}
            (start, end), steps, rate = meta["window"], meta["steps"], meta["rate"]
            args.batch_size, args.workers = meta["batch_size"], meta["workers"]
        else:
            pids, (start, end), steps, rate = record(args, work)
        compiled = [(n, r, re.compile(rx)) for n, r, rx in RULES]
        cpu = collections.defaultdict(float)  # (role, category) -> ns
        other_leaves = collections.Counter()
        total_samples = 0
        for pid, t, period, frames in samples(work):
            if not start <= t <= end:
                continue
            role = pids.get(pid, "chief")
            category = classify(role, frames, compiled)
            cpu[(role, category)] += period
            total_samples += 1
            if category == "other" and frames:
                other_leaves[f"{role}: {chain_text(frames[:2])[:100]}"] += period
    finally:
        if not args.keep and not args.work_dir and not args.reanalyze:
            shutil.rmtree(work, ignore_errors=True)
    seconds = end - start
    per_k = 1000.0 / steps
    total = sum(cpu.values())
    categories = [r[0] for r in RULES] + ["other"]
    by_role = {r: sum(v for (ro, _), v in cpu.items() if ro == r) for r in ROLES}

    print(f"window: {steps} steps of epoch 2 in {seconds:.2f} s "
          f"({steps * args.batch_size / seconds:.0f} examples/s under perf; the whole epoch "
          f"{rate:.0f}); {total_samples} samples at {args.frequency} Hz; "
          f"{total / 1e9 / seconds:.2f} CPUs busy on average\n")
    header = "| category | " + " | ".join(f"{r} CPU-s/1k steps" for r in ROLES) + \
        " | all CPU-s/1k steps | % |"
    print(header)
    print("|" + "---|" * (len(ROLES) + 3))
    rows = []
    for c in categories:
        values = [cpu.get((r, c), 0.0) / 1e9 * per_k for r in ROLES]
        all_ = sum(values)
        if all_ == 0:
            continue
        rows.append({"category": c, **{r: v for r, v in zip(ROLES, values)}, "all": all_,
                     "percent": 100.0 * all_ * 1e9 / per_k / total})
        print(f"| {c} | " + " | ".join(f"{v:.3f}" for v in values)
              + f" | {all_:.3f} | {rows[-1]['percent']:.1f} |")
    role_totals = [by_role[r] / 1e9 * per_k for r in ROLES]
    print("| **total** | " + " | ".join(f"**{v:.3f}**" for v in role_totals)
          + f" | **{sum(role_totals):.3f}** | 100 |")
    print("\nlargest 'other' call chains (leaf < caller):")
    for k, v in other_leaves.most_common(12):
        print(f"  {v / 1e9 * per_k:.3f} CPU-s/1k steps  {k}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"steps": steps, "window_seconds": seconds, "samples": total_samples,
                       "frequency_hz": args.frequency, "batch_size": args.batch_size,
                       "workers": args.workers, "examples_per_sec_epoch": rate,
                       "rows": rows,
                       "role_totals": dict(zip(ROLES, role_totals))}, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

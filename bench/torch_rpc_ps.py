#!/usr/bin/env python3
"""A plain torch.distributed.rpc parameter server training psflow's mlp.

The baseline `psflow train` is compared with (bench/train_vs_torch.py): the
same model (784-256-10, ReLU, softmax cross-entropy; kernels Glorot-uniform,
biases zero), the same optimizer as psflow train's default (Adam, learning
rate 1e-3, epsilon 1e-7 as Keras, cosine decay to 10% over the run, applied
on the ps), the same data (Fashion-MNIST from Debian's dataset-fashion-mnist)
and the same epoch structure:

  * rank 0 ("ps") holds the parameters and the optimizer and drives the run;
    ranks 1..W ("worker<i>") each hold the training set, shuffled with the
    worker's own seed, reshuffled at every pass, batched (remainder dropped).
  * An epoch is 60000 // batch steps over all workers, handed out one at a
    time: a worker pulls the parameters (the pull takes a step of the
    epoch's quota and returns None when it is used up), computes the
    gradients with autograd, and pushes them; the ps applies them with its
    optimizer under a lock (asynchronous training, as psflow's ps).
  * After each epoch rank 0 evaluates the test set (not timed).

Threads: every process runs torch with 1 intra-op and 1 inter-op thread and
OpenBLAS with 1 thread, so the W + 1 processes share the cores as psflow's
tasks do (psflow computes with one thread per worker). The RPC agent's
threads are TensorPipe's own (they wait on I/O). Transport: TCP on
loopback (TensorPipe's "uv"), as psflow's gRPC; TensorPipe's default picks
its shared-memory transport between local processes, which measured about
10x slower per round trip on this 2-core machine (--transport default).

BLAS: Debian's torch calls the libblas.so.3 alternative for its GEMM; the
reference BLAS there is some 30x slower than OpenBLAS. When Debian's
OpenBLAS (libopenblas0-pthread) is installed, this script runs itself with
LD_LIBRARY_PATH pointing at it whatever the alternative says, and prints
the BLAS it loaded. Debian's torch is found at /usr/bin/python3 when the
python3 on PATH lacks it (the script runs itself there).

Prints one line per epoch and, last, `RESULT <json>` with examples_per_sec
(steady state: epochs 2.. when there are at least 2, training time only,
startup and evaluation excluded), examples_per_sec_all_epochs,
test_accuracy, seconds_to_target (training seconds up to the end of the
first epoch whose test accuracy reaches --target-accuracy; null if none
does) and the history. --json writes the same object to a file.
"""

import argparse
import math
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
from torch_rpc_harness import (launch, reexec_if_needed, report, run_epoch,  # noqa: E402
                               steady_rate)


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--max-steps", type=int, default=0,
                   help="stop after this many steps in all (0: every epoch's steps)")
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--lr-schedule", choices=("cosine", "constant"), default="cosine")
    p.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--target-accuracy", type=float, default=0.87)
    p.add_argument("--transport", choices=("uv", "default"), default="uv",
                   help="TensorPipe transport: uv (TCP on loopback) or TensorPipe's "
                        "default (shared memory between local processes)")
    p.add_argument("--rpc-threads", type=int, default=8,
                   help="TensorPipe RPC worker threads per process")
    p.add_argument("--timeout", type=float, default=900,
                   help="seconds the whole run may take")
    p.add_argument("--json", default=None, help="also write the result object here")
    args = p.parse_args(argv)
    if not 1 <= args.num_workers <= 64:
        p.error(f"--num-workers {args.num_workers} is outside [1, 64]")
    if not 1 <= args.batch_size <= 60000:
        p.error(f"--batch-size {args.batch_size} is outside [1, 60000]")
    if not 1 <= args.epochs <= 1000:
        p.error(f"--epochs {args.epochs} is outside [1, 1000]")
    if args.max_steps < 0:
        p.error(f"--max-steps {args.max_steps} must be >= 0")
    return args


def read_idx(path):
    """An IDX file (gzip or plain) as a torch uint8 tensor of its shape."""
    import gzip
    import numpy as np
    import torch
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise ValueError(f"{path}: not an IDX file of unsigned bytes")
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    offset = 4 + 4 * rank
    count = math.prod(dims)
    if len(data) - offset != count:
        raise ValueError(f"{path}: {len(data) - offset} bytes of data for shape {dims}")
    array = np.frombuffer(data, dtype=np.uint8, offset=offset).reshape(dims)
    return torch.from_numpy(array.copy())


def find_file(data_dir, stem):
    for name in (stem, stem + ".gz"):
        path = os.path.join(data_dir, name)
        if os.path.exists(path):
            return path
    raise FileNotFoundError(f"no {stem}[.gz] in {data_dir} (Debian: dataset-fashion-mnist)")


def load_split(data_dir, prefix):
    images = read_idx(find_file(data_dir, f"{prefix}-images-idx3-ubyte"))
    labels = read_idx(find_file(data_dir, f"{prefix}-labels-idx1-ubyte"))
    return images.reshape(images.shape[0], -1), labels.long()


def cosine_lr(base, decay_steps, step, alpha=0.1):
    if decay_steps <= 0:
        return base
    t = min(max(step, 0), decay_steps) / decay_steps
    return base * ((1 - alpha) * 0.5 * (1 + math.cos(math.pi * t)) + alpha)


# ---- the parameter server (rank 0) ----------------------------------------

_PS = None


class ParameterServer:
    """The parameters, their optimizer and the epoch's step quota.
    Thread-safety: every method takes self.lock (RPC threads call them)."""

    def __init__(self, args, decay_steps):
        import threading
        import torch
        torch.manual_seed(args.seed)
        w1 = torch.empty(256, 784)
        w2 = torch.empty(10, 256)
        torch.nn.init.xavier_uniform_(w1)  # Glorot-uniform, as psflow's kernels
        torch.nn.init.xavier_uniform_(w2)
        self.params = [w1, torch.zeros(256), w2, torch.zeros(10)]
        for p in self.params:
            p.requires_grad_(True)
        self.optimizer = torch.optim.Adam(self.params, lr=args.learning_rate, eps=1e-7)
        self.base_lr = args.learning_rate
        self.decay_steps = decay_steps if args.lr_schedule == "cosine" else 0
        self.lock = threading.Lock()
        self.applied = 0
        self.quota = 0

    def set_quota(self, steps):
        with self.lock:
            self.quota = steps

    def pull(self):
        import torch
        with self.lock:
            if self.quota <= 0:
                return None
            self.quota -= 1
            with torch.no_grad():
                return [p.detach().clone() for p in self.params]

    def push(self, grads):
        with self.lock:
            for p, g in zip(self.params, grads):
                p.grad = g
            lr = cosine_lr(self.base_lr, self.decay_steps, self.applied)
            for group in self.optimizer.param_groups:
                group["lr"] = lr
            self.optimizer.step()
            self.applied += 1

    def snapshot(self):
        with self.lock:
            return [p.detach().clone() for p in self.params]


def ps_pull():
    return _PS.pull()


def ps_push(grads):
    _PS.push(grads)


# ---- a worker (ranks 1..W) ------------------------------------------------

_WORKER = None


class Worker:
    """A worker's training data and its shuffled batch order.
    Thread-safety: run_epoch is called by one RPC at a time (rank 0 waits
    for each epoch before the next)."""

    def __init__(self, args, index):
        import torch
        self.images, self.labels = load_split(args.data_dir, "train")
        self.batch = args.batch_size
        self.generator = torch.Generator().manual_seed(args.seed * 1000003 + index)
        self.order = torch.randperm(self.labels.shape[0], generator=self.generator)
        self.next = 0

    def next_batch(self):
        import torch
        n = self.labels.shape[0]
        if self.next + self.batch > n:
            # repeat, then batch: a batch may span two passes, as psflow's
            # shuffle().repeat().batch()
            rest = self.order[self.next:]
            self.order = torch.randperm(n, generator=self.generator)
            self.next = self.batch - rest.shape[0]
            index = torch.cat([rest, self.order[:self.next]])
        else:
            index = self.order[self.next:self.next + self.batch]
            self.next += self.batch
        x = self.images[index].float().mul_(1.0 / 255.0)
        return x, self.labels[index]

    def run_epoch(self):
        import torch
        import torch.distributed.rpc as rpc
        import torch.nn.functional as F
        steps = 0
        loss_sum = 0.0
        correct = 0
        while steps < 10_000_000:
            params = rpc.rpc_sync("ps", ps_pull)
            if params is None:
                break
            for p in params:
                p.requires_grad_(True)
            w1, b1, w2, b2 = params
            x, y = self.next_batch()
            logits = F.linear(F.relu(F.linear(x, w1, b1)), w2, b2)
            loss = F.cross_entropy(logits, y)
            grads = torch.autograd.grad(loss, params)
            rpc.rpc_sync("ps", ps_push, args=(list(grads),))
            steps += 1
            loss_sum += loss.item() * y.shape[0]
            correct += int((logits.argmax(1) == y).sum())
        return steps, loss_sum, correct


def worker_run_epoch():
    return _WORKER.run_epoch()


# ---- the processes --------------------------------------------------------

def evaluate(params, images, labels):
    import torch
    import torch.nn.functional as F
    w1, b1, w2, b2 = params
    loss_sum = 0.0
    correct = 0
    with torch.no_grad():
        for begin in range(0, labels.shape[0], 2000):
            x = images[begin:begin + 2000].float().mul_(1.0 / 255.0)
            y = labels[begin:begin + 2000]
            logits = F.linear(F.relu(F.linear(x, w1, b1)), w2, b2)
            loss_sum += F.cross_entropy(logits, y, reduction="sum").item()
            correct += int((logits.argmax(1) == y).sum())
    return loss_sum / labels.shape[0], correct / labels.shape[0]


def drive(args, _context, deadline):
    """Rank 0's run: the epochs, their timing and evaluation."""
    test_images, test_labels = load_split(args.data_dir, "t10k")
    steps_per_epoch = 60000 // args.batch_size
    history = []
    total_steps = 0
    trained_seconds = 0.0
    seconds_to_target = None
    for epoch in range(1, args.epochs + 1):
        steps = steps_per_epoch
        if args.max_steps:
            steps = min(steps, args.max_steps - total_steps)
        if steps <= 0:
            break
        results, seconds = run_epoch(_PS, worker_run_epoch, args.num_workers, steps,
                                     deadline, epoch)
        done = steps
        total_steps += done
        trained_seconds += seconds
        examples = done * args.batch_size
        train_loss = sum(r[1] for r in results) / examples
        train_acc = sum(r[2] for r in results) / examples
        test_loss, test_acc = evaluate(_PS.snapshot(), test_images, test_labels)
        if seconds_to_target is None and test_acc >= args.target_accuracy:
            seconds_to_target = trained_seconds
        history.append({"epoch": epoch, "steps": done, "examples": examples,
                        "seconds": seconds, "train_loss": train_loss,
                        "train_accuracy": train_acc, "test_loss": test_loss,
                        "test_accuracy": test_acc})
        print(f"epoch {epoch}/{args.epochs}: train loss {train_loss:.4f} accuracy "
              f"{train_acc:.4f} | test loss {test_loss:.4f} accuracy {test_acc:.4f} | "
              f"{done} steps in {seconds:.2f} s ({examples / seconds:.0f} examples/s)",
              flush=True)
        if time.monotonic() > deadline:
            raise TimeoutError(f"the run took longer than --timeout {args.timeout} s")
    if _PS.applied != total_steps:
        raise RuntimeError(f"{_PS.applied} updates applied for {total_steps} steps")
    all_seconds = sum(h["seconds"] for h in history)
    return {
        "examples_per_sec": steady_rate(history),
        "examples_per_sec_all_epochs":
            sum(h["examples"] for h in history) / all_seconds if all_seconds > 0 else 0.0,
        "test_accuracy": history[-1]["test_accuracy"],
        "test_loss": history[-1]["test_loss"],
        "target_accuracy": args.target_accuracy,
        "seconds_to_target": seconds_to_target,
        "steps": total_steps,
        "epochs": len(history),
        "batch_size": args.batch_size,
        "num_workers": args.num_workers,
        "training_seconds": trained_seconds,
        "history": history,
    }


def setup(rank, args):
    """The rank's state: rank 0 the ps, the others a worker."""
    global _PS, _WORKER
    if rank == 0:
        steps_per_epoch = 60000 // args.batch_size
        decay = steps_per_epoch * args.epochs
        _PS = ParameterServer(args, decay)
    else:
        _WORKER = Worker(args, rank - 1)


def main(argv):
    reexec_if_needed(__file__)
    args = parse_args(argv)
    result = launch(args, setup, drive, ["uv"] if args.transport == "uv" else None,
                    "torch_rpc_ps")
    if result is None:
        return 1
    result["threads"] = {"torch_intra_op": 1, "torch_inter_op": 1,
                         "openblas": os.environ.get("OPENBLAS_NUM_THREADS"),
                         "rpc_worker_threads": args.rpc_threads}
    result["transport"] = args.transport
    report(result,
           f"done: test accuracy {result['test_accuracy']:.4f} after {result['epochs']} "
           f"epochs ({result['steps']} steps); {result['examples_per_sec']:.0f} examples/s "
           f"(steady state), {result['examples_per_sec_all_epochs']:.0f} over every epoch; "
           f"blas {', '.join(result['blas']) or 'none found'}", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

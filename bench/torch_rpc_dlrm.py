#!/usr/bin/env python3
"""A plain torch.distributed.rpc parameter server training psflow's dlrm.

The baseline `psflow train --model dlrm` is compared with
(bench/dlrm_vs_torch.py): the same model, optimizer, batch, data and split.

  * Model: bottom MLP 13-64-16 (ReLU after every layer) over log1p(max(x,
    0)) of the integer features; one torch.nn.EmbeddingBag (dim 16, sum of
    a bag of one) per categorical feature; the 351 pairwise dot products of
    the 27 vectors; top MLP 367-128-64-1 (ReLU, last linear); sigmoid +
    binary cross-entropy. Kernels Glorot-uniform, biases zero, embeddings
    uniform in [-0.2, 0.2] as psflow's dynamic table.
  * Optimizer: Adagrad (learning rate 0.1, initial accumulator 0.1 as
    Keras and psflow) on the ps, for the dense layers and, with sparse
    gradients, for the embedding tables.
  * Data: a Criteo TSV file (`psflow datagen criteo` writes one); the last
    10% of its rows are the test set, as psflow's dlrm. The tables have one
    row per distinct value of each column in the file (a static vocabulary:
    torch has no dynamic table), plus one for missing values.
  * rank 0 ("ps") holds the tables, the dense layers and the optimizer and
    drives the run; ranks 1..W ("worker<i>") each hold the training rows,
    shuffled with the worker's seed, batched. A step: the worker asks the
    ps for the rows of its batch's distinct ids per feature and the dense
    parameters (one RPC; the pull takes a step of the epoch's quota),
    computes the gradients with autograd, and pushes the dense gradients
    and the rows' gradients (sparse, per feature); the ps applies them
    under a lock (asynchronous training, as psflow's ps).

Threads, transport and BLAS as bench/torch_rpc_ps.py: 1 torch thread per
process, OpenBLAS with 1 thread when Debian's libopenblas0-pthread is
installed (the reference BLAS is some 30x slower), TensorPipe over TCP on
loopback.

Prints one line per epoch and `RESULT <json>` with examples_per_sec (steady
state: epochs 2.. when there are at least 2, training time only),
test_auc, test_loss and the history. --json writes the same object.
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
from torch_rpc_harness import (launch, reexec_if_needed, report, run_epoch,  # noqa: E402
                               steady_rate)

DENSE = 13
SPARSE = 26
DIM = 16
BOTTOM = [64, 16]
TOP = [128, 64]


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", required=True, help="a Criteo TSV file")
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--learning-rate", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rpc-threads", type=int, default=8)
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    if not 1 <= args.num_workers <= 64:
        p.error(f"--num-workers {args.num_workers} is outside [1, 64]")
    if not 1 <= args.batch_size <= 1 << 20:
        p.error(f"--batch-size {args.batch_size} is outside [1, 1048576]")
    if not 1 <= args.epochs <= 1000:
        p.error(f"--epochs {args.epochs} is outside [1, 1000]")
    return args


def load_data(path):
    """(dense float32 [N, 13], ids int64 [N, 26] per-column vocabulary
    indices, labels float32 [N], vocabulary sizes [26]). Every process reads
    the same file, so the vocabularies agree."""
    import numpy as np
    import torch
    labels, dense, cats = [], [], []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            if not line:
                continue
            fields = line.split("\t")
            if len(fields) == 41 and fields[-1] == "":
                fields.pop()
            if len(fields) != 40:
                raise ValueError(f"{path}:{number}: {len(fields)} fields, expected 40")
            labels.append(float(fields[0]))
            dense.append([max(int(x), 0) if x else 0 for x in fields[1:14]])
            cats.append(fields[14:])
    dense = np.log1p(np.asarray(dense, dtype=np.float64)).astype(np.float32)
    cats = np.asarray(cats)
    ids = np.empty(cats.shape, dtype=np.int64)
    sizes = []
    for c in range(SPARSE):
        values, inverse = np.unique(cats[:, c], return_inverse=True)
        ids[:, c] = inverse
        sizes.append(len(values))
    return (torch.from_numpy(dense), torch.from_numpy(ids),
            torch.tensor(labels, dtype=torch.float32), sizes)


def split(n):
    test = min(max(round(n * 0.1), 1), n - 1)
    return n - test


def dense_shapes():
    shapes = []
    width = DENSE
    for out in BOTTOM:
        shapes += [(out, width), (out,)]
        width = out
    width = DIM + (SPARSE + 1) * SPARSE // 2
    for out in TOP + [1]:
        shapes += [(out, width), (out,)]
        width = out
    return shapes


def forward(dense_params, x, embedded):
    """Logits [B] from dense features x [B, 13] and embeddings [B, 26, 16]."""
    import torch
    import torch.nn.functional as F
    h = x
    p = 0
    for _ in BOTTOM:
        h = F.relu(F.linear(h, dense_params[p], dense_params[p + 1]))
        p += 2
    vectors = torch.cat([h.unsqueeze(1), embedded], dim=1)  # [B, 27, 16]
    gram = torch.bmm(vectors, vectors.transpose(1, 2))
    li, lj = torch.tril_indices(SPARSE + 1, SPARSE + 1, -1)
    h = torch.cat([h, gram[:, li, lj]], dim=1)
    for i in range(len(TOP) + 1):
        h = F.linear(h, dense_params[p], dense_params[p + 1])
        if i < len(TOP):
            h = F.relu(h)
        p += 2
    return h.squeeze(1)


def auc(labels, scores):
    import torch
    order = torch.argsort(scores)
    ranks = torch.empty_like(scores, dtype=torch.float64)
    ranks[order] = torch.arange(1, len(scores) + 1, dtype=torch.float64)
    pos = labels > 0.5
    n_pos = float(pos.sum())
    n_neg = float(len(labels)) - n_pos
    if n_pos == 0 or n_neg == 0:
        return 0.5
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


# ---- the parameter server (rank 0) ----------------------------------------

_PS = None


class ParameterServer:
    """Tables, dense layers, optimizer and the epoch's step quota.
    Thread-safety: every method takes self.lock (RPC threads call them)."""

    def __init__(self, args, sizes):
        import threading
        import torch
        torch.manual_seed(args.seed)
        self.tables = [torch.nn.EmbeddingBag(n, DIM, mode="sum", sparse=True) for n in sizes]
        for t in self.tables:
            torch.nn.init.uniform_(t.weight, -0.2, 0.2)
        self.dense = []
        for shape in dense_shapes():
            if len(shape) == 2:
                w = torch.empty(*shape)
                torch.nn.init.xavier_uniform_(w)
            else:
                w = torch.zeros(*shape)
            self.dense.append(w.requires_grad_(True))
        params = self.dense + [t.weight for t in self.tables]
        self.optimizer = torch.optim.Adagrad(params, lr=args.learning_rate,
                                             initial_accumulator_value=0.1, eps=1e-7)
        self.lock = threading.Lock()
        self.applied = 0
        self.quota = 0

    def set_quota(self, steps):
        with self.lock:
            self.quota = steps

    def pull(self, ids):
        import torch
        with self.lock:
            if self.quota <= 0:
                return None
            self.quota -= 1
            with torch.no_grad():
                rows = [t.weight[i].clone() for t, i in zip(self.tables, ids)]
                return rows, [p.detach().clone() for p in self.dense]

    def push(self, ids, row_grads, dense_grads):
        import torch
        with self.lock:
            for p, g in zip(self.dense, dense_grads):
                p.grad = g
            for t, i, g in zip(self.tables, ids, row_grads):
                t.weight.grad = torch.sparse_coo_tensor(i.unsqueeze(0), g, t.weight.shape)
            self.optimizer.step()
            self.applied += 1

    def logits(self, x, ids):
        import torch
        with self.lock, torch.no_grad():
            embedded = torch.stack(
                [t(ids[:, c].unsqueeze(1)) for c, t in enumerate(self.tables)], dim=1)
            return forward([p.detach() for p in self.dense], x, embedded)


def ps_pull(ids):
    return _PS.pull(ids)


def ps_push(ids, row_grads, dense_grads):
    _PS.push(ids, row_grads, dense_grads)


# ---- a worker (ranks 1..W) ------------------------------------------------

_WORKER = None


class Worker:
    """A worker's training rows and its shuffled batch order.
    Thread-safety: run_epoch is called by one RPC at a time."""

    def __init__(self, args, index, data):
        import torch
        dense, ids, labels, _ = data
        n = split(labels.shape[0])
        self.dense, self.ids, self.labels = dense[:n], ids[:n], labels[:n]
        self.batch = args.batch_size
        self.generator = torch.Generator().manual_seed(args.seed * 1000003 + index)
        self.order = torch.randperm(n, generator=self.generator)
        self.next = 0

    def next_batch(self):
        import torch
        n = self.labels.shape[0]
        if self.next + self.batch > n:
            rest = self.order[self.next:]
            self.order = torch.randperm(n, generator=self.generator)
            self.next = self.batch - rest.shape[0]
            index = torch.cat([rest, self.order[:self.next]])
        else:
            index = self.order[self.next:self.next + self.batch]
            self.next += self.batch
        return self.dense[index], self.ids[index], self.labels[index]

    def run_epoch(self):
        import torch
        import torch.distributed.rpc as rpc
        import torch.nn.functional as F
        steps = 0
        loss_sum = 0.0
        while steps < 10_000_000:
            x, ids, y = self.next_batch()
            uniques, inverses = zip(*[torch.unique(ids[:, c], return_inverse=True)
                                      for c in range(SPARSE)])
            pulled = rpc.rpc_sync("ps", ps_pull, args=(list(uniques),))
            if pulled is None:
                break
            rows, dense_params = pulled
            for t in rows + dense_params:
                t.requires_grad_(True)
            # The bag of one id per example and feature, over the pulled rows.
            embedded = torch.stack(
                [F.embedding_bag(inverses[c].unsqueeze(1), rows[c], mode="sum")
                 for c in range(SPARSE)], dim=1)
            loss = F.binary_cross_entropy_with_logits(forward(dense_params, x, embedded), y)
            grads = torch.autograd.grad(loss, rows + dense_params)
            rpc.rpc_sync("ps", ps_push,
                         args=(list(uniques), list(grads[:SPARSE]), list(grads[SPARSE:])))
            steps += 1
            loss_sum += loss.item() * y.shape[0]
        return steps, loss_sum


def worker_run_epoch():
    return _WORKER.run_epoch()


# ---- the processes --------------------------------------------------------

def evaluate(data):
    import torch
    import torch.nn.functional as F
    dense, ids, labels, _ = data
    n = split(labels.shape[0])
    logits = torch.cat([_PS.logits(dense[b:b + 4096], ids[b:b + 4096])
                        for b in range(n, labels.shape[0], 4096)])
    y = labels[n:]
    loss = float(F.binary_cross_entropy_with_logits(logits, y))
    return loss, auc(y, logits)


def drive(args, data, deadline):
    n = split(data[2].shape[0])
    steps_per_epoch = n // args.batch_size
    history = []
    total = 0
    for epoch in range(1, args.epochs + 1):
        results, seconds = run_epoch(_PS, worker_run_epoch, args.num_workers, steps_per_epoch,
                                     deadline, epoch)
        done = steps_per_epoch
        total += done
        examples = done * args.batch_size
        train_loss = sum(r[1] for r in results) / examples
        test_loss, test_auc = evaluate(data)
        history.append({"epoch": epoch, "steps": done, "examples": examples, "seconds": seconds,
                        "train_loss": train_loss, "test_loss": test_loss, "test_auc": test_auc})
        print(f"epoch {epoch}/{args.epochs}: train loss {train_loss:.4f} | test loss "
              f"{test_loss:.4f} auc {test_auc:.4f} | {done} steps in {seconds:.2f} s "
              f"({examples / seconds:.0f} examples/s)", flush=True)
        if time.monotonic() > deadline:
            raise TimeoutError(f"the run took longer than --timeout {args.timeout} s")
    if _PS.applied != total:
        raise RuntimeError(f"{_PS.applied} updates applied for {total} steps")
    return {
        "examples_per_sec": steady_rate(history),
        "test_auc": history[-1]["test_auc"],
        "test_loss": history[-1]["test_loss"],
        "steps": total,
        "epochs": len(history),
        "batch_size": args.batch_size,
        "num_workers": args.num_workers,
        "table_rows": sum(data[3]),
        "history": history,
    }


def setup(rank, args):
    """The rank's state (rank 0 the ps, the others a worker); returns the
    data, which every process reads from the same file."""
    global _PS, _WORKER
    data = load_data(args.data)
    if rank == 0:
        _PS = ParameterServer(args, data[3])
    else:
        _WORKER = Worker(args, rank - 1, data)
    return data


def main(argv):
    reexec_if_needed(__file__)
    args = parse_args(argv)
    result = launch(args, setup, drive, ["uv"], "torch_rpc_dlrm")
    if result is None:
        return 1
    report(result,
           f"done: test auc {result['test_auc']:.4f} after {result['epochs']} epochs; "
           f"{result['examples_per_sec']:.0f} examples/s (steady state); "
           f"blas {', '.join(result['blas']) or 'none found'}", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""A PyTorch model trained on psflow's parameter servers, its step in Python.

The model is an MLP 784-256-10 (ReLU, softmax cross-entropy) on
Fashion-MNIST (Debian's dataset-fashion-mnist). Its parameters are
psflow.Variables on the ps; each worker runs the Python step below: it
pulls the parameters (psflow.read_values: one request per ps), runs the
forward and backward pass in torch, and pushes the gradients to the
optimizer, Adam, which applies them on the ps. Every worker reads its own
shuffled copy of the training set (a per-worker dataset from a Python
generator). The coordinator (this script) schedules closures of
--steps-per-closure steps, prints one line per epoch and evaluates the
test set.

    PYTHONPATH=build/python python3 examples/python/torch_mlp.py

Every worker imports this file as the module `torch_mlp`
(LocalCluster(python_module="torch_mlp"); `psflow server --python torch_mlp`
with this directory on PYTHONPATH for a cluster of your own).

BLAS: Debian's torch uses the libblas.so.3 alternative, some 30x slower
for its GEMMs when that is the reference BLAS; the script runs itself
with Debian's OpenBLAS first on LD_LIBRARY_PATH when it is installed (the
tasks inherit it), and with one compute thread per process.
"""

import argparse
import gzip
import math
import os
import sys
import time

import numpy as np

import psflow

OPENBLAS_DIR = "/usr/lib/x86_64-linux-gnu/openblas-pthread"
DATA_DIR = "/usr/share/datasets/fashion-mnist"
_REEXEC_MARK = "PSFLOW_TORCH_MLP_ENV"


def blas_environment(env):
    """`env` with one compute thread per process and OpenBLAS (if installed)
    ahead of the libblas.so.3 alternative."""
    env = dict(env)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    if os.path.isdir(OPENBLAS_DIR) and OPENBLAS_DIR not in env.get("LD_LIBRARY_PATH", ""):
        env["LD_LIBRARY_PATH"] = OPENBLAS_DIR + (
            ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def _torch():
    import torch
    torch.set_num_threads(1)
    return torch


# ---- data -----------------------------------------------------------------

def read_idx(path):
    """An IDX file of unsigned bytes (gzip or plain) as a numpy array."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[:3] != b"\0\0\x08":
        raise ValueError("%s: not an IDX file of unsigned bytes" % path)
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    offset = 4 + 4 * rank
    if len(data) - offset != math.prod(dims):
        raise ValueError("%s: %d bytes of data for shape %s" % (path, len(data) - offset, dims))
    # A copy: frombuffer's array is read-only, which torch.from_numpy warns of.
    return np.frombuffer(data, dtype=np.uint8, offset=offset).reshape(dims).copy()


def load_split(data_dir, prefix):
    """(images uint8 [n, 784], labels int64 [n]) of "train" or "t10k"."""
    out = []
    for kind in ("images-idx3", "labels-idx1"):
        stem = os.path.join(data_dir, "%s-%s-ubyte" % (prefix, kind))
        path = stem if os.path.exists(stem) else stem + ".gz"
        if not os.path.exists(path):
            raise FileNotFoundError("no %s[.gz] (Debian: apt install dataset-fashion-mnist)"
                                    % stem)
        out.append(read_idx(path))
    images, labels = out
    return images.reshape(images.shape[0], -1), labels.astype(np.int64)


@psflow.function
def training_batches(input_context, data_dir, batch_size, num_examples, seed):
    """This worker's endless stream of (uint8 images, labels) batches: the
    first num_examples training examples (all when 0), reshuffled at every
    pass with the worker's own seed."""
    images, labels = load_split(data_dir, "train")
    if num_examples > 0:
        images, labels = images[:num_examples], labels[:num_examples]
    rng = np.random.default_rng(seed * 1000003 + input_context.input_pipeline_id)
    n = len(labels)

    def batches():
        while True:
            order = rng.permutation(n)
            for start in range(0, n - batch_size + 1, batch_size):
                index = order[start:start + batch_size]
                yield images[index], labels[index]
    return batches()


# ---- the model and its step ---------------------------------------------

def create_model(seed):
    """The parameters as psflow Variables (Glorot-uniform kernels, zero
    biases), inside the strategy's scope: on the ps tasks."""
    rng = np.random.default_rng(seed)

    def glorot(fan_in, fan_out):
        limit = math.sqrt(6.0 / (fan_in + fan_out))
        return rng.uniform(-limit, limit, (fan_out, fan_in)).astype(np.float32)

    return [psflow.Variable(glorot(784, 256), name="dense/kernel"),
            psflow.Variable(np.zeros(256, np.float32), name="dense/bias"),
            psflow.Variable(glorot(256, 10), name="dense_1/kernel"),
            psflow.Variable(np.zeros(10, np.float32), name="dense_1/bias")]


def forward(torch, params, x):
    import torch.nn.functional as F
    w1, b1, w2, b2 = params
    return F.linear(F.relu(F.linear(x, w1, b1)), w2, b2)


@psflow.function
def train_steps(iterator, variables, optimizer, steps):
    """`steps` training steps on this worker: pull, forward and backward in
    torch, push the gradients to the ps optimizer. Returns (loss sum,
    correct predictions, examples)."""
    torch = _torch()
    import torch.nn.functional as F
    loss_sum, correct, examples = 0.0, 0, 0
    for _ in range(steps):
        images, labels = next(iterator)
        params = [torch.from_numpy(a).requires_grad_(True)
                  for a in psflow.read_values(variables)]
        x = torch.from_numpy(images).float().mul_(1.0 / 255.0)
        y = torch.from_numpy(labels)
        logits = forward(torch, params, x)
        loss = F.cross_entropy(logits, y)
        grads = torch.autograd.grad(loss, params)
        optimizer.apply_gradients(zip(grads, variables))
        loss_sum += float(loss) * len(labels)
        correct += int((logits.argmax(1) == y).sum())
        examples += len(labels)
    return loss_sum, correct, examples


def evaluate(variables, images, labels):
    torch = _torch()
    with torch.no_grad():
        params = [torch.from_numpy(a) for a in psflow.read_values(variables)]
        x = torch.from_numpy(images).float().mul_(1.0 / 255.0)
        predicted = forward(torch, params, x).argmax(1).numpy()
    return float((predicted == labels).mean())


# ---- the coordinator -----------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--num-ps", type=int, default=1)
    p.add_argument("--num-workers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--steps-per-closure", type=int, default=20)
    p.add_argument("--train-examples", type=int, default=0,
                   help="train on the first N examples only (0: all 60000)")
    p.add_argument("--data-dir", default=DATA_DIR)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, help="write the per-epoch history here")
    p.add_argument("--insecure", action="store_true",
                   help="plaintext connections (default: mutual TLS, a fresh CA)")
    args = p.parse_args(argv)
    for name in ("epochs", "num_ps", "num_workers", "batch_size", "steps_per_closure"):
        if getattr(args, name) < 1:
            p.error("--%s must be >= 1" % name.replace("_", "-"))
    return args


def train(args, cluster_resolver, log=print):
    """Trains on the cluster; returns the per-epoch history (dicts)."""
    strategy = psflow.distribute.ParameterServerStrategy(cluster_resolver)
    coordinator = psflow.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        variables = create_model(args.seed)
        optimizer = psflow.keras.optimizers.Adam(learning_rate=args.learning_rate)
    dataset = coordinator.create_per_worker_dataset(
        training_batches, args=(args.data_dir, args.batch_size, args.train_examples, args.seed))
    iterator = iter(dataset)
    test_images, test_labels = load_split(args.data_dir, "t10k")
    examples = args.train_examples or 60000
    steps_per_epoch = max(1, examples // args.batch_size)
    history = []
    for epoch in range(1, args.epochs + 1):
        start = time.monotonic()
        rvs = []
        left = steps_per_epoch
        while left > 0:
            n = min(args.steps_per_closure, left)
            rvs.append(coordinator.schedule(train_steps,
                                            args=(iterator, variables, optimizer, n)))
            left -= n
        coordinator.join()
        seconds = time.monotonic() - start
        loss_sum, correct, seen = (sum(v) for v in zip(*coordinator.fetch(rvs)))
        accuracy = evaluate(variables, test_images, test_labels)
        record = {"epoch": epoch, "loss": loss_sum / seen, "train_accuracy": correct / seen,
                  "test_accuracy": accuracy, "seconds": seconds,
                  "examples_per_sec": seen / seconds}
        history.append(record)
        log("epoch %d: loss %.4f, train accuracy %.4f, test accuracy %.4f, %.1f s "
            "(%.0f examples/s)" % (epoch, record["loss"], record["train_accuracy"], accuracy,
                                   seconds, record["examples_per_sec"]))
    # The workers drop their iterators now, while the cluster is up.
    del iterator, dataset
    return history


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    with psflow.LocalCluster(num_ps=args.num_ps, num_workers=args.num_workers,
                             python_module="torch_mlp", insecure=args.insecure) as cluster:
        history = train(args, cluster.cluster_resolver())
    print("final test accuracy %.4f" % history[-1]["test_accuracy"])
    if args.json:
        import json
        with open(args.json, "w") as f:
            json.dump({"history": history, "test_accuracy": history[-1]["test_accuracy"]}, f)
    return 0


if __name__ == "__main__":
    if os.environ.get(_REEXEC_MARK) != "1":
        env = blas_environment(os.environ)
        env[_REEXEC_MARK] = "1"
        os.execve(sys.executable, [sys.executable, os.path.abspath(__file__), *sys.argv[1:]], env)
    sys.exit(main())

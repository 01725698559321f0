"""examples/python/torch_mlp.py, short: one epoch on 6400 training
examples, its steps in Python on real workers (torch forward/backward,
Adam on the ps)."""

import os
import sys

import pytest

torch = pytest.importorskip("torch")

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                        "python")
sys.path.insert(0, os.path.abspath(EXAMPLES))

import psflow  # noqa: E402
import torch_mlp  # noqa: E402


def test_torch_mlp_learns_fashion_mnist():
    if not os.path.isdir(torch_mlp.DATA_DIR):
        pytest.skip("Debian's dataset-fashion-mnist is not installed")
    # The workers' torch gets OpenBLAS and one thread (they inherit this).
    os.environ.update(torch_mlp.blas_environment(os.environ))
    args = torch_mlp.parse_args(["--epochs", "2", "--train-examples", "6400",
                                 "--steps-per-closure", "10"])
    with psflow.LocalCluster(num_ps=1, num_workers=2, python_module="torch_mlp") as cluster:
        history = torch_mlp.train(args, cluster.cluster_resolver(), log=lambda line: None)
    assert len(history) == 2
    assert history[1]["loss"] < history[0]["loss"]
    # Chance is 0.10; two passes over 6400 examples reach about 0.75.
    assert history[1]["test_accuracy"] > 0.65, history

"""Dynamic embedding tables from Python and their checkpoints, against
real ps tasks: rows made by lookups and moved by Adagrad updates are saved
from 2 ps tasks and restored into 3 with equal rows and optimizer slots."""

import numpy as np
import pytest

import psflow

# Keys spread over the int64 range (negative ones too), so that every ps
# task of either cluster holds some.
KEYS = np.array([0, 1, 2, 3, 5, 8, 13, 21, 34, 55, -1, -77, 1 << 40, (1 << 62) + 9,
                 123456789012, -(1 << 50), 4242, 99991, 7, 100], np.int64)
OPTIONS = dict(dim=4, seed=11, initializer="uniform", init_scale=0.5,
               optimizer="adagrad", optimizer_hyper={"initial_accumulator_value": 0.1})


def _strategy(cluster):
    return psflow.distribute.ParameterServerStrategy(cluster.cluster_resolver())


def _grads(seed):
    return np.random.default_rng(seed).normal(size=(len(KEYS), 4)).astype(np.float32)


def _train_and_save(directory):
    """On 2 ps tasks: rows made by lookups and moved by two Adagrad updates,
    saved by a CheckpointManager. Returns the checkpoint's path, the saved
    rows, the rows after one more update, and the row of a key never seen.
    (Each cluster lives in its own function: a LocalCluster hands this
    process's channel credentials back when it is destroyed, so clusters
    must not outlive one another out of order.)"""
    with psflow.LocalCluster(num_ps=2, num_workers=1) as cluster:
        strategy = _strategy(cluster)
        table = psflow.dynamic_embedding.get_variable(strategy, "ctr_ids", **OPTIONS)
        assert table.num_shards == 2
        assert list(strategy.dynamic_embeddings()) == ["ctr_ids"]
        initial = psflow.dynamic_embedding.embedding_lookup(table, KEYS, step=0)
        assert initial.shape == (len(KEYS), 4) and initial.dtype == np.float32
        assert np.all(initial != 0)
        table.apply_gradients(KEYS, _grads(1), learning_rate=0.5, step=1)
        table.apply_gradients(KEYS[:10], _grads(2)[:10], learning_rate=0.5, step=2)
        saved = table.lookup(KEYS, step=3).copy()
        assert not np.array_equal(saved, initial)
        per_shard = [s["rows"] for s in table.stats_per_shard()]
        assert sum(per_shard) == len(KEYS) and min(per_shard) > 0

        manager = psflow.train.CheckpointManager(
            psflow.train.Checkpoint(tables=strategy.dynamic_embeddings()), directory, 2)
        path = manager.save()
        # The reference for the slots: one more update after the save.
        table.apply_gradients(KEYS, _grads(3), learning_rate=0.5, step=4)
        updated = table.lookup(KEYS).copy()
        unseen = table.lookup(np.array([31337], np.int64)).copy()
    return path, saved, updated, unseen


def test_table_round_trips_into_another_ps_count(tmp_path):
    path, saved, updated, unseen = _train_and_save(tmp_path)
    assert not np.allclose(updated, saved)
    with psflow.LocalCluster(num_ps=3, num_workers=1) as cluster:
        strategy = _strategy(cluster)
        table = psflow.dynamic_embedding.get_variable(strategy, "ctr_ids", **OPTIONS)
        assert table.num_shards == 3
        assert table.stats()["rows"] == 0
        manager = psflow.train.CheckpointManager(
            psflow.train.Checkpoint(tables=strategy.dynamic_embeddings()), tmp_path, 2)
        assert manager.restore_or_initialize() == path
        per_shard = [s["rows"] for s in table.stats_per_shard()]
        assert sum(per_shard) == len(KEYS) and min(per_shard) > 0
        np.testing.assert_array_equal(table.lookup(KEYS), saved)
        # Equal Adagrad accumulators give equal rows after the same update.
        table.apply_gradients(KEYS, _grads(3), learning_rate=0.5, step=4)
        np.testing.assert_allclose(table.lookup(KEYS), updated, rtol=1e-6, atol=1e-7)
        # A key the checkpoint does not hold gets the row its seed gives.
        np.testing.assert_array_equal(table.lookup(np.array([31337], np.int64)), unseen)


def test_restore_refuses_another_definition_and_changes_nothing(strategy, tmp_path):
    table = psflow.dynamic_embedding.get_variable(strategy, "defined", dim=4, seed=1)
    saved = table.lookup(KEYS[:5]).copy()
    path = psflow.train.Checkpoint(t=table).write(tmp_path / "ckpt")

    other = psflow.dynamic_embedding.get_variable(strategy, "other", dim=8, seed=1)
    before = other.lookup(KEYS[:5]).copy()
    with pytest.raises(psflow.errors.NotFoundError):
        psflow.train.Checkpoint(u=other).restore(path)  # no table saved as "u"
    with pytest.raises(psflow.errors.InvalidArgumentError, match="dim"):
        psflow.train.Checkpoint(t=other).restore(path)
    np.testing.assert_array_equal(other.lookup(KEYS[:5]), before)
    assert other.stats()["rows"] == 5

    psflow.train.Checkpoint(t=table).restore(path)
    np.testing.assert_array_equal(table.lookup(KEYS[:5]), saved)
    with pytest.raises(psflow.errors.AlreadyExistsError):
        psflow.dynamic_embedding.get_variable(strategy, "defined", dim=5, seed=1)


def test_bad_arguments_name_the_fix(strategy):
    with pytest.raises(ValueError, match="initializer"):
        psflow.dynamic_embedding.get_variable(strategy, "bad", dim=4, initializer="ones")
    with pytest.raises(ValueError, match="unknown optimizer"):
        psflow.dynamic_embedding.get_variable(strategy, "bad", dim=4, optimizer="rmsprop")
    with pytest.raises(psflow.errors.InvalidArgumentError):
        psflow.dynamic_embedding.get_variable(strategy, "bad", dim=0)
    table = psflow.dynamic_embedding.get_variable(strategy, "good", dim=2)
    with pytest.raises(TypeError, match="integers"):
        table.lookup(np.array([0.5]))
    with pytest.raises(ValueError, match="1-D"):
        table.lookup(np.zeros((2, 2), np.int64))
    with pytest.raises(psflow.errors.InvalidArgumentError):
        table.apply_gradients(np.array([1, 2]), np.zeros((2, 3), np.float32), 0.1)
    with pytest.raises(TypeError, match="dynamic embedding tables"):
        psflow.train.Checkpoint(t=object())

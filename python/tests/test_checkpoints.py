"""psflow.train.Checkpoint / CheckpointManager from Python, against real ps
tasks: save, change, restore; the manager's numbering and max_to_keep."""

import numpy as np
import pytest

import psflow


def test_checkpoint_round_trip_with_an_optimizer(strategy, tmp_path):
    with strategy.scope():
        w = psflow.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="ckpt_w")
        b = psflow.Variable(np.zeros(2, np.float32), name="ckpt_b")
        opt = psflow.keras.optimizers.Adam(learning_rate=0.1, name="ckpt_adam")
    opt.apply_gradients([(np.ones((3, 2), np.float32), w), (np.ones(2, np.float32), b)])
    saved_w, saved_b = w.read_value().copy(), b.read_value().copy()
    checkpoint = psflow.train.Checkpoint(model=[w, b], optimizer=opt)
    path = checkpoint.write(tmp_path / "one")
    w.assign(np.full((3, 2), 9.0, np.float32))
    opt.apply_gradients([(np.ones((3, 2), np.float32), w), (np.ones(2, np.float32), b)])
    assert int(opt.iterations.read_value()) == 2
    checkpoint.restore(path)
    np.testing.assert_array_equal(w.read_value(), saved_w)
    np.testing.assert_array_equal(b.read_value(), saved_b)
    assert int(opt.iterations.read_value()) == 1


def test_checkpoint_manager_numbers_and_keeps(strategy, tmp_path):
    with strategy.scope():
        v = psflow.Variable(np.zeros(4, np.float32), name="managed_v")
    manager = psflow.train.CheckpointManager(psflow.train.Checkpoint(v=v), tmp_path, 2)
    assert manager.restore_or_initialize() is None
    paths = []
    for i in range(3):
        v.assign(np.full(4, float(i), np.float32))
        paths.append(manager.save())
    assert manager.checkpoints == paths[1:]
    assert manager.latest_checkpoint == paths[2]
    v.assign(np.full(4, -1.0, np.float32))
    assert manager.restore_or_initialize() == paths[2]
    np.testing.assert_array_equal(v.read_value(), np.full(4, 2.0, np.float32))


def test_checkpoint_refuses_what_it_cannot_track():
    with pytest.raises(TypeError, match="'x' is a int"):
        psflow.train.Checkpoint(x=3)

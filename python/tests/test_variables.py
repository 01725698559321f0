"""psflow.Variable on real ps tasks: round trips, sharding, zero copy,
torch, bad input."""

import numpy as np
import pytest
import torch

import psflow
from psflow import errors
from psflow.distribute.experimental.partitioners import FixedShardsPartitioner


def test_variable_round_trip(strategy):
    with strategy.scope():
        w = psflow.Variable(np.arange(6, dtype=np.float64).reshape(2, 3), name="rt_w")
        b = psflow.Variable([1, 2, 3], name="rt_b")
    assert w.name == "rt_w" and w.shape == (2, 3) and w.dtype == np.float64
    assert b.dtype == np.int32  # Python ints are int32, as in TF
    assert w.device.startswith("/job:ps/")
    np.testing.assert_array_equal(w.read_value(), np.arange(6).reshape(2, 3))
    w.assign(np.ones((2, 3)))
    w.assign_add(np.full((2, 3), 2.0))
    w.assign_sub(np.full((2, 3), 0.5))
    np.testing.assert_array_equal(w.numpy(), np.full((2, 3), 2.5))
    np.testing.assert_array_equal(np.asarray(b), [1, 2, 3])
    b.assign([4, 5, 6])  # lists take the variable's dtype
    np.testing.assert_array_equal(b.sparse_read([2, 0]), [6, 4])
    b.scatter_add(psflow.IndexedSlices(np.array([10], np.int32), np.array([1])))
    np.testing.assert_array_equal(b.numpy(), [4, 15, 6])
    assert "rt_w" in repr(w)


def test_read_values_are_numpy_arrays_without_a_copy(strategy):
    with strategy.scope():
        v = psflow.Variable(np.zeros(1000, np.float32), name="zero_copy")
    a = v.read_value()
    # The array views the received tensor's buffer: its base is the
    # psflow tensor that owns it, not a numpy copy.
    assert not a.flags.owndata
    assert type(a.base).__name__ == "PyCapsule"
    assert a.flags.writeable  # a fresh value, the caller's own


def test_torch_round_trip(strategy):
    with strategy.scope():
        v = psflow.Variable(np.zeros((2, 2), np.float32), name="torch_v")
    t = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    v.assign(t.numpy())
    back = torch.from_numpy(v.read_value())
    assert torch.equal(back, t)
    back += 1  # the array is writable: torch shares it
    assert torch.equal(back, t + 1)


def test_sharded_variable_with_a_partitioner(cluster):
    strategy = psflow.distribute.ParameterServerStrategy(
        cluster.cluster_resolver(), variable_partitioner=FixedShardsPartitioner(2))
    value = np.arange(30, dtype=np.float32).reshape(10, 3)
    with strategy.scope():
        w = psflow.Variable(value, name="sharded_w")
        s = psflow.Variable(5.0, name="sharded_scalar")
    assert isinstance(w, psflow.distribute.ShardedVariable)
    assert w.num_parts == 2 and s.num_parts == 1
    parts = w.variables
    assert [p.shape for p in parts] == [(5, 3), (5, 3)]
    assert {p.device for p in parts} == {"/job:ps/replica:0/task:0/device:CPU:0",
                                         "/job:ps/replica:0/task:1/device:CPU:0"}
    np.testing.assert_array_equal(parts[1].read_value(), value[5:])
    w.assign_add(np.ones((10, 3), np.float32))
    np.testing.assert_array_equal(w.read_value(), value + 1)
    np.testing.assert_array_equal(w.sparse_read([9, 0]), (value + 1)[[9, 0]])


def test_a_python_callable_partitioner(cluster):
    calls = []

    def three_shards(shape, dtype):
        calls.append((shape, np.dtype(dtype).name))
        return [3] + [1] * (len(shape) - 1)

    strategy = psflow.distribute.ParameterServerStrategy(cluster.cluster_resolver(),
                                                         variable_partitioner=three_shards)
    with strategy.scope():
        w = psflow.Variable(np.zeros((7, 2), np.float64), name="callable_w")
    assert calls == [((7, 2), "float64")]
    assert [p.shape[0] for p in w.variables] == [3, 2, 2]  # TF's div layout


def test_bad_updates_raise_value_and_type_errors(strategy):
    with strategy.scope():
        v = psflow.Variable(np.zeros((2, 2), np.float32), name="bad_input")
    with pytest.raises(ValueError, match=r"assign: value: shape \[3\].*\[2, 2\]"):
        v.assign(np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="float64 does not match"):
        v.assign(np.zeros((2, 2), np.float64))
    with pytest.raises(TypeError, match="integers"):
        v.sparse_read([0.5])
    with pytest.raises(TypeError, match="name"):
        with strategy.scope():
            psflow.Variable(1.0, name=3)
    with pytest.raises(TypeError, match="complex"):
        with strategy.scope():
            psflow.Variable(np.zeros(2, np.complex64), name="complex")
    with pytest.raises(errors.InvalidArgumentError, match="out of range|9"):
        v.sparse_read([9])
    np.testing.assert_array_equal(v.numpy(), np.zeros((2, 2)))  # nothing changed

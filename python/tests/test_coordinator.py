"""schedule / fetch / join and TF's error model, against real ps and
worker processes (psflow.LocalCluster)."""

import threading

import numpy as np
import pytest

import psflow
from psflow import errors


def test_schedule_fetch_join_with_registered_functions(coordinator):
    assert coordinator.num_workers == 2
    echo = psflow.RegisteredFunction("testing/echo")
    rv = coordinator.schedule(echo, args=((1, [2.5, "x"], {"k": np.arange(3)}),))
    value = rv.fetch()
    assert value[:2] == (1, [2.5, "x"])
    np.testing.assert_array_equal(value[2]["k"], [0, 1, 2])
    assert rv.get()[0] == 1
    # Arguments: none -> None, several -> a tuple, keywords -> a dict.
    assert coordinator.schedule("testing/echo").fetch() is None
    assert coordinator.schedule("testing/echo", args=(1, 2)).fetch() == (1, 2)
    assert coordinator.schedule("testing/echo", kwargs={"a": 1}).fetch() == {"a": 1}
    sums = [coordinator.schedule("testing/add", args=(i, 10)) for i in range(20)]
    coordinator.join()
    assert coordinator.done()
    assert all(rv.is_ready() for rv in sums)
    assert coordinator.fetch({"sums": sums, "plain": 3}) == {
        "sums": [i + 10 for i in range(20)], "plain": 3}
    workers = {coordinator.schedule("testing/worker_index").fetch() for _ in range(4)}
    assert {w[1] for w in workers} == {2}


def test_a_remote_value_is_an_argument_of_a_later_function(coordinator):
    first = coordinator.schedule("testing/add", args=(1, 2))
    second = coordinator.schedule("testing/add", args=(first, 4))
    assert coordinator.fetch((first, second)) == (3, 7)


def test_fetched_arrays_share_the_result_buffer(coordinator):
    rv = coordinator.schedule("testing/fill", args=(1 << 16, 2.0))
    a, b = rv.fetch(), rv.fetch()
    assert a.dtype == np.float32 and a.shape == (1 << 16,) and float(a[-1]) == 2.0
    assert np.shares_memory(a, b)  # no copy: both view the RemoteValue's tensor
    assert not a.flags.writeable and not a.flags.owndata


def test_a_failing_function_raises_at_fetch_and_join_then_the_coordinator_recovers(
        coordinator):
    bad = coordinator.schedule("testing/fail", args=("boom from the worker",))
    with pytest.raises(errors.InvalidArgumentError, match="boom from the worker"):
        bad.fetch()
    with pytest.raises(errors.InvalidArgumentError, match="boom from the worker"):
        coordinator.join()
    # Reported once; then usable again.
    coordinator.join()
    assert coordinator.schedule("testing/add", args=(1, 1)).fetch() == 2


def test_unknown_functions_and_bad_arguments(coordinator):
    with pytest.raises(errors.NotFoundError, match="testing/ech"):
        coordinator.schedule("testing/ech")
    with pytest.raises(TypeError, match="registered function"):
        coordinator.schedule(lambda: 1)
    with pytest.raises(TypeError, match=r"schedule: args\[1\]"):
        coordinator.schedule("testing/echo", args=(1, object()))
    with pytest.raises(ValueError, match="not both"):
        coordinator.schedule("testing/echo", args=(1,), kwargs={"a": 2})
    with pytest.raises(TypeError, match="args must be a tuple"):
        coordinator.schedule("testing/echo", args=5)
    coordinator.join()


def test_closures_queued_behind_an_error_are_cancelled(strategy, coordinator):
    with strategy.scope():
        arrived = psflow.Variable(np.int64(0), name="cancel_arrived")
        gate = psflow.Variable(np.int64(0), name="cancel_gate")
        other_gate = psflow.Variable(np.int64(0), name="cancel_other_gate")
    # Both workers hold, so that the later closures queue; one held closure
    # fails while the other still holds: nothing queued may start after it.
    failing = coordinator.schedule("testing/hold", kwargs={
        "arrived": arrived, "gate": gate, "fail": "held and failed"})
    holding = coordinator.schedule("testing/hold", kwargs={"arrived": arrived,
                                                           "gate": other_gate})
    queued = [coordinator.schedule("testing/add", args=(i, 1)) for i in range(5)]
    gate.assign(np.int64(1))
    with pytest.raises(errors.InvalidArgumentError, match="held and failed"):
        failing.fetch()
    other_gate.assign(np.int64(1))
    with pytest.raises(errors.InvalidArgumentError, match="held and failed"):
        coordinator.join()
    for rv in queued:
        with pytest.raises(errors.CancelledError, match="cancelled"):
            rv.fetch()
    assert holding.fetch() in (0, 1)
    coordinator.join()


def test_join_releases_the_gil(strategy, coordinator):
    """join() blocks in one thread while this thread opens the gate the
    scheduled function waits on: only possible if join released the GIL."""
    with strategy.scope():
        arrived = psflow.Variable(np.int64(0), name="gil_arrived")
        gate = psflow.Variable(np.int64(0), name="gil_gate")
    rv = coordinator.schedule("testing/hold", kwargs={"arrived": arrived, "gate": gate,
                                                      "value": "released"})
    outcome = []
    joiner = threading.Thread(target=lambda: outcome.append(coordinator.join() or "joined"))
    joiner.start()
    assert rv.wait(timeout=0.0) is False
    gate.assign(np.int64(1))
    joiner.join(timeout=60)
    assert not joiner.is_alive() and outcome == ["joined"]
    assert rv.fetch() == "released"
    assert int(arrived.read_value()) == 1


def test_the_reference_worker_fn_updates_variables_on_the_ps(strategy, coordinator):
    with strategy.scope():
        v1 = psflow.Variable(initial_value=0.0, name="ref_v1")
        v2 = psflow.Variable(initial_value=1.0, name="ref_v2")
    assert v1.dtype == np.float32  # Python floats are float32, as in TF
    # Each on a ps task: the emptiest one when it was created (this module's
    # earlier variables share the strategy, so not necessarily different).
    ps_devices = {"/job:ps/replica:0/task:%d/device:CPU:0" % i for i in range(2)}
    assert v1.device in ps_devices and v2.device in ps_devices
    results = [coordinator.schedule("examples/worker_fn", args=(v1, v2)) for _ in range(10)]
    coordinator.join()
    assert all(isinstance(r.fetch(), np.ndarray) for r in results)
    np.testing.assert_allclose(v1.numpy(), 1.0, rtol=1e-5)
    np.testing.assert_allclose(v2.numpy(), -1.0, rtol=1e-5)


def test_placement_option_gives_tf_round_robin(cluster):
    strategy = psflow.distribute.ParameterServerStrategy(
        cluster.cluster_resolver(), placement="round_robin")
    with strategy.scope():
        big = psflow.Variable(initial_value=np.zeros(1000, np.float32), name="rr_big")
        small = psflow.Variable(initial_value=0.0, name="rr_small")
        third = psflow.Variable(initial_value=0.0, name="rr_third")
    # TF's counter: task 0, 1, 0, however big the first one is (the default
    # would put the third beside the small one, on the emptier task).
    assert big.device != small.device
    assert third.device == big.device
    with pytest.raises(ValueError, match="placement must be"):
        psflow.distribute.ParameterServerStrategy(cluster.cluster_resolver(), placement="lightest")


def test_per_worker_dataset_of_a_registered_dataset_function(coordinator):
    # range(40) sharded by worker index, batches of 2: worker w reads the
    # numbers of parity w (10 batches each: none runs out).
    dataset = coordinator.create_per_worker_dataset("examples/range_by_worker", args=(40, 2))
    iterator = iter(dataset)
    results = [coordinator.schedule("examples/next_element", args=(iterator,))
               for _ in range(4)]
    coordinator.join()
    seen = []
    for worker, batch in coordinator.fetch(results):
        assert batch.shape == (2,) and all(int(x) % 2 == worker for x in batch)
        seen.extend(int(x) for x in batch)
    assert len(set(seen)) == len(seen) == 8
    del iterator, dataset, results  # released on the workers at the next join
    coordinator.join()
    with pytest.raises(errors.NotFoundError, match="no_such_dataset"):
        coordinator.create_per_worker_dataset("no_such_dataset")

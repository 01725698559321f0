"""Python step functions (@psflow.function) on real worker processes that
import their module (`psflow server --python psflow_test_steps`)."""

import signal
import time

import numpy as np
import pytest

import psflow
import psflow_test_steps as steps


@pytest.fixture(scope="module")
def cluster():
    with psflow.LocalCluster(num_ps=1, num_workers=2,
                             python_module="psflow_test_steps") as c:
        yield c


@pytest.fixture(scope="module")
def strategy(cluster):
    return psflow.distribute.ParameterServerStrategy(cluster.cluster_resolver())


@pytest.fixture
def coordinator(strategy):
    return psflow.distribute.coordinator.ClusterCoordinator(strategy)


def test_a_python_step_is_scheduled_fetched_and_joined(coordinator):
    rvs = [coordinator.schedule(steps.add, args=(i,), kwargs={"y": 10}) for i in range(8)]
    coordinator.join()
    assert coordinator.fetch(rvs) == [i + 10 for i in range(8)]
    arr = coordinator.schedule(steps.add, args=(np.arange(3.0), np.ones(3))).fetch()
    np.testing.assert_array_equal(arr, [1.0, 2.0, 3.0])


def test_steps_run_on_both_workers(coordinator):
    rvs = [coordinator.schedule(steps.where_am_i) for _ in range(20)]
    seen = set(coordinator.fetch(rvs))
    assert seen <= {0, 1}
    assert len(seen) >= 1


def test_captured_variables_are_the_coordinators(strategy, coordinator):
    with strategy.scope():
        steps.captured_counter = psflow.Variable(np.int64(0), name="captured_counter")
    rvs = [coordinator.schedule(steps.bump_captured, args=(2,)) for _ in range(5)]
    coordinator.join()
    assert int(steps.captured_counter.read_value()) == 10
    assert max(coordinator.fetch(rvs)) == 10


def test_variables_read_by_helpers_and_lambdas_are_captured(strategy, coordinator):
    with strategy.scope():
        steps.captured_counter = psflow.Variable(np.int64(0), name="captured_by_helpers")
    rvs = [coordinator.schedule(steps.bump_through_helpers, args=(3,)) for _ in range(4)]
    coordinator.join()
    # Every update reached the coordinator's Variable on the ps, through the
    # helper, and the lambda's helper read it there too.
    assert int(steps.captured_counter.read_value()) == 12
    assert max(coordinator.fetch(rvs)) == 12


def test_optimizer_applies_on_the_ps(strategy, coordinator):
    with strategy.scope():
        w = psflow.Variable(np.zeros(4, np.float32), name="w_sgd")
        steps.sgd = psflow.keras.optimizers.SGD(learning_rate=0.5)
    for _ in range(4):
        coordinator.schedule(steps.sgd_step, args=(w, np.ones(4, np.float32)))
    coordinator.join()
    np.testing.assert_allclose(w.read_value(), np.full(4, -2.0, np.float32))
    assert int(steps.sgd.iterations.read_value()) == 4


def test_a_python_exception_crosses_the_wire(coordinator):
    rv = coordinator.schedule(steps.fails, args=("bad value 7",))
    with pytest.raises(psflow.errors.UnknownError) as info:
        rv.fetch()
    text = str(info.value.message)
    assert "ValueError: bad value 7" in text
    assert "Traceback" in text and "in inner" in text and "psflow_test_steps.py" in text
    with pytest.raises(psflow.errors.UnknownError):
        coordinator.join()  # TF's error model: raised once by the next join


def test_a_psflow_error_keeps_its_code(coordinator):
    rv = coordinator.schedule(steps.fails_with_status)
    with pytest.raises(psflow.errors.InvalidArgumentError) as info:
        rv.fetch()
    assert "bad shape [3]" in info.value.message
    with pytest.raises(psflow.errors.InvalidArgumentError):
        coordinator.join()


def test_a_function_the_workers_did_not_import_is_not_found(coordinator):
    @psflow.function
    def only_here():
        return 1

    rv = coordinator.schedule(only_here)
    with pytest.raises(psflow.errors.NotFoundError) as info:
        rv.fetch()
    assert "only_here" in info.value.message
    assert "--python" in info.value.message
    with pytest.raises(psflow.errors.NotFoundError):
        coordinator.join()


def test_per_worker_python_datasets_are_sharded_by_worker(coordinator):
    # 12 batches per worker: the 6 steps cannot exhaust one worker's shard,
    # however they are spread.
    dataset = coordinator.create_per_worker_dataset(steps.sharded_dataset, args=(120,))
    iterator = iter(dataset)
    rvs = [coordinator.schedule(steps.next_batch, args=(iterator,)) for _ in range(6)]
    coordinator.join()
    for worker, batch in coordinator.fetch(rvs):
        assert batch.shape == (5,)
        # Worker i holds the elements i, i+2, i+4, ... of 0..119.
        assert all(int(e) % 2 == worker for e in batch), (worker, batch)


def test_an_exhausted_python_dataset_ends_the_step_with_out_of_range(coordinator):
    # 2 batches per worker, 8 steps: at least 4 find their worker's shard
    # exhausted; StopIteration becomes TF's OutOfRangeError.
    dataset = coordinator.create_per_worker_dataset(steps.sharded_dataset, args=(20,))
    iterator = iter(dataset)
    # TF's error model: the error is raised once, by whichever of schedule
    # and join comes first after the failed step finished.
    with pytest.raises(psflow.errors.OutOfRangeError, match="StopIteration"):
        for _ in range(8):
            coordinator.schedule(steps.next_batch, args=(iterator,))
        coordinator.join()


def wait_until(predicate, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
    return False


def test_a_killed_worker_s_python_step_runs_again_elsewhere():
    with psflow.LocalCluster(num_ps=1, num_workers=2,
                             python_module="psflow_test_steps") as cluster:
        strategy = psflow.distribute.ParameterServerStrategy(cluster.cluster_resolver())
        coordinator = psflow.distribute.coordinator.ClusterCoordinator(strategy)
        with strategy.scope():
            counter = psflow.Variable(np.int64(0), name="counter")
            marker = psflow.Variable(np.int64(-1), name="marker")
            hold = psflow.Variable(np.int64(1), name="hold")
        rv = coordinator.schedule(steps.increment_then_hold, args=(counter, marker, hold))
        assert wait_until(lambda: int(marker.read_value()) >= 0, 60)
        first = int(marker.read_value())
        cluster.signal_task("worker", first, signal.SIGKILL)
        hold.assign(np.int64(0))
        assert rv.fetch() == 1 - first
        # The rerun's updates carry the first run's keys: applied once.
        assert int(counter.read_value()) == 1
        assert int(marker.read_value()) == first
        coordinator.join()


def test_strategy_run_inside_a_step(strategy, coordinator):
    steps.strategy = strategy
    rv = coordinator.schedule(steps.replica_step, args=(np.arange(3.0),))
    np.testing.assert_array_equal(rv.fetch(), [0.0, 2.0, 4.0])


def test_local_cluster_refuses_a_bad_module_name():
    with pytest.raises(ValueError, match="python_module"):
        psflow.LocalCluster(python_module="not a module")
    with pytest.raises(ValueError, match="python_module"):
        psflow.LocalCluster(python_module=["ok.name", ""])


def test_a_step_runs_here_when_called():
    # Calling a @psflow.function runs it in this process, as a function.
    assert steps.add(2, y=3) == 5
    assert steps.add.name == "psflow_test_steps.add"


def test_workers_are_python_processes_and_the_ps_is_not(cluster):
    import os
    exe = lambda job, i: os.path.basename(os.readlink("/proc/%d/exe" % cluster.pid(job, i)))
    assert exe("worker", 0).startswith("python") and exe("worker", 1).startswith("python")
    assert not exe("ps", 0).startswith("python")

"""A worker killed in the middle of a function: the function runs again on
another worker, and its variable update applies once."""

import signal
import time

import numpy as np

import psflow


def wait_until(predicate, seconds):
    """Polls `predicate` (a ps read each time) for at most `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
    return False


def test_a_killed_worker_s_function_runs_again_elsewhere():
    with psflow.LocalCluster(num_ps=1, num_workers=2) as cluster:
        strategy = psflow.distribute.ParameterServerStrategy(cluster.cluster_resolver())
        coordinator = psflow.distribute.coordinator.ClusterCoordinator(strategy)
        with strategy.scope():
            counter = psflow.Variable(np.int64(0), name="counter")
            marker = psflow.Variable(np.int64(-1), name="marker")
            hold = psflow.Variable(np.int64(1), name="hold")
        rv = coordinator.schedule("testing/increment_then_hold", args=(counter, marker, hold))
        # The update is made and the function holds: kill its worker.
        assert wait_until(lambda: int(counter.read_value()) == 1, 30)
        first = int(marker.read_value())
        cluster.signal_task("worker", first, signal.SIGKILL)
        hold.assign(np.int64(0))
        finished_on = rv.fetch()
        assert finished_on == 1 - first
        # The rerun's updates carry the first run's keys: each applied once.
        assert int(counter.read_value()) == 1
        assert int(marker.read_value()) == first
        coordinator.join()

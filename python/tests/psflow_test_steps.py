"""Python step functions the tests schedule: every task of the tests'
clusters imports this module (LocalCluster(python_module=...))."""

import time

import numpy as np

import psflow

# Set by the tests on the coordinator; the steps read them by name (the
# worker gets the coordinator's variables in their place).
captured_counter = None
sgd = None


@psflow.function
def add(x, y=0):
    return x + y


@psflow.function
def where_am_i():
    return psflow.distribute.coordinator.experimental_get_current_worker_index()


@psflow.function
def bump_captured(n):
    captured_counter.assign_add(np.int64(n))
    return int(captured_counter.read_value())


def _bump(n):
    # A helper of the module: the Variable it reads is captured too.
    captured_counter.assign_add(np.int64(n))


def _read():
    return int(captured_counter.read_value())


@psflow.function
def bump_through_helpers(n):
    _bump(n)
    read = lambda: _read()  # noqa: E731 (a nested code object)
    return read()


@psflow.function
def sgd_step(w, grad):
    """One SGD update of w by grad, on the ps (sgd: a captured optimizer)."""
    sgd.apply_gradients([(np.asarray(grad, np.float32), w)])
    return psflow.read_values([w])[0]


@psflow.function
def fails(message):
    def inner():
        raise ValueError(message)
    inner()


@psflow.function
def fails_with_status():
    raise psflow.errors.InvalidArgumentError(None, None, "bad shape [3] (use [4])")


@psflow.function
def next_batch(iterator):
    index = psflow.distribute.coordinator.experimental_get_current_worker_index()
    return index, next(iterator)


@psflow.function
def sharded_dataset(input_context, size):
    return (psflow.data.Dataset.from_tensor_slices(np.arange(size, dtype=np.int64))
            .shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
            .batch(5))


@psflow.function
def increment_then_hold(counter, marker, hold):
    """Adds 1 to counter, records the worker in marker, then waits (at most
    60 s) until hold is 0; returns the worker index."""
    index = psflow.distribute.coordinator.experimental_get_current_worker_index()
    counter.assign_add(np.int64(1))
    marker.assign(np.int64(index))
    deadline = time.monotonic() + 60
    while int(hold.read_value()) != 0:
        if time.monotonic() > deadline:
            raise TimeoutError("hold stayed set for 60 s")
        time.sleep(0.01)
    return index


strategy = None


@psflow.function
def replica_step(x):
    """TF's worker_fn: strategy.run of a replica function (the captured
    strategy is the worker's), reduced."""
    def replica_fn(v):
        return v * 2
    per_replica = strategy.run(replica_fn, args=(x,))
    return strategy.reduce(psflow.distribute.ReduceOp.SUM, per_replica, axis=None)

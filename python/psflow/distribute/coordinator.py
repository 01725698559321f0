"""TF's tf.distribute.coordinator: ClusterCoordinator and RemoteValue.

Scheduled functions are Python step functions (@psflow.function, run by
workers that import their module) or functions registered in the C++
binary the workers run (PSFLOW_REGISTER_FUNCTION), named by their
registered name or by a psflow.RegisteredFunction.
"""

from psflow import _psflow
from psflow._functions import function_name
from psflow._steps import PythonFunction

__all__ = ["ClusterCoordinator", "RemoteValue", "PerWorkerDataset", "PerWorkerIterator",
           "experimental_get_current_worker_index"]


def experimental_get_current_worker_index():
    """TF's: the index of the worker running the current Python step or
    dataset function (FailedPreconditionError elsewhere)."""
    return _psflow._worker_index()

RemoteValue = _psflow.RemoteValue
PerWorkerDataset = _psflow.PerWorkerDataset
PerWorkerIterator = _psflow.PerWorkerIterator


def _function_argument(args, kwargs):
    """The one value a registered C++ function receives (its `args`)."""
    args = () if args is None else args
    kwargs = {} if kwargs is None else kwargs
    if not isinstance(args, (tuple, list)):
        raise TypeError("schedule: args must be a tuple or list, got %s" % type(args).__name__)
    if not isinstance(kwargs, dict):
        raise TypeError("schedule: kwargs must be a dict, got %s" % type(kwargs).__name__)
    if args and kwargs:
        raise ValueError("schedule: a registered C++ function takes one value: give args or "
                         "kwargs, not both")
    if kwargs:
        return dict(kwargs)
    if not args:
        return None
    if len(args) == 1:
        return args[0]
    return tuple(args)


def _leaves(value, out):
    if isinstance(value, RemoteValue):
        out.append(value)
    elif isinstance(value, (tuple, list)):
        for item in value:
            _leaves(item, out)
    elif isinstance(value, dict):
        for item in value.values():
            _leaves(item, out)


def _rebuild(value, fetched):
    if isinstance(value, RemoteValue):
        return next(fetched)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # namedtuple
        return type(value)(*(_rebuild(v, fetched) for v in value))
    if isinstance(value, (tuple, list)):
        return type(value)(_rebuild(v, fetched) for v in value)
    if isinstance(value, dict):
        return type(value)((k, _rebuild(v, fetched)) for k, v in value.items())
    return value


class ClusterCoordinator:
    """Schedules registered functions on the workers of a strategy's cluster.

    TF's ClusterCoordinator(strategy): one per strategy (a second one for
    the same strategy shares its queue, workers and error state). Blocking
    calls (schedule on a full queue, join, fetch) release the GIL.
    """

    def __init__(self, strategy, *, max_in_flight_per_worker=1, worker_timeout=20.0):
        from psflow.distribute.parameter_server_strategy import ParameterServerStrategy
        if not isinstance(strategy, ParameterServerStrategy):
            raise TypeError("ClusterCoordinator: strategy must be a "
                            "psflow.distribute.ParameterServerStrategy, got %s"
                            % type(strategy).__name__)
        self._strategy = strategy
        self._native = _psflow._ClusterCoordinator(strategy._native,
                                                   int(max_in_flight_per_worker),
                                                   float(worker_timeout))
        strategy._cluster_coordinator = self

    @property
    def strategy(self):
        return self._strategy

    @property
    def num_workers(self):
        return self._native.num_workers

    def schedule(self, fn, args=None, kwargs=None):
        """Queues fn on a worker; returns its RemoteValue at once.

        `fn` is a registered function's name ("testing/echo") or a
        psflow.RegisteredFunction. The function receives one value: no
        arguments give None, one positional argument that value, several a
        tuple of them, keyword arguments a dict. Arguments are None, bool,
        int, float, str, bytes, numpy arrays, psflow.Variable (its handle),
        RemoteValues (the function waits for them), and tuples, lists and
        dicts of these. Raises the error of an earlier function, once (TF's
        error model), and then queues nothing.
        """
        if isinstance(fn, PythonFunction):
            # A Python step (@psflow.function): it receives args and kwargs
            # as given, and the Variables and optimizers it captures.
            return self._native.schedule(fn.name, fn._pack(args, kwargs))
        name = function_name(fn)
        return self._native.schedule(name, _function_argument(args, kwargs))

    def join(self):
        """Waits until every scheduled function has finished; raises the first error."""
        self._native.join()

    def done(self):
        """Whether every scheduled function has finished (raises a pending error)."""
        return self._native.done()

    def fetch(self, val):
        """The value of every RemoteValue in the nest `val` (tuples, lists,
        dicts, namedtuples), other leaves unchanged."""
        remote = []
        _leaves(val, remote)
        fetched = iter(self._native.fetch_all(remote) if remote else [])
        return _rebuild(val, fetched)

    def create_per_worker_dataset(self, dataset_fn, args=None):
        """TF's create_per_worker_dataset, for a dataset function registered
        in the C++ binary (PSFLOW_REGISTER_DATASET) by name: each worker
        builds its copy with its index and `args`. iter() of the result is
        a PerWorkerIterator to pass in schedule() arguments."""
        if isinstance(dataset_fn, PythonFunction):
            # A Python dataset function: each worker calls it (with a
            # psflow.distribute.InputContext first when it takes one more
            # parameter than `args`) and iterates over what it returns.
            packed = tuple(args) if isinstance(args, (tuple, list)) else (
                () if args is None else (args,))
            return self._native.create_per_worker_dataset(
                _psflow._PYTHON_DATASET_FUNCTION, (dataset_fn.name, packed))
        return self._native.create_per_worker_dataset(function_name(dataset_fn), args)

    def get_task_states(self):
        """(task, None or the reason it is unavailable), workers then ps tasks."""
        return self._native.task_states()

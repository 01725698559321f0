"""TF's tf.distribute.ParameterServerStrategy (the variables part; the
closures run through psflow.distribute.coordinator.ClusterCoordinator)."""

import contextlib

from psflow import _psflow
from psflow.distribute.cluster_resolver import ClusterResolver
from psflow.distribute.values import PerReplica, ReduceOp

__all__ = ["ParameterServerStrategy"]


def _reduce_op_name(reduce_op):
    if isinstance(reduce_op, ReduceOp):
        return reduce_op.value
    if isinstance(reduce_op, str):
        return reduce_op
    raise TypeError("reduce_op must be a psflow.distribute.ReduceOp or 'SUM' / 'MEAN', got %r"
                    % (reduce_op,))


class ParameterServerStrategy:
    """Variables on parameter servers; functions on workers.

    ParameterServerStrategy(cluster_resolver, variable_partitioner=None)

    `cluster_resolver` names the cluster and this process's task in it
    (the chief). `variable_partitioner` (psflow.distribute.experimental.
    partitioners, or any callable (shape, dtype) -> partitions) splits
    large variables along axis 0 over the ps tasks. psflow.Variable
    created inside `with strategy.scope():` is placed on the ps task
    holding the fewest bytes so far, ties to the lowest index (equal-sized
    variables land as TF's round robin puts them); `placement="round_robin"`
    gives TF's size-blind order exactly.
    """

    def __init__(self, cluster_resolver, variable_partitioner=None, *, variable_timeout=300.0,
                 placement="fewest_bytes"):
        if not isinstance(cluster_resolver, ClusterResolver):
            raise TypeError("ParameterServerStrategy: cluster_resolver must be a "
                            "psflow.distribute.cluster_resolver.ClusterResolver, got %s"
                            % type(cluster_resolver).__name__)
        spec = cluster_resolver.cluster_spec()
        self._cluster_resolver = cluster_resolver
        self._variable_partitioner = variable_partitioner
        self._native = _psflow._ParameterServerStrategy(
            spec._to_json(), cluster_resolver.task_type, cluster_resolver.task_id,
            cluster_resolver.rpc_layer, variable_partitioner, float(variable_timeout),
            str(placement))
        self._cluster_coordinator = None

    @property
    def cluster_resolver(self):
        return self._cluster_resolver

    @property
    def variable_partitioner(self):
        return self._variable_partitioner

    @property
    def num_replicas_in_sync(self):
        """One replica per worker (psflow's workers compute on their CPU)."""
        return 1

    @property
    def num_ps(self):
        return self._native.num_ps

    def dynamic_embeddings(self):
        """{name: psflow.dynamic_embedding.DynamicEmbedding} of every table
        made through this strategy (get_variable): what a checkpoint of the
        model tracks beside its variables
        (psflow.train.Checkpoint(tables=strategy.dynamic_embeddings()))."""
        from psflow.dynamic_embedding import DynamicEmbedding
        return {name: DynamicEmbedding(native)
                for name, native in _psflow._strategy_dynamic_embeddings(self._native).items()}

    @contextlib.contextmanager
    def scope(self):
        """TF's strategy.scope(): psflow.Variable made inside goes to the ps tasks.

        The scope belongs to the calling thread, as in TF."""
        guard = self._native.enter_scope()
        try:
            yield self
        finally:
            guard.exit()

    def reduce(self, reduce_op, value, axis=None):
        """TF's strategy.reduce: PerReplica values combined across replicas
        (and along `axis` when given); other values pass through (axis None)."""
        if axis is not None and not isinstance(axis, (list, tuple)):
            if isinstance(axis, bool) or not isinstance(axis, int):
                raise TypeError("reduce: axis must be an int, a list of ints or None, got %r"
                                % (axis,))
            axis = [axis]
        return _psflow._reduce(_reduce_op_name(reduce_op), value,
                               None if axis is None else [int(a) for a in axis])

    def gather(self, value, axis):
        """TF's strategy.gather: PerReplica components concatenated along `axis`."""
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise TypeError("gather: axis must be an int, got %r" % (axis,))
        return _psflow._gather(value, axis)

    def run(self, fn, args=(), kwargs=None, options=None):
        """TF's strategy.run: `fn` on this worker's one replica (inside a
        Python step; the strategy the step captures is the worker's), its
        result as is (num_replicas_in_sync is 1)."""
        del options  # TF's RunOptions: nothing to choose with one replica.
        return fn(*args, **(kwargs or {}))

    def experimental_local_results(self, value):
        """TF's experimental_local_results: the components, as a tuple."""
        if isinstance(value, PerReplica):
            return value.values
        return (value,)

    def __repr__(self):
        return "<psflow.distribute.ParameterServerStrategy: %d ps>" % self.num_ps


class _WorkerStrategy(ParameterServerStrategy):
    """The strategy a Python step sees on a worker in place of the
    coordinator's one it captured: run, reduce, gather,
    experimental_local_results, num_replicas_in_sync (no scope: variables
    are made on the coordinator)."""

    def __init__(self):  # pylint: disable=super-init-not-called
        self._native = None

    @property
    def num_ps(self):
        raise RuntimeError("num_ps: not known on a worker")

    def scope(self):
        raise RuntimeError("strategy.scope() inside a step on a worker: create variables "
                           "on the coordinator")

    def __repr__(self):
        return "<psflow.distribute.ParameterServerStrategy (on a worker)>"

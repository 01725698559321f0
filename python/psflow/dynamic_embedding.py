"""Dynamic embedding tables (TensorFlow Recommenders-Addons'
tfra.dynamic_embedding): int64 keys, rows created on the ps tasks at
their first lookup, spread over the ps tasks by a stable hash of the key.
psflow's C++ DynamicEmbedding (docs/embeddings.md has the semantics:
initializers, admission, expiry, optimizers).

    table = psflow.dynamic_embedding.get_variable(
        strategy, "user_ids", dim=8, optimizer="adagrad")
    rows = psflow.dynamic_embedding.embedding_lookup(table, keys, step=0)
    table.apply_gradients(keys, grads, learning_rate=0.1, step=0)
    psflow.train.Checkpoint(tables=strategy.dynamic_embeddings()).write(path)

Tables are defined, looked up and updated from the chief (the process
holding the strategy).
"""

from psflow import _psflow

__all__ = ["DynamicEmbedding", "get_variable", "embedding_lookup"]

_INITIALIZERS = ("zeros", "uniform", "normal")


class DynamicEmbedding:
    """A handle on one table (made by get_variable or listed by
    strategy.dynamic_embeddings()); copies reach the same rows.
    Thread-safe: calls from several threads may be in flight."""

    def __init__(self, native):
        if not isinstance(native, _psflow._DynamicEmbedding):
            raise TypeError("DynamicEmbedding: make tables with "
                            "psflow.dynamic_embedding.get_variable")
        self._native = native

    @property
    def name(self):
        return self._native.name

    @property
    def dim(self):
        return self._native.dim

    @property
    def num_shards(self):
        """The number of ps tasks holding the table's rows."""
        return self._native.num_shards

    def lookup(self, keys, step=-1):
        """The rows of `keys` (1-D integers) as a float32 array [n, dim], in
        key order; keys not admitted read as zeros. `step` (>= 0) is the
        training step the lookup counts in for expiry; -1: none."""
        return self._native.lookup(keys, int(step))

    def apply_gradients(self, keys, grads, learning_rate, step=-1):
        """Applies gradient rows `grads` (float32 [n, dim]) of `keys` with
        the table's optimizer on the ps tasks; gradients of keys without a
        row are dropped."""
        self._native.apply_gradients(keys, grads, float(learning_rate), int(step))

    def stats(self):
        """Exact counters summed over the ps tasks: a dict with rows, clock,
        created, evicted_ttl, evicted_capacity, not_admitted,
        dropped_gradients, applies, bytes, sketch_bytes."""
        return self._native.stats()

    def stats_per_shard(self):
        """The same counters per ps task (list index = ps task)."""
        return self._native.stats_per_shard()

    def __eq__(self, other):
        return isinstance(other, DynamicEmbedding) and other.name == self.name

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return "<psflow DynamicEmbedding %r dim=%d shards=%d>" % (self.name, self.dim,
                                                                 self.num_shards)


def _optimizer(optimizer):
    from psflow.keras.optimizers import Optimizer
    if isinstance(optimizer, Optimizer):
        return optimizer._kind, dict(optimizer._hyper)
    if isinstance(optimizer, str):
        return optimizer.lower(), {}
    raise TypeError("get_variable: optimizer must be 'sgd', 'adagrad', 'adam', 'ftrl' or a "
                    "psflow.keras.optimizers optimizer (its kind and hyper-parameters), "
                    "got %s" % type(optimizer).__name__)


def get_variable(strategy, name, dim, *, seed=0, initializer="uniform", init_scale=0.05,
                 optimizer="sgd", optimizer_hyper=None, capacity_per_shard=0, ttl_steps=0,
                 admit_after=0, sketch_width=1 << 20, admit_probability=1.0):
    """Defines the table `name` on every ps task of `strategy` (TFRA's
    get_variable; the C++ DynamicEmbedding::get_variable with
    DynamicEmbeddingOptions of the same names). Calling it again with the
    same options reaches the same rows; other options for an existing name
    raise AlreadyExistsError. `initializer`: "zeros", "uniform" (in
    [-init_scale, init_scale)) or "normal" (stddev init_scale), drawn from
    (seed, key) alone. `optimizer` fixes the slots every row keeps: a kind
    name with Keras hyper-parameters in `optimizer_hyper`
    (initial_accumulator_value, beta_1, ...), or a psflow.keras optimizer."""
    from psflow.distribute.parameter_server_strategy import ParameterServerStrategy
    if not isinstance(strategy, ParameterServerStrategy):
        raise TypeError("get_variable: strategy must be a psflow.distribute."
                        "ParameterServerStrategy, got %s" % type(strategy).__name__)
    if initializer not in _INITIALIZERS:
        raise ValueError("get_variable: initializer must be one of %s, got %r"
                         % (", ".join(_INITIALIZERS), initializer))
    kind, hyper = _optimizer(optimizer)
    hyper.update(optimizer_hyper or {})
    native = _psflow._DynamicEmbedding.get_variable(
        strategy._native, str(name), int(dim), int(seed), initializer, float(init_scale), kind,
        hyper, int(capacity_per_shard), int(ttl_steps), int(admit_after), int(sketch_width),
        float(admit_probability))
    return DynamicEmbedding(native)


def embedding_lookup(table, keys, step=-1):
    """TFRA's embedding_lookup: table.lookup(keys, step)."""
    if not isinstance(table, DynamicEmbedding):
        raise TypeError("embedding_lookup: table must be a psflow DynamicEmbedding, got %s"
                        % type(table).__name__)
    return table.lookup(keys, step)

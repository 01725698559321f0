"""TF's tf.data for per-worker datasets written in Python: a Dataset of
numpy arrays (from_tensor_slices, shard, batch, shuffle, repeat, take),
iterated on the worker that builds it. A dataset function
(@psflow.function) may also return any Python iterable or generator.

    @psflow.function
    def dataset_fn(input_context):
        return (psflow.data.Dataset.from_tensor_slices((x, y))
                .shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
                .batch(64))
"""

import numpy as np

__all__ = ["Dataset"]


class Dataset:
    """A re-iterable chain of transformations over numpy slices."""

    def __init__(self, make_iter):
        self._make_iter = make_iter

    def __iter__(self):
        return self._make_iter()

    @staticmethod
    def from_tensor_slices(tensors):
        """Element i is tensors[i] (a nest of arrays, sliced along axis 0)."""
        flat = tensors if isinstance(tensors, (tuple, list)) else (tensors,)
        arrays = [np.asarray(t) for t in flat]
        n = len(arrays[0])
        for a in arrays:
            if len(a) != n:
                raise ValueError("from_tensor_slices: the components have %d and %d rows"
                                 % (n, len(a)))
        single = not isinstance(tensors, (tuple, list))

        def gen():
            for i in range(n):
                yield arrays[0][i] if single else tuple(a[i] for a in arrays)
        return Dataset(gen)

    @staticmethod
    def from_generator(generator):
        """`generator` is called for each iteration (TF's from_generator)."""
        return Dataset(lambda: iter(generator()))

    @staticmethod
    def range(*args):
        return Dataset(lambda: iter(np.arange(*args, dtype=np.int64)))

    def shard(self, num_shards, index):
        if not 0 <= index < num_shards:
            raise ValueError("shard: index %d is outside [0, %d)" % (index, num_shards))
        parent = self

        def gen():
            for i, e in enumerate(parent):
                if i % num_shards == index:
                    yield e
        return Dataset(gen)

    def batch(self, batch_size, drop_remainder=False):
        if batch_size < 1:
            raise ValueError("batch: batch_size must be >= 1, got %d" % batch_size)
        parent = self

        def gen():
            buf = []
            for e in parent:
                buf.append(e)
                if len(buf) == batch_size:
                    yield _stack(buf)
                    buf = []
            if buf and not drop_remainder:
                yield _stack(buf)
        return Dataset(gen)

    def shuffle(self, buffer_size, seed=None):
        parent = self

        def gen():
            rng = np.random.default_rng(seed)
            buf = []
            for e in parent:
                buf.append(e)
                if len(buf) >= buffer_size:
                    yield buf.pop(int(rng.integers(len(buf))))
            while buf:
                yield buf.pop(int(rng.integers(len(buf))))
        return Dataset(gen)

    def repeat(self, count=-1):
        parent = self

        def gen():
            n = 0
            while count < 0 or n < count:
                yield from parent
                n += 1
        return Dataset(gen)

    def take(self, count):
        parent = self

        def gen():
            for i, e in enumerate(parent):
                if i >= count:
                    return
                yield e
        return Dataset(gen)

    def map(self, fn):
        parent = self
        return Dataset(lambda: (fn(*e) if isinstance(e, tuple) else fn(e) for e in parent))


def _stack(elements):
    if isinstance(elements[0], tuple):
        return tuple(np.stack(parts) for parts in zip(*elements))
    return np.stack(elements)

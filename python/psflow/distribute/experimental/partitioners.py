"""TF's tf.distribute.experimental.partitioners.

Each partitioner is called as TF's: partitioner(shape, dtype) -> a list of
partitions per axis ([n, 1, 1, ...]). Given to ParameterServerStrategy,
these run inside the C++ runtime without the GIL; any other callable with
that signature works too (called with the GIL taken).
"""

import numpy as np

from psflow import _psflow

__all__ = ["Partitioner", "FixedShardsPartitioner", "MinSizePartitioner", "MaxSizePartitioner"]


def _positive_int(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError("%s must be an int, got %r" % (what, value))
    return int(value)


def _dtype_name(dtype):
    return np.dtype(dtype).name if not isinstance(dtype, str) else dtype


class Partitioner:
    """TF's Partitioner base class."""

    _native = None

    def __call__(self, shape, dtype, axis=0):
        if axis != 0:
            raise ValueError("psflow partitions axis 0 only, got axis=%r" % (axis,))
        return self._native(tuple(int(d) for d in shape), _dtype_name(dtype))


class FixedShardsPartitioner(Partitioner):
    """TF's FixedShardsPartitioner: min(num_shards, shape[0]) shards."""

    def __init__(self, num_shards):
        num_shards = _positive_int(num_shards, "FixedShardsPartitioner: num_shards")
        if num_shards < 1:
            raise ValueError("FixedShardsPartitioner: num_shards must be >= 1, got %d"
                             % num_shards)
        self._num_shards = num_shards
        self._native = _psflow._Partitioner.fixed_shards(num_shards)


class MinSizePartitioner(Partitioner):
    """TF's MinSizePartitioner: shards of at least min_shard_bytes, at most max_shards."""

    def __init__(self, min_shard_bytes=256 << 10, max_shards=1, bytes_per_string=16):
        for name, value in (("min_shard_bytes", min_shard_bytes), ("max_shards", max_shards),
                            ("bytes_per_string", bytes_per_string)):
            if _positive_int(value, "MinSizePartitioner: " + name) < 1:
                raise ValueError("Argument `%s` must be positive. Received: %r" % (name, value))
        self._native = _psflow._Partitioner.min_size(int(min_shard_bytes), int(max_shards),
                                                     int(bytes_per_string))


class MaxSizePartitioner(Partitioner):
    """TF's MaxSizePartitioner: shards of at most max_shard_bytes (capped at max_shards)."""

    def __init__(self, max_shard_bytes, max_shards=None, bytes_per_string=16):
        if _positive_int(max_shard_bytes, "MaxSizePartitioner: max_shard_bytes") < 1:
            raise ValueError("Argument `max_shard_bytes` must be positive. Received %r"
                             % (max_shard_bytes,))
        if max_shards is not None and _positive_int(
                max_shards, "MaxSizePartitioner: max_shards") < 0:
            raise ValueError("Argument `max_shards` must be non-negative. Received %r"
                             % (max_shards,))
        if _positive_int(bytes_per_string, "MaxSizePartitioner: bytes_per_string") < 1:
            raise ValueError("Argument `bytes_per_string` must be positive. Received %r"
                             % (bytes_per_string,))
        self._native = _psflow._Partitioner.max_size(
            int(max_shard_bytes), None if max_shards is None else int(max_shards),
            int(bytes_per_string))

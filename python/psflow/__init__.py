"""psflow: asynchronous parameter-server training, TF's API in Python.

    import psflow
    with psflow.LocalCluster(num_ps=2, num_workers=2) as cluster:
        strategy = psflow.distribute.ParameterServerStrategy(cluster.cluster_resolver())
        with strategy.scope():
            v = psflow.Variable(numpy.zeros(4, numpy.float32), name="v")
        coordinator = psflow.distribute.coordinator.ClusterCoordinator(strategy)
        result = coordinator.schedule("examples/increment", args=(v,))
        coordinator.join()

Values cross as numpy arrays (torch: torch.from_numpy / tensor.numpy()).
See docs/python.md for every name and what is not there yet.
"""

from psflow import _psflow
from psflow import errors
from psflow import train
from psflow import distribute
from psflow import data
from psflow import keras
from psflow import dynamic_embedding
from psflow._steps import function
from psflow._psflow import read_values
from psflow._functions import RegisteredFunction
from psflow._psflow import Variable
from psflow.local_cluster import LocalCluster


class IndexedSlices:
    """TF's tf.IndexedSlices: rows `indices` of a dense value are `values`
    (the argument of Variable.scatter_add / scatter_update)."""

    def __init__(self, values, indices, dense_shape=None):
        self.values = values
        self.indices = indices
        self.dense_shape = dense_shape

    def __repr__(self):
        return "IndexedSlices(values=%r, indices=%r)" % (self.values, self.indices)


__all__ = ["errors", "train", "distribute", "data", "keras", "dynamic_embedding", "function", "read_values", "Variable", "IndexedSlices", "LocalCluster",
           "RegisteredFunction"]

"""TF's tf.distribute.cluster_resolver: where the cluster comes from."""

from psflow import _psflow
from psflow.train import ClusterSpec

__all__ = ["ClusterResolver", "SimpleClusterResolver", "TFConfigClusterResolver"]


class ClusterResolver:
    """The cluster this process belongs to, and its own task in it.

    Subclasses give cluster_spec(), task_type, task_id and rpc_layer.
    """

    def cluster_spec(self):
        raise NotImplementedError

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        raise NotImplementedError

    task_type = None
    task_id = None
    rpc_layer = None

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        """psflow runs on CPUs: always {}."""
        return {}

    @property
    def environment(self):
        return ""


class SimpleClusterResolver(ClusterResolver):
    """TF's SimpleClusterResolver: a ClusterSpec given in code."""

    def __init__(self, cluster_spec, master="", task_type=None, task_id=None,
                 environment="", num_accelerators=None, rpc_layer=None):
        if not isinstance(cluster_spec, ClusterSpec):
            raise TypeError("SimpleClusterResolver: cluster_spec must be a "
                            "psflow.train.ClusterSpec, got %s" % type(cluster_spec).__name__)
        if task_type is not None and not isinstance(task_type, str):
            raise TypeError("SimpleClusterResolver: task_type must be a str or None, got %r"
                            % (task_type,))
        if task_id is not None and (isinstance(task_id, bool) or not isinstance(task_id, int)):
            raise TypeError("SimpleClusterResolver: task_id must be an int or None, got %r"
                            % (task_id,))
        self._cluster_spec = cluster_spec
        self._master = master
        self.task_type = task_type
        self.task_id = task_id
        self.rpc_layer = rpc_layer
        self._environment = environment

    def cluster_spec(self):
        return self._cluster_spec

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        if task_type is not None and task_id is not None:
            address = self._cluster_spec.task_address(task_type, task_id)
            layer = rpc_layer if rpc_layer is not None else self.rpc_layer
            return "%s://%s" % (layer, address) if layer else address
        return self._master

    @property
    def environment(self):
        return self._environment


class TFConfigClusterResolver(ClusterResolver):
    """TF's TFConfigClusterResolver: the cluster and task from TF_CONFIG.

    Read exactly as the C++ runtime (and TF) reads it, on every call; the
    arguments given here override TF_CONFIG's task.
    """

    def __init__(self, task_type=None, task_id=None, rpc_layer=None, environment=""):
        self._native = _psflow._TFConfigClusterResolver(task_type, task_id, rpc_layer)
        self._environment = environment

    def cluster_spec(self):
        import json
        return ClusterSpec(json.loads(self._native.cluster_spec_json()))

    @property
    def task_type(self):
        return self._native.task_type()

    @property
    def task_id(self):
        return self._native.task_id()

    @property
    def rpc_layer(self):
        return self._native.rpc_layer()

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        return self._native.master(task_type, task_id, rpc_layer)

    @property
    def environment(self):
        return self._environment

"""TF's tf.distribute names psflow has (see docs/python.md)."""

from psflow.distribute import cluster_resolver
from psflow.distribute import coordinator
from psflow.distribute import experimental
from psflow.distribute.parameter_server_strategy import ParameterServerStrategy
from psflow.distribute.values import PerReplica, ReduceOp
from psflow._psflow import Variable as ShardedVariable

__all__ = ["cluster_resolver", "coordinator", "experimental", "ParameterServerStrategy",
           "PerReplica", "ReduceOp", "ShardedVariable"]

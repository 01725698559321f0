"""TF's tf.distribute names psflow has (see docs/python.md)."""

from psflow.distribute import cluster_resolver
from psflow.distribute import coordinator
from psflow.distribute import experimental
from psflow.distribute.parameter_server_strategy import ParameterServerStrategy
from psflow.distribute.values import PerReplica, ReduceOp
from psflow._psflow import Variable as ShardedVariable



class InputContext:
    """TF's tf.distribute.InputContext, given to a Python dataset function
    that takes one: which worker builds the dataset, of how many."""

    def __init__(self, num_input_pipelines=1, input_pipeline_id=0, num_replicas_in_sync=1):
        self.num_input_pipelines = num_input_pipelines
        self.input_pipeline_id = input_pipeline_id
        self.num_replicas_in_sync = num_replicas_in_sync

    def __repr__(self):
        return "InputContext(num_input_pipelines=%d, input_pipeline_id=%d)" % (
            self.num_input_pipelines, self.input_pipeline_id)


__all__ = ["InputContext", "cluster_resolver", "coordinator", "experimental", "ParameterServerStrategy",
           "PerReplica", "ReduceOp", "ShardedVariable"]

"""TF's tf.distribute.experimental: the partitioners, and the strategy's
older name."""

from psflow.distribute.experimental import partitioners
from psflow.distribute.parameter_server_strategy import ParameterServerStrategy

__all__ = ["partitioners", "ParameterServerStrategy"]

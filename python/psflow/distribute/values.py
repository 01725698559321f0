"""TF's ReduceOp and PerReplica."""

import enum

__all__ = ["ReduceOp", "PerReplica"]


class ReduceOp(enum.Enum):
    """TF's tf.distribute.ReduceOp."""
    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_variable_aggregation(aggregation):
        name = str(getattr(aggregation, "name", aggregation)).upper()
        if name == "SUM":
            return ReduceOp.SUM
        if name == "MEAN":
            return ReduceOp.MEAN
        raise ValueError("Could not convert from `tf.VariableAggregation` %r to "
                         "`tf.distribute.ReduceOp` type" % (aggregation,))


class PerReplica:
    """One value per replica (TF's PerReplica): what strategy.reduce and
    strategy.gather combine. `values` holds the components in replica order."""

    _psflow_per_replica = True

    def __init__(self, values):
        values = tuple(values)
        if not values:
            raise ValueError("PerReplica: needs at least one value")
        self._values = values

    @property
    def values(self):
        return self._values

    def __repr__(self):
        return "PerReplica:{\n%s\n}" % ",\n".join(
            "  %d: %r" % (i, v) for i, v in enumerate(self._values))

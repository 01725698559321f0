"""TF's tf.keras names psflow has: the optimizers (applied on the ps)."""

from psflow.keras import optimizers

__all__ = ["optimizers"]

"""TF's tf.keras.optimizers under ParameterServerStrategy: the update runs
on the ps tasks beside the variables (psflow's C++ Optimizer).

Created inside strategy.scope() (its `iterations` counter is a variable on
a ps), used inside Python steps on the workers:

    with strategy.scope():
        optimizer = psflow.keras.optimizers.SGD(learning_rate=0.1)

    @psflow.function
    def step(iterator):
        ...
        optimizer.apply_gradients(zip(grads, variables))

In a step, the updates carry the closure's keys: a step rerun on another
worker after a failure applies them once, as C++ steps do.
"""

import numpy as np

from psflow import _psflow

__all__ = ["Optimizer", "SGD", "Adam", "Adagrad", "Ftrl"]

_MARK = "__psflow_optimizer__"


class Optimizer:
    """The base of psflow's optimizers: `kind` is the C++ optimizer (sgd,
    momentum, adagrad, adam, ftrl), `hyper` its hyper-parameters."""

    def __init__(self, kind, learning_rate, hyper, name, iterations=None):
        learning_rate = float(learning_rate)
        if not learning_rate >= 0 or learning_rate == float("inf"):
            raise ValueError("%s: learning_rate must be a finite number >= 0, got %r"
                             % (type(self).__name__, learning_rate))
        self._kind = kind
        self.learning_rate = learning_rate
        self._hyper = dict(hyper)
        self.name = name
        if iterations is None:
            iterations = _psflow.Variable(np.int64(0), name="%s/iterations" % name,
                                          trainable=False)
        self.iterations = iterations

    def apply_gradients(self, grads_and_vars):
        """Applies each (gradient, variable) pair on the ps: gradients are
        numpy arrays, torch tensors (detached and copied), psflow.IndexedSlices
        or None (skipped)."""
        grads, variables = [], []
        for g, v in grads_and_vars:
            if g is not None and type(g).__module__ == "torch":
                g = g.detach().cpu().numpy()
            grads.append(g)
            variables.append(v)
        _psflow._apply_gradients(self._kind, self._hyper, self.learning_rate, self.iterations,
                                 grads, variables)

    def _wire(self):
        out = {_MARK: self._kind, "cls": type(self).__name__, "name": self.name,
               "learning_rate": self.learning_rate, "iterations": self.iterations}
        out["hyper"] = dict(self._hyper)
        return out

    @staticmethod
    def _from_wire(d):
        opt = Optimizer.__new__(_CLASSES.get(d["cls"], Optimizer))
        Optimizer.__init__(opt, d[_MARK], d["learning_rate"], d["hyper"], d["name"],
                           iterations=d["iterations"])
        return opt

    def __repr__(self):
        return "<psflow %s learning_rate=%g>" % (type(self).__name__, self.learning_rate)


class SGD(Optimizer):
    """tf.keras.optimizers.SGD (momentum > 0: the ps's momentum optimizer)."""

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, name="SGD"):
        if momentum:
            super().__init__("momentum", learning_rate,
                             {"momentum": float(momentum), "nesterov": bool(nesterov)}, name)
        else:
            super().__init__("sgd", learning_rate, {}, name)


class Adam(Optimizer):
    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, name="Adam"):
        super().__init__("adam", learning_rate,
                         {"beta_1": beta_1, "beta_2": beta_2, "epsilon": epsilon}, name)


class Adagrad(Optimizer):
    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 name="Adagrad"):
        super().__init__("adagrad", learning_rate,
                         {"initial_accumulator_value": initial_accumulator_value,
                          "epsilon": epsilon}, name)


class Ftrl(Optimizer):
    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5,
                 initial_accumulator_value=0.1, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, beta=0.0, name="Ftrl"):
        super().__init__("ftrl", learning_rate,
                         {"learning_rate_power": learning_rate_power,
                          "initial_accumulator_value": initial_accumulator_value,
                          "l1_regularization_strength": l1_regularization_strength,
                          "l2_regularization_strength": l2_regularization_strength,
                          "beta": beta}, name)


_CLASSES = {c.__name__: c for c in (Optimizer, SGD, Adam, Adagrad, Ftrl)}

"""Handles of functions registered in the C++ binary."""

__all__ = ["RegisteredFunction", "function_name"]


class RegisteredFunction:
    """A function registered in the C++ binary (PSFLOW_REGISTER_FUNCTION),
    by name: what ClusterCoordinator.schedule takes besides the name itself.

        echo = psflow.RegisteredFunction("testing/echo")
        coordinator.schedule(echo, args=(1,))
    """

    def __init__(self, name):
        if not isinstance(name, str) or not name:
            raise TypeError("RegisteredFunction: name must be a non-empty str, got %r" % (name,))
        self._name = name

    @property
    def name(self):
        return self._name

    def __call__(self, *args, **kwargs):
        raise TypeError("%r runs on the workers: schedule it with "
                        "ClusterCoordinator.schedule(fn, args=...)" % (self,))

    def __eq__(self, other):
        return isinstance(other, RegisteredFunction) and other._name == self._name

    def __hash__(self):
        return hash(self._name)

    def __repr__(self):
        return "RegisteredFunction(%r)" % (self._name,)


def function_name(fn):
    if isinstance(fn, str):
        if not fn:
            raise ValueError("schedule: fn is an empty name")
        return fn
    if isinstance(fn, RegisteredFunction):
        return fn.name
    raise TypeError("schedule: fn must be a registered function's name (str) or a "
                    "psflow.RegisteredFunction, got %s (Python step functions are not "
                    "supported yet)" % type(fn).__name__)

"""Python step functions: @psflow.function, and what a worker does to run one.

Every task imports the same user module (TF's "same program on every
task"): the coordinator to schedule its functions, each worker
(`psflow server --python MODULE`) to run them. A function is known by its
qualified name, MODULE.QUALNAME; a script run as __main__ counts as the
module named after its file (examples/python/torch_mlp.py: torch_mlp), so
that workers can import it by that name.

What a scheduled call carries: (args, kwargs, captured), where captured
holds the psflow.Variables, optimizers and strategies the function reads
as globals or from its closure (on the worker they replace those names, as TF's traced
function captures them). Optimizers travel as a dict marked
"__psflow_optimizer__" and are rebuilt on the worker.
"""

import os
import sys
import threading
import traceback
import types

from psflow import _psflow

__all__ = ["function", "PythonFunction", "qualified_name"]

# How much of a traceback crosses the wire with a step's error (its end,
# where the error was raised, is kept).
MAX_TRACEBACK_CHARS = 4000

_lock = threading.Lock()
_functions = {}  # qualified name -> PythonFunction

_OPTIMIZER_MARK = "__psflow_optimizer__"


def _module_name(fn):
    module = getattr(fn, "__module__", None) or "__main__"
    if module == "__main__":
        main = sys.modules.get("__main__")
        spec = getattr(main, "__spec__", None)
        if spec is not None and spec.name:
            return spec.name
        path = getattr(main, "__file__", None)
        if path:
            return os.path.splitext(os.path.basename(path))[0]
    return module


def qualified_name(fn):
    """MODULE.QUALNAME, the name a Python function is registered under."""
    return "%s.%s" % (_module_name(fn), fn.__qualname__)


class PythonFunction:
    """A Python function registered to run on workers (what @psflow.function
    returns). Calling it runs it here, as a plain function; schedule() runs
    it on a worker."""

    def __init__(self, fn, name=None):
        if not callable(fn):
            raise TypeError("psflow.function: expected a function, got %r" % (fn,))
        self.python_function = fn
        self.name = name or qualified_name(fn)
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__name__ = getattr(fn, "__name__", self.name)
        self.__qualname__ = getattr(fn, "__qualname__", self.name)
        self.__module__ = getattr(fn, "__module__", None)
        self.__wrapped__ = fn
        with _lock:
            _functions[self.name] = self
        _psflow._register_python_function(self.name)

    def __call__(self, *args, **kwargs):
        return self.python_function(*args, **kwargs)

    def __repr__(self):
        return "<psflow.function %s>" % self.name

    # The coordinator's side.
    def _captured(self):
        """The Variables and optimizers the function reads by name: itself,
        the functions and lambdas it defines, and the plain functions of its
        own module it calls (as TF's tracing follows them); "h:NAME" marks
        such a helper, which the worker rebinds to the captured names too."""
        fn = self.python_function
        if getattr(fn, "__code__", None) is None:
            return {}
        out = {}
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if _capturable(value):
                out["c:" + name] = value
        _capture_globals(fn.__code__, fn.__globals__, out, {})
        return out

    def _pack(self, args, kwargs):
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, (tuple, list)):
            raise TypeError("schedule: args must be a tuple or list, got %s" % type(args).__name__)
        if not isinstance(kwargs, dict):
            raise TypeError("schedule: kwargs must be a dict, got %s" % type(kwargs).__name__)
        return (_to_wire(tuple(args)), _to_wire(dict(kwargs)), _to_wire(self._captured()))


def function(fn=None, *, name=None):
    """TF's @tf.function for steps scheduled on workers: registers `fn`
    under its qualified name (MODULE.QUALNAME, or `name`), so that
    ClusterCoordinator.schedule(fn, args=...) runs it on a worker that
    imported the same module (`psflow server --python MODULE`)."""
    if fn is None:
        return lambda f: PythonFunction(f, name)
    return PythonFunction(fn, name)


_STRATEGY_MARK = "__psflow_strategy__"


# Bounds the walk over helpers: deeper call chains are rare in a step, and
# a walk must stay cheap (it runs on every schedule).
_MAX_HELPER_CODES = 64


def _codes(code):
    """`code` and the code objects nested in it (its lambdas and inner
    functions), which read the same globals."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _capture_globals(code, module_globals, out, seen):
    """Adds to `out` the capturable globals `code` reads, following plain
    functions of the same module (same globals) it names; returns whether
    it (or a helper) reads any. `seen` maps the code objects walked to
    that answer (a call cycle counts as reading none)."""
    reads = False
    for c in _codes(code):
        if id(c) in seen:
            reads = reads or seen[id(c)]
            continue
        if len(seen) >= _MAX_HELPER_CODES:
            continue
        seen[id(c)] = False
        c_reads = False
        for name in c.co_names:
            value = module_globals.get(name)
            if _capturable(value):
                out["g:" + name] = value
                c_reads = True
            elif isinstance(value, PythonFunction):
                continue  # Its own step: captures for itself when scheduled.
            elif (isinstance(value, types.FunctionType)
                  and value.__globals__ is module_globals and value.__closure__ is None):
                if _capture_globals(value.__code__, module_globals, out, seen):
                    out["h:" + name] = True
                    c_reads = True
        seen[id(c)] = c_reads
        reads = reads or c_reads
    return reads


def _capturable(value):
    from psflow.distribute.parameter_server_strategy import ParameterServerStrategy
    from psflow.keras.optimizers import Optimizer
    return isinstance(value, (_psflow.Variable, Optimizer, ParameterServerStrategy))


def _to_wire(value):
    """Replaces optimizers and torch tensors by values that cross the wire."""
    from psflow.distribute.parameter_server_strategy import ParameterServerStrategy
    from psflow.keras.optimizers import Optimizer
    if isinstance(value, Optimizer):
        return value._wire()
    if isinstance(value, ParameterServerStrategy):
        return {_STRATEGY_MARK: True}
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_to_wire(v) for v in value)
    if isinstance(value, list):
        return [_to_wire(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_wire(v) for k, v in value.items()}
    if type(value).__module__ == "torch" and hasattr(value, "numpy"):
        return value.detach().cpu().numpy()
    return value


def _from_wire(value):
    from psflow.keras.optimizers import Optimizer
    if isinstance(value, dict):
        if _OPTIMIZER_MARK in value:
            return Optimizer._from_wire(value)
        if _STRATEGY_MARK in value:
            from psflow.distribute.parameter_server_strategy import _WorkerStrategy
            return _WorkerStrategy()
        return {k: _from_wire(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_from_wire(v) for v in value)
    if isinstance(value, list):
        return [_from_wire(v) for v in value]
    return value


def _with_captured(fn, captured):
    """`fn` reading the worker's Variables and optimizers for the names it
    captured on the coordinator (a copy of its globals; fresh cells)."""
    if not captured:
        return fn
    names = {k[2:]: v for k, v in captured.items() if k.startswith("g:")}
    cells = {k[2:]: v for k, v in captured.items() if k.startswith("c:")}
    helpers = [k[2:] for k in captured if k.startswith("h:")]
    glob = fn.__globals__
    if names:
        glob = dict(glob)
        glob.update(names)
        # Helpers of the module that read captured names read them from the
        # same copy.
        for name in helpers:
            helper = fn.__globals__.get(name)
            if isinstance(helper, types.FunctionType) and helper.__closure__ is None:
                rebound = types.FunctionType(helper.__code__, glob, helper.__name__,
                                             helper.__defaults__)
                rebound.__kwdefaults__ = helper.__kwdefaults__
                glob[name] = rebound
    closure = fn.__closure__
    if cells and closure:
        closure = tuple(types.CellType(cells[name]) if name in cells else cell
                        for name, cell in zip(fn.__code__.co_freevars, closure))
    out = types.FunctionType(fn.__code__, glob, fn.__name__, fn.__defaults__, closure)
    out.__kwdefaults__ = fn.__kwdefaults__
    return out


def _lookup(name):
    with _lock:
        f = _functions.get(name)
    if f is None:
        raise _psflow_errors().NotFoundError(
            None, None, "No Python function named '%s' is registered in this worker; its "
            "module must be imported by every worker (psflow server --python MODULE). "
            "Imported here: %s" % (name, ", ".join(sorted(_imported_modules())) or "none"))
    return f


def _imported_modules():
    with _lock:
        return {f.name.rsplit(".", 1)[0] for f in _functions.values()}


def _psflow_errors():
    from psflow import errors
    return errors


# The worker's side (called by the extension, with the GIL, on the thread
# that runs the closure).
def _run(name, packed):
    f = _lookup(name)
    args, kwargs, captured = _from_wire(packed)
    fn = _with_captured(f.python_function, captured)
    return _to_wire(fn(*args, **kwargs))


def _make_dataset(name, args, worker_index, num_workers):
    f = _lookup(name)
    fn = f.python_function
    args = _from_wire(args)
    if _wants_input_context(fn, args):
        from psflow.distribute import InputContext
        return fn(InputContext(num_workers, worker_index), *args)
    return fn(*args)


def _wants_input_context(fn, args):
    import inspect
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return False
    return len(params) == len(args) + 1


def _status_of(exc_type, exc, tb, where):
    """(status code, message) of an exception raised by a step: a
    psflow.errors.OpError keeps its code and message; any other exception is
    UNKNOWN (TF's code for errors of Python functions), "<Type>: <message>"
    and the traceback (its last MAX_TRACEBACK_CHARS characters)."""
    errors = _psflow_errors()
    if isinstance(exc, errors.OpError):
        return int(exc.error_code), exc.message
    if isinstance(exc, StopIteration):
        # An exhausted iterator ends a step as the end of a C++ per-worker
        # dataset does (TF's OutOfRangeError), so callers end an epoch the
        # same way whichever language the dataset is written in.
        return errors.OUT_OF_RANGE, "End of the dataset in %s (StopIteration)" % where
    text = "".join(traceback.format_exception(exc_type, exc, tb))
    if len(text) > MAX_TRACEBACK_CHARS:
        text = "...\n" + text[-MAX_TRACEBACK_CHARS:]
    head = "%s: %s" % (exc_type.__name__, exc)
    return errors.UNKNOWN, "%s (in %s)\n%s" % (head, where, text)

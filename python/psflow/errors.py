"""TF's tf.errors: the exceptions psflow raises for runtime errors.

Every error of the C++ runtime (an absl::Status) reaches Python as the
exception of its code, named as TF names it, with the runtime's message:
InvalidArgumentError for INVALID_ARGUMENT, UnavailableError for
UNAVAILABLE, and so on. All derive from OpError. Bad arguments given from
Python (a wrong type, a value out of range) raise Python's own TypeError
and ValueError instead, before anything reaches the runtime.
"""

OK = 0
CANCELLED = 1
UNKNOWN = 2
INVALID_ARGUMENT = 3
DEADLINE_EXCEEDED = 4
NOT_FOUND = 5
ALREADY_EXISTS = 6
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
FAILED_PRECONDITION = 9
ABORTED = 10
OUT_OF_RANGE = 11
UNIMPLEMENTED = 12
INTERNAL = 13
UNAVAILABLE = 14
DATA_LOSS = 15
UNAUTHENTICATED = 16


class OpError(Exception):
    """The base of psflow's runtime errors (TF's tf.errors.OpError).

    `message` is the runtime's message and `error_code` its code (one of
    this module's constants). `node_def` and `op` are always None: psflow
    has no graph.
    """

    def __init__(self, node_def, op, message, error_code=UNKNOWN):
        super().__init__(message)
        self._node_def = node_def
        self._op = op
        self._message = message
        self._error_code = error_code

    @property
    def message(self):
        return self._message

    @property
    def error_code(self):
        return self._error_code

    @property
    def node_def(self):
        return self._node_def

    @property
    def op(self):
        return self._op

    def __str__(self):
        return self._message

    def __reduce__(self):
        return (type(self), (self._node_def, self._op, self._message) +
                ((self._error_code,) if type(self) is OpError else ()))


def _subclass(name, code, doc):
    def __init__(self, node_def, op, message, *args):
        OpError.__init__(self, node_def, op, message, code)

    return type(name, (OpError,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


CancelledError = _subclass("CancelledError", CANCELLED,
                           "An operation or step was cancelled.")
UnknownError = _subclass("UnknownError", UNKNOWN, "An error of no other kind.")
InvalidArgumentError = _subclass("InvalidArgumentError", INVALID_ARGUMENT,
                                 "An operation received an invalid argument.")
DeadlineExceededError = _subclass("DeadlineExceededError", DEADLINE_EXCEEDED,
                                  "A deadline expired before the operation completed.")
NotFoundError = _subclass("NotFoundError", NOT_FOUND,
                          "A requested entity (a function, a variable, a task) was not found.")
AlreadyExistsError = _subclass("AlreadyExistsError", ALREADY_EXISTS,
                               "An entity that we attempted to create already exists.")
PermissionDeniedError = _subclass("PermissionDeniedError", PERMISSION_DENIED,
                                  "The caller does not have permission to run an operation.")
ResourceExhaustedError = _subclass("ResourceExhaustedError", RESOURCE_EXHAUSTED,
                                   "Some resource has been exhausted.")
FailedPreconditionError = _subclass("FailedPreconditionError", FAILED_PRECONDITION,
                                    "The system is not in a state to run an operation.")
AbortedError = _subclass("AbortedError", ABORTED, "An operation was aborted.")
OutOfRangeError = _subclass("OutOfRangeError", OUT_OF_RANGE,
                            "An operation iterated past the valid range (end of data).")
UnimplementedError = _subclass("UnimplementedError", UNIMPLEMENTED,
                               "An operation is not implemented or supported.")
InternalError = _subclass("InternalError", INTERNAL, "An internal invariant was broken.")
UnavailableError = _subclass("UnavailableError", UNAVAILABLE,
                             "A task or service is unavailable (e.g. a lost worker or ps).")
DataLossError = _subclass("DataLossError", DATA_LOSS, "Unrecoverable data loss or corruption.")
UnauthenticatedError = _subclass("UnauthenticatedError", UNAUTHENTICATED,
                                 "The request does not have valid authentication credentials.")

_CODE_TO_EXCEPTION_CLASS = {
    CANCELLED: CancelledError,
    UNKNOWN: UnknownError,
    INVALID_ARGUMENT: InvalidArgumentError,
    DEADLINE_EXCEEDED: DeadlineExceededError,
    NOT_FOUND: NotFoundError,
    ALREADY_EXISTS: AlreadyExistsError,
    PERMISSION_DENIED: PermissionDeniedError,
    RESOURCE_EXHAUSTED: ResourceExhaustedError,
    FAILED_PRECONDITION: FailedPreconditionError,
    ABORTED: AbortedError,
    OUT_OF_RANGE: OutOfRangeError,
    UNIMPLEMENTED: UnimplementedError,
    INTERNAL: InternalError,
    UNAVAILABLE: UnavailableError,
    DATA_LOSS: DataLossError,
    UNAUTHENTICATED: UnauthenticatedError,
}


def exception_type_from_error_code(error_code):
    """TF's errors.exception_type_from_error_code: the class of a code."""
    return _CODE_TO_EXCEPTION_CLASS.get(error_code, UnknownError)


def error_code_from_exception_type(cls):
    """TF's errors.error_code_from_exception_type: the code of a class."""
    for code, klass in _CODE_TO_EXCEPTION_CLASS.items():
        if klass is cls:
            return code
    return UNKNOWN

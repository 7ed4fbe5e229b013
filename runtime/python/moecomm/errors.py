"""Python exceptions for the runtime's result codes (moecommResult_t).

Every failed runtime call raises a subclass of `Error` carrying the result
code (`code`, an int), its name (`moecommGetErrorString`) and the runtime's
message for the call (`moecommCommGetLastError`), e.g.
`moecomm.InvalidArgumentError: invalid argument: rank 0 token 5 slot 1:
expert id 300 out of range [-1, 8)`. Collective errors are agreed by the
runtime, so every rank raises the same exception with the same message.
Arguments the Python layer rejects before calling the runtime (wrong type,
dtype, shape, contiguity) raise TypeError / ValueError naming the argument.
moecomm.compile's failures raise CompileError, which has no result code.
"""

from .native import ffi, lib


class Error(Exception):
    """A runtime call failed; `code` is its moecommResult_t, `message` the
    runtime's last-error text."""

    def __init__(self, code, message):
        self.code = code
        self.message = message
        name = ffi.string(lib.moecommGetErrorString(code)).decode()
        super().__init__(f"{name}: {message}" if message else name)


class InvalidArgumentError(Error):
    """moecommInvalidArgument: bad input (ids out of range, duplicate ids,
    E % W != 0, wrong row counts)."""


class MismatchError(Error):
    """moecommMismatch: ranks disagree (K, E, H, dtype, collective order)."""


class TransportError(Error):
    """moecommSystemError: the transport failed (MPI, OS)."""


class UnsupportedError(Error):
    """moecommUnsupported: a backend or feature that is not built or present."""


class InternalError(Error):
    """moecommInternalError: a bug in moecomm; the message says where."""


class CompileError(Exception):
    """moecomm.compile failed. `step` says which step (e.g. "cannot parse
    the module", "bad pipeline options", "moecomm-pipeline failed", "llc
    failed", "cannot write lib.so") and `messages` is the list of what the
    step reported, one string each: MLIR's diagnostics as
    `<source_name>:LINE:COL: error: ...` (with their notes), the pipeline
    parser's message, a tool's first error line, an OS error. str() is the
    step, a colon and the messages, one per line."""

    def __init__(self, step, messages):
        self.step = step
        self.messages = list(messages)
        super().__init__(f"{step}: " + "\n".join(self.messages) if self.messages else step)


_BY_CODE = {
    lib.moecommInvalidArgument: InvalidArgumentError,
    lib.moecommMismatch: MismatchError,
    lib.moecommSystemError: TransportError,
    lib.moecommUnsupported: UnsupportedError,
    lib.moecommInternalError: InternalError,
}


def check(result, comm=ffi.NULL):
    """Raises the exception of `result` unless it is moecommSuccess; the
    message is `comm`'s last error (NULL: this thread's creation error)."""
    if result != lib.moecommSuccess:
        message = ffi.string(lib.moecommCommGetLastError(comm)).decode()
        raise _BY_CODE.get(result, Error)(result, message)

"""moecomm's runtime from Python: communicators (threads, MPI), layouts,
dispatch / combine / cached_dispatch on NumPy arrays and PyTorch CPU tensors
without copies, and autograd (moecomm.autograd, imported on use: it needs
torch). docs/python.md documents the API."""

from .buffer import STRATEGIES, WIRE_DTYPES, Buffer, Handle
from .comm import Communicator, ThreadGroup, run_threads
from .errors import (Error, InternalError, InvalidArgumentError, MismatchError,
                     TransportError, UnsupportedError)
from .native import library_path

__all__ = [
    "Buffer", "Communicator", "Error", "Handle", "InternalError",
    "InvalidArgumentError", "MismatchError", "STRATEGIES", "ThreadGroup",
    "TransportError", "UnsupportedError", "WIRE_DTYPES", "library_path",
    "run_threads",
]

"""moecomm's runtime from Python: communicators (threads, MPI), layouts,
dispatch / combine / cached_dispatch on NumPy arrays and PyTorch CPU tensors
without copies, and autograd (moecomm.autograd, imported on use: it needs
torch), and compile(): a graph through moecomm-pipeline to LLVM IR or a
shared library (the compiler's C API, loaded on first use, so the runtime
half works without it). docs/python.md documents the API."""

import pkgutil

# In a build tree the generated moecomm/toolchain.py (aot.py) lies in
# <build>/python, beside this source folder on sys.path; installed, both are
# one folder.
__path__ = pkgutil.extend_path(__path__, __name__)

from .buffer import STRATEGIES, WIRE_DTYPES, Buffer, Handle
from .comm import Communicator, ThreadGroup, run_threads
from .compiler import OUTPUTS, compile
from .errors import (CompileError, Error, InternalError, InvalidArgumentError,
                     MismatchError, TransportError, UnsupportedError)
from .native import library_path

__all__ = [
    "Buffer", "Communicator", "CompileError", "Error", "Handle", "InternalError",
    "InvalidArgumentError", "MismatchError", "OUTPUTS", "STRATEGIES", "ThreadGroup",
    "TransportError", "UnsupportedError", "WIRE_DTYPES", "library_path",
    "compile", "run_threads",
]

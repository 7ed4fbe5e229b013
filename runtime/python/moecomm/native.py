"""The runtime's C ABI, loaded with cffi in ABI mode (no compiler at import).

The declarations are read from the runtime's own header, moecomm.h (and, for
communicators over MPI, moecomm_mpi.h's one function), so the Python view of
every enum, struct and function is the C one by construction. Lookup of the
shared library, first match wins:

1. the environment variable MOECOMM_RUNTIME_LIBRARY (a path to the .so);
2. libmoecomm_runtime.so inside the package folder;
3. the install prefix's library folder (this package installs to
   <prefix>/<libdir>/python3/dist-packages/moecomm, the library to
   <prefix>/<libdir>).

The header is found the same way: MOECOMM_INCLUDE_DIR, then the nearest
include/moecomm/moecomm.h above the package (<prefix>/include installed,
runtime/include in the source tree). A missing
library or header raises ImportError naming every place that was tried.
"""

import os
import re
from pathlib import Path

import cffi

# The package folder; compile()'s library lookup (capi.py) starts here too.
PACKAGE_DIR = Path(__file__).resolve().parent
_LIBRARY_NAME = "libmoecomm_runtime.so"


def find_file(what, env_var, env_to_path, candidates):
    """The file named by the environment variable `env_var` (through
    env_to_path), else the first of `candidates` that exists. ImportError
    saying `what` was not found and where it looked."""
    env = os.environ.get(env_var)
    if env:
        path = env_to_path(Path(env))
        if path.exists():
            return path
        raise ImportError(f"moecomm: {env_var}={env}: {path} does not exist")
    for path in candidates:
        if path.exists():
            return path
    tried = ", ".join(str(p) for p in candidates)
    raise ImportError(
        f"moecomm: {what} was not found (set {env_var}; tried {tried})"
    )


def _library_path():
    return find_file(
        "the runtime's shared library",
        "MOECOMM_RUNTIME_LIBRARY",
        lambda path: path,
        [PACKAGE_DIR / _LIBRARY_NAME, PACKAGE_DIR.parents[2] / _LIBRARY_NAME],
    )


def _header_path():
    # The nearest include/ above the package: <prefix>/include when installed
    # (<prefix>/<libdir>/python3/dist-packages/moecomm), runtime/include in
    # the source tree (runtime/python/moecomm).
    header = Path("moecomm") / "moecomm.h"
    return find_file(
        "the runtime's header moecomm/moecomm.h",
        "MOECOMM_INCLUDE_DIR",
        lambda path: path / header,
        [folder / "include" / header for folder in PACKAGE_DIR.parents],
    )


def _declarations(header_text):
    """The C declarations of moecomm.h in the form cffi's cdef accepts: the
    part inside `extern "C"`, without comments and preprocessor lines other
    than integer #defines (cffi takes `#define NAME 128`, not expressions)."""
    body = header_text.split('extern "C" {', 1)[1].rsplit("#ifdef __cplusplus", 1)[0]
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    body = re.sub(r"//[^\n]*", "", body)
    body = re.sub(r"^\s*#define\s+\w+\s+\(.*$", "", body, flags=re.M)
    return re.sub(r"^\s*#(?!define\s+\w+\s+\d+\s*$).*$", "", body, flags=re.M)


ffi = cffi.FFI()
ffi.cdef(_declarations(_header_path().read_text()))
# moecomm_mpi.h's function takes an MPI_Comm, which Open MPI defines as a
# pointer; mpi.py checks that mpi4py's MPI_Comm has a pointer's size.
ffi.cdef(
    "typedef void *MPI_Comm;"
    "moecommResult_t moecommCommInitMpi(moecommComm_t *comm, MPI_Comm mpiComm,"
    " int ranksPerNode);"
)
library_path = _library_path()
lib = ffi.dlopen(str(library_path))

"""Communicators over MPI from mpi4py (moecomm_mpi.h's moecommCommInitMpi).

MPI must run at MPI_THREAD_MULTIPLE: the communicator's progress thread
calls MPI (docs/runtime.md, Threading). mpi4py initializes MPI at that level
by default (mpi4py.rc.thread_level = "multiple"); otherwise the runtime
raises UnsupportedError naming MPI_Init_thread.
"""

from .comm import Communicator
from .errors import UnsupportedError, check
from .native import ffi, lib


def from_mpi4py(mpi_comm, ranks_per_node):
    """Collective over `mpi_comm` (an mpi4py.MPI.Comm): a communicator of
    backend "mpi" whose ranks are mpi_comm's, `ranks_per_node` consecutive
    ranks per node (the same on every rank). Errors: InvalidArgumentError
    (ranks_per_node does not divide the size), MismatchError (ranks pass
    different ranks_per_node), UnsupportedError (the runtime was built
    without MPI, or the thread level is below MPI_THREAD_MULTIPLE),
    TransportError (MPI failed). Close it before MPI is finalized."""
    from mpi4py import MPI

    # Open MPI's MPI_Comm is a pointer; the cdef (native.py) declares it so.
    if MPI._sizeof(MPI.Comm) != ffi.sizeof("MPI_Comm"):
        raise UnsupportedError(lib.moecommUnsupported,
                               "mpi4py's MPI_Comm is not a pointer (not Open MPI)")
    try:
        init = lib.moecommCommInitMpi
    except AttributeError:
        raise UnsupportedError(lib.moecommUnsupported,
                               "the runtime was built without the mpi backend") from None
    handle = ffi.cast("MPI_Comm *", MPI._addressof(mpi_comm))[0]
    comm = ffi.new("moecommComm_t *")
    check(init(comm, handle, ranks_per_node))
    return Communicator(comm[0])

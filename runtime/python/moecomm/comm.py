"""Communicators: the runtime's moecommComm_t.

Backends: `threads` (a group of W ranks inside one process, one Python
thread per rank: ThreadGroup, run_threads) and `mpi` (one process per rank,
from an mpi4py communicator: moecomm.mpi.from_mpi4py). The runtime's calls
release the GIL (cffi), so the ranks' threads run their collectives
concurrently. Collective calls must be made by every rank in the same order
(docs/runtime.md); an exception raised by the Python layer on one rank only
(a bad argument) leaves the other ranks waiting in their next collective, so
check inputs the same way on every rank.
"""

import threading

from .errors import check
from .native import ffi, lib

_BACKENDS = {
    lib.moecommBackendThreads: "threads",
    lib.moecommBackendMpi: "mpi",
    lib.moecommBackendNccl: "nccl",
}


class _ClosedOnExit:
    """A context manager whose exit calls close()."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Communicator(_ClosedOnExit):
    """One rank's communicator. `rank`, `size` (W), `ranks_per_node` (G) and
    `backend` ("threads" or "mpi") are fixed at creation. close() destroys it
    (local); use it as a context manager to close it on exit."""

    def __init__(self, handle):
        self._handle = handle
        self.rank = self._query("int *", lib.moecommCommRank)
        self.size = self._query("int *", lib.moecommCommSize)
        self.ranks_per_node = self._query("int *", lib.moecommCommRanksPerNode)
        self.backend = _BACKENDS[self._query("moecommBackend_t *", lib.moecommCommBackend)]

    def _query(self, ctype, function):
        value = ffi.new(ctype)
        self.check(function(self._handle, value))
        return value[0]

    @property
    def handle(self):
        """The moecommComm_t (a cffi pointer); ValueError once closed."""
        if self._handle is None:
            raise ValueError("the communicator is closed")
        return self._handle

    def check(self, result):
        """Raises the runtime's error for `result` with this communicator's message."""
        check(result, self.handle)

    def close(self):
        if self._handle is not None:
            handle, self._handle = self._handle, None
            check(lib.moecommCommDestroy(handle))


class ThreadGroup(_ClosedOnExit):
    """The shared state of `nranks` threads acting as ranks, `ranks_per_node`
    per node (moecommThreadGroupCreate; InvalidArgumentError when nranks < 1,
    ranks_per_node < 1 or nranks % ranks_per_node != 0). Each rank's thread
    calls init_rank(rank) once; close() after every communicator is closed."""

    def __init__(self, nranks, ranks_per_node):
        group = ffi.new("moecommThreadGroup_t *")
        check(lib.moecommThreadGroupCreate(nranks, ranks_per_node, group))
        self._group = group[0]
        self.nranks = nranks
        self.ranks_per_node = ranks_per_node

    def init_rank(self, rank):
        """Collective over the group's threads: this thread's communicator."""
        comm = ffi.new("moecommComm_t *")
        check(lib.moecommCommInitThreadRank(comm, self._group, rank))
        return Communicator(comm[0])

    def close(self):
        if self._group is not None:
            group, self._group = self._group, None
            check(lib.moecommThreadGroupDestroy(group))


def run_threads(nranks, ranks_per_node, fn):
    """Runs fn(comm) on `nranks` threads, one rank each, of a new thread
    group; returns the list of results by rank. If any rank raised, re-raises
    the exception of the lowest such rank after every thread finished."""
    results = [None] * nranks
    errors = [None] * nranks

    def rank_main(group, rank):
        try:
            with group.init_rank(rank) as comm:
                results[rank] = fn(comm)
        except BaseException as error:  # re-raised on the caller's thread
            errors[rank] = error

    with ThreadGroup(nranks, ranks_per_node) as group:
        threads = [threading.Thread(target=rank_main, args=(group, r)) for r in range(nranks)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    for error in errors:
        if error is not None:
            raise error
    return results

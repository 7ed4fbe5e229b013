/*===- moecomm_mpi.h - Communicators over Open MPI (C99) ------------------===*
 *
 * Available when moecomm is built with MOECOMM_ENABLE_MPI (the CMake target
 * moecomm_runtime then defines MOECOMM_HAVE_MPI for its users).
 *===----------------------------------------------------------------------===*/
#ifndef MOECOMM_MOECOMM_MPI_H
#define MOECOMM_MOECOMM_MPI_H

#include <mpi.h>

#include "moecomm/moecomm.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Collective over `mpiComm`: creates a communicator of backend `mpi` whose
 *  ranks are mpiComm's ranks, `ranksPerNode` consecutive ranks per node (the
 *  same on every rank). MPI must be initialized with MPI_THREAD_MULTIPLE
 *  (MPI_Init_thread): the communicator's progress thread calls MPI while the
 *  application's threads run (docs/runtime.md, Threading). The communicator
 *  works on duplicates of mpiComm (MPI_Comm_dup, then MPI_Comm_split into
 *  the intra-node and inter-node groups) with MPI_ERRORS_RETURN; destroy it
 *  before MPI_Finalize. Errors: InvalidArgument when MPI is not initialized,
 *  mpiComm is MPI_COMM_NULL or ranksPerNode does not divide the size;
 *  Unsupported when MPI provides a thread level below MPI_THREAD_MULTIPLE
 *  (the message names MPI_Init_thread);
 *  Mismatch when ranks pass different ranksPerNode; SystemError on MPI
 *  failures. */
moecommResult_t moecommCommInitMpi(moecommComm_t *comm, MPI_Comm mpiComm,
                                   int ranksPerNode);

#ifdef __cplusplus
}
#endif

#endif /* MOECOMM_MOECOMM_MPI_H */

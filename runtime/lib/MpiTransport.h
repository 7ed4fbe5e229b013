//===- MpiTransport.h - One process per rank over Open MPI ------*- C++ -*-===//
#ifndef MOECOMM_LIB_MPITRANSPORT_H
#define MOECOMM_LIB_MPITRANSPORT_H

#include "Transport.h"

#include <mpi.h>

namespace moecomm {

/// Creates the transport over a duplicate of `comm` (collective over
/// `comm`): MPI_Comm_split gives the intra-node (color node, key rank) and
/// inter-node (color local rank, key rank) groups. Errors are returned, not
/// raised (MPI_ERRORS_RETURN on the duplicates).
Status createMpiTransport(MPI_Comm comm, int ranksPerNode,
                          std::unique_ptr<Transport> &out);

} // namespace moecomm

#endif // MOECOMM_LIB_MPITRANSPORT_H

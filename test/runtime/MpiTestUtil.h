//===- MpiTestUtil.h - What the MPI test programs share -------------------===//
//
// The MPI backend's tests (MpiTest.cpp) and the nccl backend's multi-GPU
// tests (test/gpu/NcclMpiTest.cpp) are both one process per rank under
// mpirun: they check a rank's run the same way (with what needs every rank
// summed over MPI) and report one exit status for the whole world.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TEST_RUNTIME_MPITESTUTIL_H
#define MOECOMM_TEST_RUNTIME_MPITESTUTIL_H

#include "TestUtil.h"

#include <mpi.h>

namespace moecomm {
namespace test {

/// This process's rank in MPI_COMM_WORLD.
int worldRank();
/// The number of processes in MPI_COMM_WORLD.
int worldSize();

/// checkRank() and checkLowerBound() of this rank's `run`, and adjointness
/// with the inner products summed over `mpiComm` (collective: every rank of
/// `mpiComm` calls it).
void checkRankOnMpi(const Expected &exp, moecommStrategy_t requested, int rank,
                    const RankRun &run, MPI_Comm mpiComm);

/// RUN_ALL_TESTS() on every rank of MPI_COMM_WORLD, ranks other than 0
/// printing only their failures (prefixed with the rank); the worst exit
/// status of all ranks, so that one failing rank fails the run.
int runAllTestsOnEveryRank();

} // namespace test
} // namespace moecomm

#endif // MOECOMM_TEST_RUNTIME_MPITESTUTIL_H

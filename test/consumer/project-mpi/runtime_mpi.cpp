// Uses the installed runtime's MPI entry point (moecomm_mpi.h, target
// MoEComm::moecomm_mpi) and the oracle (moecomm/Reference/Reference.h, target
// MoEComm::moecomm_reference): a 1-rank MPI communicator, and the oracle's
// dispatch layout of a two-token problem. Prints one summary line.
#include "moecomm/Reference/Reference.h"
#include "moecomm/moecomm_mpi.h"

#include <cstdio>

int main(int argc, char **argv) {
  // moecomm's mpi backend needs MPI_THREAD_MULTIPLE (docs/runtime.md).
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  moecommComm_t comm = nullptr;
  moecommResult_t rc = moecommCommInitMpi(&comm, MPI_COMM_WORLD, 1);
  int size = 0;
  if (rc == moecommSuccess)
    rc = moecommCommSize(comm, &size);
  if (comm)
    moecommCommDestroy(comm);
  MPI_Finalize();

  moecomm::ref::Problem p;
  p.numExperts = 4;
  p.topk = 2;
  p.hidden = 8;
  p.routing = {{2, {0, 3, 1, -1}, {}}};
  std::string invalid = moecomm::ref::validate(p);
  size_t rows = invalid.empty() ? moecomm::ref::layout(p)[0].rows.size() : 0;
  std::printf("mpi comm size=%d (%s) reference rows=%zu\n", size,
              moecommGetErrorString(rc), rows);
  return rc == moecommSuccess && size == 1 && rows == 3 ? 0 : 1;
}

//===- MpiThreadLevelTest.cpp - The mpi backend's thread level ------------===//
//
// MPI initialized with plain MPI_Init (MPI_THREAD_SINGLE with Open MPI):
// creating a communicator is refused with moecommUnsupported and a message
// naming the level needed and MPI_Init_thread, since the communicator's
// progress thread calls MPI while the application runs (docs/runtime.md).
// Launched by ctest as `mpirun -np 1`.
//
//===----------------------------------------------------------------------===//
#include "moecomm/moecomm_mpi.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

namespace {

TEST(MpiThreadLevel, BelowMultipleIsRefused) {
  int provided = MPI_THREAD_MULTIPLE;
  MPI_Query_thread(&provided);
  // Some MPI setups (OMPI_MPI_THREAD_LEVEL) give MULTIPLE even to
  // MPI_Init: then there is nothing to refuse here.
  if (provided >= MPI_THREAD_MULTIPLE)
    GTEST_SKIP() << "MPI_Init gave MPI_THREAD_MULTIPLE";
  moecommComm_t comm = nullptr;
  EXPECT_EQ(moecommCommInitMpi(&comm, MPI_COMM_WORLD, 1), moecommUnsupported);
  EXPECT_EQ(comm, nullptr);
  const std::string message = moecommCommGetLastError(nullptr);
  EXPECT_NE(message.find("MPI_THREAD_MULTIPLE"), std::string::npos) << message;
  EXPECT_NE(message.find("MPI_Init_thread"), std::string::npos) << message;
}

} // namespace

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv); // deliberately not MPI_Init_thread
  ::testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS();
  MPI_Finalize();
  return failed;
}

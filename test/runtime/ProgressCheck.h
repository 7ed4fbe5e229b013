//===- ProgressCheck.h - Requests that complete while the caller computes -===//
//
// The progress thread's tests (ProgressTest.cpp on the threads backend,
// MpiTest.cpp on mpi) share these: a problem large enough that its exchanges
// need many chunks and rendezvous messages, a check that a started dispatch
// and combine complete with the caller out of the runtime (it only reads the
// trace, which moves nothing), and the progress threads' CPU time for the
// bounds on idle waste.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TEST_RUNTIME_PROGRESSCHECK_H
#define MOECOMM_TEST_RUNTIME_PROGRESSCHECK_H

#include "TestUtil.h"

namespace moecomm {
namespace test {

/// W ranks, G per node, 8 experts, top-2, bf16 rows of 2048 elements
/// (4 KiB), ~768 tokens per rank: some 1.5 MiB per peer per stage, so every
/// block is cut into several 256 KiB chunks (PipelinedOp.cpp), each above
/// Open MPI's eager limit (a rendezvous message).
CaseSpec largeExchangeSpec(int W, int G);

/// A dispatch of `exp` on `rank` with `strategy`, started on construction
/// (collective): the layout, its info, the rows and the request. `result`
/// is the first failure (then later members are empty); the destructor
/// destroys the layout (wait for the request first).
struct StartedDispatch {
  StartedDispatch(moecommComm_t comm, const Expected &exp, int rank,
                  moecommStrategy_t strategy);
  ~StartedDispatch();
  StartedDispatch(const StartedDispatch &) = delete;
  StartedDispatch &operator=(const StartedDispatch &) = delete;

  moecommResult_t result = moecommSuccess;
  moecommLayout_t layout = nullptr;
  moecommLayoutInfo_t info{};
  Rows x, recv;
  moecommRequest_t request = nullptr;
};

/// Collective (every rank of `comm` calls it). With the trace on, starts a
/// hierarchical dispatch of `exp` on `rank` and then, without any runtime
/// call but moecommCommGetTrace (which only reads), sleeps in 5 ms steps
/// until the trace holds the dispatch's whole-call span (recorded when the
/// request completed), at most `limitSec` seconds; then waits and compares
/// recv bitwise with the oracle. The same for a weighted combine of y,
/// compared bitwise with a blocking combine (the reference sums in another
/// order; the blocking combine is checked against it by runRank's tests).
/// gtest failures: a collective that did not complete unattended, a call
/// that failed, a result that differs.
void checkCompletesUnattended(moecommComm_t comm, const Expected &exp,
                              int rank, double limitSec = 60);

/// The CPU time (user + system, seconds) the progress threads of this
/// process have used so far: the threads named kProgressThreadName, read
/// from /proc/self/task (clock ticks, 10 ms here). Only theirs: the rank
/// threads, MPI's own threads or a busy machine do not count.
double progressThreadCpuSeconds();

} // namespace test
} // namespace moecomm

#endif // MOECOMM_TEST_RUNTIME_PROGRESSCHECK_H

//===- ProgressTest.cpp - The progress thread on the threads backend ------===//
//
// A started request completes while its caller stays out of the runtime;
// an idle communicator costs no CPU and a stalled exchange a bounded share
// of it; a communicator is destroyed (its thread joined) with or without
// requests started, and not while one is outstanding. The same on mpi:
// MpiTest.cpp. CPU bounds are on waste (a thread that spun would use the
// whole second), never on the speed of work.
//
//===----------------------------------------------------------------------===//
#include "ProgressCheck.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

using namespace moecomm;
using namespace moecomm::test;

namespace {

TEST(Progress, RequestCompletesWithoutTheCaller) {
  const Expected exp = computeExpected(makeProblem(largeExchangeSpec(4, 2)));
  runOnThreads(4, 2, [&](moecommComm_t comm, int rank) {
    checkCompletesUnattended(comm, exp, rank);
  });
}

TEST(Progress, IdleCommunicatorUsesNoCpu) {
  double used = -1;
  runOnThreads(2, 1, [&](moecommComm_t comm, int rank) {
    EXPECT_EQ(moecommBarrier(comm), moecommSuccess);
    const double before = rank == 0 ? progressThreadCpuSeconds() : 0;
    std::this_thread::sleep_for(std::chrono::seconds(1));
    if (rank == 0)
      used = progressThreadCpuSeconds() - before;
    EXPECT_EQ(moecommBarrier(comm), moecommSuccess);
  });
  EXPECT_GE(used, 0);
  EXPECT_LT(used, 0.05) << "progress threads' CPU seconds in 1 s with two idle communicators";
}

TEST(Progress, StalledExchangeCostsBoundedCpu) {
  // Rank 1 sits in a blocking collective (holding its communicator, so its
  // progress thread cannot serve the exchange) while rank 0 sleeps: rank
  // 0's progress thread polls a request that cannot move.
  const Expected exp = computeExpected(makeProblem(largeExchangeSpec(2, 1)));
  double used = -1;
  runOnThreads(2, 1, [&](moecommComm_t comm, int rank) {
    StartedDispatch d(comm, exp, rank, moecommFlat);
    ASSERT_EQ(d.result, moecommSuccess) << moecommCommGetLastError(comm);
    if (rank == 0) {
      const double before = progressThreadCpuSeconds();
      std::this_thread::sleep_for(std::chrono::seconds(1));
      used = progressThreadCpuSeconds() - before;
    }
    EXPECT_EQ(moecommBarrier(comm), moecommSuccess);
    EXPECT_EQ(moecommWait(d.request), moecommSuccess);
    EXPECT_TRUE(sameBits(d.recv.values(), exp.dispatch[rank]));
  });
  EXPECT_GE(used, 0);
  EXPECT_LT(used, 0.25) << "progress threads' CPU seconds in 1 s polling a stalled exchange";
}

TEST(Progress, DestroyJoinsTheThread) {
  const Expected exp = computeExpected(makeProblem(
      CaseSpec{2, 1, 4, 2, 64, moecommFloat32, moecommFloat32,
               RoutingKind::Uniform, 16, 0, true, 3}));
  moecommThreadGroup_t group = nullptr;
  ASSERT_EQ(moecommThreadGroupCreate(2, 1, &group), moecommSuccess);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 2; ++rank)
    ranks.emplace_back([&, rank] {
      moecommComm_t comm = nullptr;
      ASSERT_EQ(moecommCommInitThreadRank(&comm, group, rank), moecommSuccess);
      {
        StartedDispatch d(comm, exp, rank, moecommFlat);
        EXPECT_EQ(d.result, moecommSuccess) << moecommCommGetLastError(comm);
        // Refused while the request is not waited, even once the progress
        // thread has completed it.
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        EXPECT_EQ(moecommCommDestroy(comm), moecommInvalidArgument);
        EXPECT_NE(std::strstr(moecommCommGetLastError(nullptr),
                              "1 requests are still outstanding"),
                  nullptr)
            << moecommCommGetLastError(nullptr);
        EXPECT_EQ(moecommWait(d.request), moecommSuccess);
        EXPECT_TRUE(sameBits(d.recv.values(), exp.dispatch[rank]));
      }
      EXPECT_EQ(moecommCommDestroy(comm), moecommSuccess);
    });
  for (std::thread &t : ranks)
    t.join();
  EXPECT_EQ(moecommThreadGroupDestroy(group), moecommSuccess);
  // Communicators that never started anything, made and destroyed again.
  for (int i = 0; i < 3; ++i)
    runOnThreads(2, 1, [](moecommComm_t comm, int) {
      int size = 0;
      EXPECT_EQ(moecommCommSize(comm, &size), moecommSuccess);
      EXPECT_EQ(size, 2);
    });
}

} // namespace

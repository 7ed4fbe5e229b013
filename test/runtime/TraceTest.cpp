//===- TraceTest.cpp - moecommCommSetTrace / moecommCommGetTrace ----------===//
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

using namespace moecomm;
using namespace moecomm::test;

namespace {

/// A hierarchical case with two stages per direction on 4 ranks, 2 per
/// node, FP8 on the dispatch wire (so the first pack quantizes).
CaseSpec traceCase() {
  return CaseSpec{4, 2, 8, 2, 16, moecommBfloat16, moecommFloat8E4M3,
                  RoutingKind::Uniform, 6};
}

/// One layout, a blocking dispatch, a started combine and its wait.
void runOnce(moecommComm_t comm, const Expected &e, int r) {
  const ref::Problem &p = e.problem;
  moecommLayoutDesc_t d = descFor(p, r, moecommHierarchical);
  moecommLayout_t l = nullptr;
  ASSERT_EQ(moecommLayoutCreate(comm, &d, &l), moecommSuccess);
  moecommLayoutInfo_t info;
  ASSERT_EQ(moecommLayoutGetInfo(l, &info), moecommSuccess);
  Rows x = Rows::fromValues(e.x[r], p.hidden, p.dataType);
  Rows recv(info.recvRows, p.hidden, p.dataType);
  EXPECT_EQ(
      moecommDispatch(comm, l, x.view(), p.wireType, recv.view(), nullptr),
      moecommSuccess);
  Rows out(p.routing[r].numTokens, p.hidden, p.dataType);
  moecommRequest_t req = nullptr;
  EXPECT_EQ(
      moecommCombineStart(comm, l, recv.view(), 1, out.view(), nullptr, &req),
      moecommSuccess);
  EXPECT_EQ(moecommWait(req), moecommSuccess);
  moecommLayoutDestroy(l);
}

std::vector<moecommTraceEvent_t> traceOf(moecommComm_t comm) {
  int64_t n = -1;
  EXPECT_EQ(moecommCommGetTrace(comm, nullptr, 0, &n), moecommSuccess);
  std::vector<moecommTraceEvent_t> ev(std::max<int64_t>(n, 0));
  int64_t again = -1;
  EXPECT_EQ(moecommCommGetTrace(comm, ev.data(), n, &again), moecommSuccess);
  EXPECT_EQ(again, n);
  return ev;
}

/// Runs runOnce with the trace on, on every rank, and hands each rank's
/// communicator and events to `check`.
template <typename Check> void onTracedRun(Check check) {
  Expected e = computeExpected(makeProblem(traceCase()));
  runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
    ASSERT_EQ(moecommCommSetTrace(comm, 1), moecommSuccess);
    runOnce(comm, e, r);
    std::vector<moecommTraceEvent_t> ev = traceOf(comm);
    ASSERT_GT(ev.size(), 2u);
    check(comm, ev);
  });
}

TEST(Trace, OffRecordsNothing) {
  Expected e = computeExpected(makeProblem(traceCase()));
  runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
    runOnce(comm, e, r);
    EXPECT_TRUE(traceOf(comm).empty());
    // Switching it on clears, switching it off clears too.
    EXPECT_EQ(moecommCommSetTrace(comm, 1), moecommSuccess);
    runOnce(comm, e, r);
    EXPECT_FALSE(traceOf(comm).empty());
    EXPECT_EQ(moecommCommSetTrace(comm, 0), moecommSuccess);
    EXPECT_TRUE(traceOf(comm).empty());
    runOnce(comm, e, r);
    EXPECT_TRUE(traceOf(comm).empty());
  });
}

TEST(Trace, OnRecordsEveryStepInOrder) {
  onTracedRun([](moecommComm_t comm,
                 const std::vector<moecommTraceEvent_t> &ev) {
    std::multiset<std::pair<int, int>> kinds; // (kind, direction)
    std::set<std::pair<int, int>> exchanges;  // (direction, stage)
    int64_t exchanged[3] = {0, 0, 0}, whole[3] = {0, 0, 0}; // by direction
    for (size_t i = 0; i < ev.size(); ++i) {
      EXPECT_GE(ev[i].endSec, ev[i].startSec) << "event " << i;
      // Recorded in the order they end.
      if (i > 0)
        EXPECT_GE(ev[i].endSec, ev[i - 1].endSec) << "event " << i;
      kinds.insert({ev[i].kind, ev[i].direction});
      if (ev[i].kind == moecommTraceKindExchange) {
        exchanges.insert({ev[i].direction, ev[i].stage});
        exchanged[ev[i].direction] += ev[i].bytes;
      }
      if (ev[i].kind == moecommTraceKindDispatch ||
          ev[i].kind == moecommTraceKindCombine)
        whole[ev[i].direction] = ev[i].bytes;
    }
    // A whole dispatch / combine sent what its stages sent.
    EXPECT_EQ(whole[moecommTraceDirDispatch],
              exchanged[moecommTraceDirDispatch]);
    EXPECT_EQ(whole[moecommTraceDirCombine], exchanged[moecommTraceDirCombine]);
    EXPECT_EQ(ev.front().kind, moecommTraceKindLayout);
    EXPECT_EQ(kinds.count({moecommTraceKindLayout, moecommTraceDirNone}), 1u);
    EXPECT_EQ(kinds.count({moecommTraceKindDispatch, moecommTraceDirDispatch}),
              1u);
    EXPECT_EQ(kinds.count({moecommTraceKindCombine, moecommTraceDirCombine}),
              1u);
    EXPECT_EQ(kinds.count({moecommTraceKindWait, moecommTraceDirNone}), 1u);
    EXPECT_EQ(kinds.count({moecommTraceKindUnpack, moecommTraceDirDispatch}),
              1u);
    EXPECT_EQ(kinds.count({moecommTraceKindUnpack, moecommTraceDirCombine}),
              1u);
    // Hierarchical on 2 x 2: inter-node then intra-node (dispatch), and back.
    std::set<std::pair<int, int>> want = {{moecommTraceDirDispatch, 0},
                                          {moecommTraceDirDispatch, 1},
                                          {moecommTraceDirCombine, 0},
                                          {moecommTraceDirCombine, 1}};
    EXPECT_EQ(exchanges, want);
    // One call span per call that moves rows or waits: the layout
    // creation, the dispatch, the combine's start and the wait.
    EXPECT_EQ(kinds.count({moecommTraceKindCall, moecommTraceDirNone}), 4u);
    // The combine, the wait that finished it and the wait's call end last.
    ASSERT_GE(ev.size(), 3u);
    EXPECT_EQ(ev.back().kind, moecommTraceKindCall);
    EXPECT_EQ(ev[ev.size() - 2].kind, moecommTraceKindWait);
    EXPECT_EQ(ev[ev.size() - 3].kind, moecommTraceKindCombine);
    EXPECT_LE(ev.back().startSec, ev[ev.size() - 2].startSec);
    int64_t dropped = -1;
    EXPECT_EQ(moecommCommGetTraceDropped(comm, &dropped), moecommSuccess);
    EXPECT_EQ(dropped, 0);
  });
}

TEST(Trace, SmallCapacityReportsTheFullCount) {
  onTracedRun([](moecommComm_t comm,
                 const std::vector<moecommTraceEvent_t> &all) {
    moecommTraceEvent_t two[2];
    int64_t n = -1;
    EXPECT_EQ(moecommCommGetTrace(comm, two, 2, &n), moecommSuccess);
    EXPECT_EQ(n, (int64_t)all.size());
    EXPECT_EQ(two[1].kind, all[1].kind);
    EXPECT_EQ(two[1].startSec, all[1].startSec);
    EXPECT_EQ(moecommCommGetTrace(comm, two, -1, &n), moecommInvalidArgument);
    EXPECT_EQ(moecommCommGetTrace(comm, nullptr, 1, &n),
              moecommInvalidArgument);
    EXPECT_EQ(moecommCommGetTrace(comm, two, 2, nullptr),
              moecommInvalidArgument);
    EXPECT_STREQ(moecommCommGetLastError(comm), "count is NULL");
  });
  EXPECT_STREQ(moecommTraceKindName(moecommTraceKindExchange), "exchange");
  EXPECT_STREQ(moecommTraceKindName((moecommTraceKind_t)99), "unknown");
}

TEST(Trace, ASpanBegunBeforeARestartIsNotRecorded) {
  // An all_to_all posted while tracing, then the trace switched off and on
  // again before its wait: the new recording holds the wait (and its call),
  // not the all_to_all that began before it.
  runOnThreads(2, 1, [&](moecommComm_t comm, int) {
    float send[2 * 4] = {}, recv[2 * 4] = {};
    const int64_t counts[2] = {1, 1};
    moecommRows_t s{send, nullptr, 2, 4, moecommFloat32};
    moecommRows_t r{recv, nullptr, 2, 4, moecommFloat32};
    ASSERT_EQ(moecommCommSetTrace(comm, 1), moecommSuccess);
    moecommRequest_t req = nullptr;
    ASSERT_EQ(moecommAllToAllStart(comm, &s, counts, &r, counts, nullptr, &req),
              moecommSuccess);
    ASSERT_EQ(moecommCommSetTrace(comm, 0), moecommSuccess);
    ASSERT_EQ(moecommCommSetTrace(comm, 1), moecommSuccess);
    ASSERT_EQ(moecommWait(req), moecommSuccess);
    std::vector<moecommTraceEvent_t> ev = traceOf(comm);
    ASSERT_EQ(ev.size(), 2u);
    EXPECT_EQ(ev[0].kind, moecommTraceKindWait);
    EXPECT_EQ(ev[1].kind, moecommTraceKindCall);
  });
}

} // namespace

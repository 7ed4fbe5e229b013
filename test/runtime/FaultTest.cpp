//===- FaultTest.cpp - DESIGN.md §6 fault kinds on the threads backend ----===//
//
// Every bad input is an error on every rank, with the same code and a
// message naming rank / token / slot; nothing hangs; the communicator stays
// usable afterwards.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <mutex>

using namespace moecomm;
using namespace moecomm::test;

namespace {

struct Outcome {
  moecommResult_t result = moecommSuccess;
  std::string message;
};

/// Every rank must have returned `code` with exactly `message`.
void expectAll(const std::vector<Outcome> &o, moecommResult_t code,
               const std::string &message) {
  for (size_t r = 0; r < o.size(); ++r) {
    EXPECT_EQ(o[r].result, code) << "rank " << r << ": " << o[r].message;
    EXPECT_EQ(o[r].message, message) << "rank " << r;
  }
}

Outcome outcome(moecommComm_t comm, moecommResult_t r) {
  return {r, r == moecommSuccess ? "" : moecommCommGetLastError(comm)};
}

/// Every rank of 4 (2 per node) creates a layout of `p` with `strategy`;
/// every rank must fail with `code` and exactly `message`.
void expectLayoutFails(const ref::Problem &p, moecommStrategy_t strategy,
                       moecommResult_t code, const std::string &message) {
  std::vector<Outcome> o(4);
  runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
    moecommLayoutDesc_t d = descFor(p, r, strategy);
    moecommLayout_t l = nullptr;
    o[r] = outcome(comm, moecommLayoutCreate(comm, &d, &l));
  });
  expectAll(o, code, message);
}

ref::Problem smallProblem(int W, int64_t E, int K, int64_t T) {
  CaseSpec s;
  s.W = W;
  s.G = W >= 2 ? 2 : 1;
  s.E = E;
  s.K = K;
  s.T = T;
  s.H = 8;
  s.data = moecommFloat32;
  s.wire = moecommFloat32;
  s.routing = RoutingKind::Uniform;
  return makeProblem(s);
}

/// A correct layout + dispatch + combine on `comm` (proves it is usable).
void expectUsable(moecommComm_t comm, const Expected &exp, int rank) {
  RankRun run = runRank(comm, exp, moecommHierarchical, rank);
  EXPECT_EQ(run.result, moecommSuccess) << run.error;
  EXPECT_TRUE(sameBits(run.dispatch, exp.dispatch[rank]));
}

TEST(Faults, BadExpertIdNamesRankTokenSlot) {
  ref::Problem bad = smallProblem(4, 256, 2, 6);
  bad.routing[2].numTokens = 6;
  bad.routing[2].topkIdx.assign(12, -1);
  for (int64_t t = 0; t < 6; ++t) {
    bad.routing[2].topkIdx[2 * t] = 1;
    bad.routing[2].topkIdx[2 * t + 1] = 2;
  }
  bad.routing[2].topkIdx[5 * 2 + 0] = 4;
  bad.routing[2].topkIdx[5 * 2 + 1] = 300;
  bad.routing[2].topkWeights.assign(12, 0.5f);
  ASSERT_EQ(ref::validate(bad),
            "rank 2 token 5 slot 1: expert id 300 out of range [-1, 256)");
  Expected good = computeExpected(smallProblem(4, 256, 2, 6));
  std::vector<Outcome> o(4);
  runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
    moecommLayoutDesc_t d = descFor(bad, r, moecommFlat);
    moecommLayout_t l = nullptr;
    o[r] = outcome(comm, moecommLayoutCreate(comm, &d, &l));
    EXPECT_EQ(l, nullptr);
    expectUsable(comm, good, r);
  });
  expectAll(o, moecommInvalidArgument,
            "rank 2 token 5 slot 1: expert id 300 out of range [-1, 256)");
}

TEST(Faults, SentinelIsNotExpertZero) {
  // -1 is skipped everywhere; -2 is an error.
  ref::Problem p = smallProblem(2, 4, 3, 5);
  for (auto &rr : p.routing)
    std::fill(rr.topkIdx.begin(), rr.topkIdx.end(), -1);
  p.routing[1].topkIdx[2] = 1; // one pair: rank 1 token 0 slot 2 -> expert 1
  Expected exp = computeExpected(p);
  ref::Problem bad = p;
  bad.routing[0].topkIdx[4] = -2;
  std::vector<Outcome> o(2);
  std::vector<RankRun> runs(2);
  runOnThreads(2, p.ranksPerNode, [&](moecommComm_t comm, int r) {
    moecommLayoutDesc_t d = descFor(bad, r, moecommFlat);
    moecommLayout_t l = nullptr;
    o[r] = outcome(comm, moecommLayoutCreate(comm, &d, &l));
    runs[r] = runRank(comm, exp, moecommPerExpert, r);
  });
  expectAll(o, moecommInvalidArgument,
            "rank 0 token 1 slot 1: expert id -2 out of range [-1, 4)");
  for (int r = 0; r < 2; ++r)
    checkRank(exp, moecommPerExpert, r, runs[r]);
  EXPECT_EQ(runs[0].tokensPerExpert, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(runs[1].tokensPerExpert, (std::vector<int64_t>{0, 0}));
}

TEST(Faults, DuplicateIdInARow) {
  ref::Problem p = smallProblem(4, 16, 3, 7);
  ASSERT_GE(p.routing[0].numTokens, 4);
  p.routing[0].topkIdx[3 * 3 + 0] = 7;
  p.routing[0].topkIdx[3 * 3 + 1] = 2;
  p.routing[0].topkIdx[3 * 3 + 2] = 7;
  // Also a (later) bad rank: the lowest failing rank wins.
  p.routing[3].topkIdx[0] = 99;
  ASSERT_EQ(ref::validate(p),
            "rank 0 token 3: expert id 7 appears in slots 0 and 2");
  expectLayoutFails(p, moecommHierarchical, moecommInvalidArgument,
                    "rank 0 token 3: expert id 7 appears in slots 0 and 2");
}

TEST(Faults, ExpertsNotDivisibleByRanks) {
  ref::Problem p = smallProblem(4, 16, 2, 3);
  p.numExperts = 10;
  for (auto &rr : p.routing)
    for (auto &e : rr.topkIdx)
      e = e % 10;
  expectLayoutFails(p, moecommAuto, moecommInvalidArgument,
                    "num_experts 10 is not divisible by 4 ranks");
}

TEST(Faults, RanksDisagreeOnTopkOrExperts) {
  ref::Problem p = smallProblem(4, 16, 8, 3);
  ref::Problem k4 = smallProblem(4, 16, 4, 3);
  std::vector<Outcome> o(4), oe(4);
  Expected good = computeExpected(smallProblem(4, 16, 2, 3));
  runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
    moecommLayoutDesc_t d = descFor(r == 3 ? k4 : p, r, moecommFlat);
    moecommLayout_t l = nullptr;
    o[r] = outcome(comm, moecommLayoutCreate(comm, &d, &l));
    d = descFor(p, r, moecommFlat);
    if (r == 1)
      d.numExperts = 32;
    oe[r] = outcome(comm, moecommLayoutCreate(comm, &d, &l));
    expectUsable(comm, good, r);
  });
  expectAll(o, moecommMismatch,
            "ranks disagree on topk: rank 0 has 8, rank 3 has 4");
  expectAll(oe, moecommMismatch,
            "ranks disagree on num_experts: rank 0 has 16, rank 1 has 32");
}

// Ranks with different segment alignments would disagree on R's meaning;
// 0 and 1 are the same alignment.
TEST(Faults, RanksDisagreeOnAlign) {
  ref::Problem p = smallProblem(4, 16, 2, 3);
  std::vector<Outcome> o(4), same(4);
  Expected good = computeExpected(p);
  runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
    moecommLayoutDesc_t d = descFor(p, r, moecommHierarchical);
    d.align = r == 2 ? 16 : 1;
    moecommLayout_t l = nullptr;
    o[r] = outcome(comm, moecommLayoutCreate(comm, &d, &l));
    d.align = r % 2;
    same[r] = outcome(comm, moecommLayoutCreate(comm, &d, &l));
    if (same[r].result == moecommSuccess)
      moecommLayoutDestroy(l);
    expectUsable(comm, good, r);
  });
  expectAll(o, moecommMismatch,
            "ranks disagree on align: rank 0 has 1, rank 2 has 16");
  expectAll(same, moecommSuccess, "");
}

// An expert placement's fields: each fault is InvalidArgument on every rank
// (the lowest failing rank's message), after the routing's own checks.
TEST(Faults, InvalidPlacementFields) {
  ref::Problem p = smallProblem(4, 8, 2, 3);
  p.slotExperts = {0, 1, 2, 3, 4, 5, 6, 7};
  struct Bad {
    int rank;
    moecommLayoutDesc_t (*edit)(moecommLayoutDesc_t);
    const char *message;
  };
  const Bad bad[] = {
      {1,
       [](moecommLayoutDesc_t d) {
         d.numSlots = -8;
         return d;
       },
       "rank 1: num_slots must be >= 0, got -8"},
      {2,
       [](moecommLayoutDesc_t d) {
         d.numSlots = INT64_MAX / 4;
         return d;
       },
       "rank 2: num_slots 2305843009213693951 does not fit in 31 bits"},
      {2,
       [](moecommLayoutDesc_t d) {
         d.numSlots = int64_t(1) << 31; // a short array is never read
         return d;
       },
       "rank 2: num_slots 2147483648 does not fit in 31 bits"},
      {3,
       [](moecommLayoutDesc_t d) {
         d.slotExperts = nullptr;
         return d;
       },
       "rank 3: slot_experts is NULL"},
      {0,
       [](moecommLayoutDesc_t d) {
         d.replicaChoice = (moecommReplicaChoice_t)2;
         return d;
       },
       "rank 0: unknown replica choice 2"},
  };
  for (const Bad &b : bad) {
    std::vector<Outcome> o(4);
    runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
      moecommLayoutDesc_t d = descFor(p, r, moecommHierarchical);
      if (r == b.rank)
        d = b.edit(d);
      moecommLayout_t l = nullptr;
      o[r] = outcome(comm, moecommLayoutCreate(comm, &d, &l));
    });
    expectAll(o, moecommInvalidArgument, b.message);
  }
}

// Ranks passing different placements or choices get Mismatch naming the
// placement on every rank (nobody hangs), and the communicator stays usable.
TEST(Faults, RanksDisagreeOnThePlacement) {
  ref::Problem p = smallProblem(4, 8, 2, 3);
  p.slotExperts = {0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3};
  const std::vector<int64_t> other = {0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7};
  Expected good = computeExpected(p);
  std::vector<Outcome> slots(4), choice(4), none(4), count(4);
  runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
    moecommLayout_t l = nullptr;
    moecommLayoutDesc_t d = descFor(p, r, moecommHierarchical);
    if (r == 3)
      d.slotExperts = other.data();
    slots[r] = outcome(comm, moecommLayoutCreate(comm, &d, &l));
    d = descFor(p, r, moecommHierarchical);
    if (r == 1)
      d.replicaChoice = moecommReplicaLoadOnly;
    choice[r] = outcome(comm, moecommLayoutCreate(comm, &d, &l));
    d = descFor(p, r, moecommHierarchical);
    if (r == 2)
      d.numSlots = 0;
    none[r] = outcome(comm, moecommLayoutCreate(comm, &d, &l));
    d = descFor(p, r, moecommHierarchical);
    if (r == 1)
      d.numSlots = 8; // a valid placement too: the first 8 slots
    count[r] = outcome(comm, moecommLayoutCreate(comm, &d, &l));
    expectUsable(comm, good, r);
  });
  auto expectMismatchOn = [](const std::vector<Outcome> &o,
                             const std::string &prefix) {
    for (size_t r = 0; r < o.size(); ++r) {
      EXPECT_EQ(o[r].result, moecommMismatch) << "rank " << r;
      EXPECT_EQ(o[r].message.rfind(prefix, 0), 0u)
          << "rank " << r << ": " << o[r].message;
      EXPECT_EQ(o[r].message, o[0].message) << "rank " << r;
    }
  };
  expectMismatchOn(
      slots, "ranks disagree on the placement's slot_experts (FNV-1a hash)");
  expectAll(choice, moecommMismatch,
            "ranks disagree on the placement's replica choice: rank 0 has 0, "
            "rank 1 has 1");
  expectAll(none, moecommMismatch,
            "ranks disagree on the placement's num_slots: rank 0 has 12, rank "
            "2 has 0");
  expectAll(count, moecommMismatch,
            "ranks disagree on the placement's num_slots: rank 0 has 12, rank "
            "1 has 8");
}

TEST(Faults, AllToAllCountMismatchDetectedBeforePayload) {
  const int W = 4;
  std::vector<Outcome> o(W), ok(W);
  std::vector<std::vector<float>> got(W);
  runOnThreads(W, 2, [&](moecommComm_t comm, int r) {
    // Everyone sends 4 rows to everyone, but rank 1 expects 5 from rank 2.
    std::vector<int64_t> send(W, 4), recv(W, 4);
    if (r == 1)
      recv[2] = 5;
    int64_t sr = 4 * W, rr = r == 1 ? 4 * W + 1 : 4 * W;
    std::vector<float> sbuf(sr * 3, (float)r), rbuf(rr * 3, -1.0f);
    moecommRows_t s{sbuf.data(), nullptr, sr, 3, moecommFloat32};
    moecommRows_t d{rbuf.data(), nullptr, rr, 3, moecommFloat32};
    o[r] = outcome(
        comm, moecommAllToAll(comm, &s, send.data(), &d, recv.data(), nullptr));
    for (float v : rbuf)
      EXPECT_EQ(v, -1.0f) << "payload moved before the counts were checked";
    // The communicator still works.
    recv[2] = 4;
    d.rows = 4 * W;
    ok[r] = outcome(
        comm, moecommAllToAll(comm, &s, send.data(), &d, recv.data(), nullptr));
    got[r].assign(rbuf.begin(), rbuf.begin() + 4 * W * 3);
  });
  expectAll(o, moecommMismatch,
            "rank 1 expects 5 rows from rank 2 but rank 2 sends 4");
  expectAll(ok, moecommSuccess, "");
  for (int r = 0; r < W; ++r)
    for (int s = 0; s < W; ++s)
      EXPECT_EQ(got[r][s * 12], (float)s);
}

TEST(Faults, WrongRowsOnOneRankFailEverywhere) {
  Expected exp = computeExpected(smallProblem(4, 16, 3, 6));
  const ref::Problem &p = exp.problem;
  std::vector<Outcome> o(4), ow(4), oh(4), os(4);
  runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
    moecommLayoutDesc_t d = descFor(p, r, moecommHierarchical);
    moecommLayout_t l = nullptr;
    ASSERT_EQ(moecommLayoutCreate(comm, &d, &l), moecommSuccess);
    moecommLayoutInfo_t info;
    moecommLayoutGetInfo(l, &info);
    int64_t T = p.routing[r].numTokens;
    Rows x = Rows::fromValues(exp.x[r], p.hidden, p.dataType);
    Rows recv(info.recvRows, p.hidden, p.dataType);
    moecommRows_t xv = x.rows;
    if (r == 1)
      xv.rows = T - 1;
    o[r] = outcome(
        comm, moecommDispatch(comm, l, &xv, p.wireType, recv.view(), nullptr));
    // Ranks disagree on the weighted flag / hidden size: Mismatch.
    Rows y(info.recvRows, p.hidden, p.dataType), out(T, p.hidden, p.dataType);
    ow[r] = outcome(comm, moecommCombine(comm, l, y.view(), r == 2 ? 0 : 1,
                                         out.view(), nullptr));
    // A non-NULL stream on a CPU backend.
    int dummy;
    os[r] =
        outcome(comm, moecommDispatch(comm, l, x.view(), p.wireType,
                                      recv.view(), r == 3 ? &dummy : nullptr));
    // Now a correct dispatch works and is exact.
    oh[r] = outcome(comm, moecommDispatch(comm, l, x.view(), p.wireType,
                                          recv.view(), nullptr));
    EXPECT_TRUE(sameBits(recv.values(), exp.dispatch[r]));
    moecommLayoutDestroy(l);
  });
  int64_t T1 = p.routing[1].numTokens;
  expectAll(o, moecommInvalidArgument,
            "rank 1: x has " + std::to_string(T1 - 1) + " rows, expected " +
                std::to_string(T1));
  expectAll(ow, moecommMismatch,
            "ranks disagree on weighted: rank 0 has 1, rank 2 has 0");
  expectAll(os, moecommInvalidArgument,
            "rank 3: streams need the nccl backend; pass NULL on the CPU "
            "backends");
  expectAll(oh, moecommSuccess, "");
}

// The runtime's and the reference's validation (two implementations) give
// the same first error for every kind of bad routing.
TEST(Faults, RuntimeAndReferenceAgreeOnValidation) {
  std::vector<ref::Problem> bad;
  ref::Problem base = smallProblem(4, 16, 3, 5);
  bad.push_back(base);
  bad.back().routing[1].topkIdx[4] = 16; // out of range
  bad.push_back(base);
  bad.back().routing[3].topkIdx[1] = bad.back().routing[3].topkIdx[2];
  bad.push_back(base);
  bad.back().routing[2].topkIdx[0] = -7;
  bad.back().routing[3].topkIdx[0] = 99; // a later rank: not reported
  bad.push_back(base);
  bad.back().capacity = -1;
  bad.push_back(base);
  bad.back().numExperts = int64_t(1) << 31;
  bad.push_back(base);
  bad.back().numExperts = 18;
  for (int64_t align : {int64_t(-16), int64_t(3), int64_t(96),
                        MOECOMM_MAX_ALIGN * int64_t(2)}) {
    bad.push_back(base);
    bad.back().align = align;
    bad.back().routing[2].topkIdx[0] = 99; // reported after the align
  }
  // Placements (each message names the placement; the routing is checked
  // against the logical experts first, E % W only without one).
  ref::Problem placed = base;
  placed.slotExperts = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,
                        10, 11, 12, 13, 14, 15, 15, 14, 13, 12};
  bad.push_back(placed);
  bad.back().replicaChoice = (moecommReplicaChoice_t)-1;
  bad.push_back(placed);
  bad.back().slotExperts.resize(12); // fewer slots than experts
  bad.push_back(placed);
  bad.back().slotExperts.resize(18); // not divisible by 4 ranks
  bad.push_back(placed);
  bad.back().slotExperts[19] = 16; // out of range
  bad.push_back(placed);
  bad.back().slotExperts[3] = 0; // expert 3 has no slot
  bad.push_back(placed);
  bad.back().slotExperts[3] = 0;
  bad.back().routing[0].topkIdx[0] = 16; // the routing's error comes first
  bad.push_back(placed);
  bad.back().numExperts = 18; // E % W: the placement's fault, not E's
  for (const ref::Problem &p : bad) {
    moecommResult_t code;
    std::string want = ref::validate(p, &code);
    ASSERT_NE(want, "");
    expectLayoutFails(p, moecommAuto, code, want);
  }
}

TEST(Faults, DifferentCollectivesOnDifferentRanks) {
  std::vector<Outcome> o(3);
  runOnThreads(3, 1, [&](moecommComm_t comm, int r) {
    int64_t v = r;
    o[r] = outcome(comm, r == 0 ? moecommBarrier(comm)
                                : moecommAllReduceSum(comm, &v, 1));
  });
  expectAll(o, moecommMismatch,
            "ranks disagree on the collective: rank 0 calls moecommBarrier, "
            "rank 1 calls moecommAllReduceSum");
}

TEST(Faults, NullArgumentsOnOneRank) {
  ref::Problem p = smallProblem(4, 8, 2, 3);
  std::vector<Outcome> o(4), ol(4);
  runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
    moecommLayoutDesc_t d = descFor(p, r, moecommFlat);
    moecommLayout_t l = nullptr;
    o[r] = outcome(comm, moecommLayoutCreate(comm, r == 2 ? nullptr : &d, &l));
    ol[r] = outcome(comm, moecommLayoutCreate(comm, &d, r == 1 ? nullptr : &l));
  });
  expectAll(o, moecommInvalidArgument, "rank 2: the layout desc is NULL");
  expectAll(ol, moecommInvalidArgument, "rank 1: layout is NULL");
  EXPECT_EQ(moecommCommRank(nullptr, nullptr), moecommInvalidArgument);
  EXPECT_STREQ(moecommCommGetLastError(nullptr), "comm is NULL");
}

TEST(Faults, CapacityOverflowIsDeterministicAndReported) {
  CaseSpec s;
  s.W = 4;
  s.G = 2;
  s.E = 8;
  s.K = 3;
  s.T = 10;
  s.H = 24;
  s.routing = RoutingKind::OneExpert; // every token -> expert 7 (rank 3)
  s.capacity = 7;
  Expected exp = computeExpected(makeProblem(s));
  int64_t total = 0;
  for (const auto &rr : exp.problem.routing)
    total += rr.numTokens;
  ASSERT_EQ(exp.layout[3].dropped, total - 7);
  std::vector<RankRun> a(4), b(4);
  runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
    a[r] = runRank(comm, exp, moecommHierarchical, r);
    b[r] = runRank(comm, exp, moecommHierarchical, r);
  });
  for (int r = 0; r < 4; ++r) {
    checkRank(exp, moecommHierarchical, r, a[r]);
    EXPECT_EQ(a[r].info.dropped, r == 3 ? total - 7 : 0);
    EXPECT_EQ(a[r].sources, b[r].sources);
    EXPECT_TRUE(sameBits(a[r].dispatch, b[r].dispatch));
    EXPECT_TRUE(sameBits(a[r].combineW, b[r].combineW));
  }
  // The kept rows are the first 7 in (source rank, token) order.
  std::vector<int64_t> firstSeven;
  for (int src = 0; src < 4 && (int64_t)firstSeven.size() < 14; ++src)
    for (int64_t t = 0; t < exp.problem.routing[src].numTokens &&
                        (int64_t)firstSeven.size() < 14;
         ++t) {
      firstSeven.push_back(src);
      firstSeven.push_back(t);
    }
  EXPECT_EQ(a[3].sources, firstSeven);
}

TEST(Faults, EmptyPartitionsEverywhere) {
  // T = 0 on every rank: R = 0 everywhere, every call completes.
  CaseSpec s;
  s.W = 4;
  s.G = 2;
  s.E = 8;
  s.K = 2;
  s.T = 0;
  s.routing = RoutingKind::Uniform;
  ref::Problem p = makeProblem(s);
  for (auto &rr : p.routing) {
    rr.numTokens = 0;
    rr.topkIdx.clear();
    rr.topkWeights.clear();
  }
  Expected exp = computeExpected(p);
  for (moecommStrategy_t st :
       {moecommPerExpert, moecommFlat, moecommHierarchical, moecommAuto}) {
    std::vector<RankRun> runs(4);
    runOnThreads(4, 2, [&](moecommComm_t comm, int r) {
      runs[r] = runRank(comm, exp, st, r);
    });
    for (int r = 0; r < 4; ++r) {
      checkRank(exp, st, r, runs[r]);
      EXPECT_EQ(runs[r].info.recvRows, 0);
    }
  }
}

TEST(Faults, ThreadGroupMisuse) {
  moecommThreadGroup_t g = nullptr;
  EXPECT_EQ(moecommThreadGroupCreate(0, 1, &g), moecommInvalidArgument);
  EXPECT_EQ(moecommThreadGroupCreate(6, 4, &g), moecommInvalidArgument);
  EXPECT_STREQ(moecommCommGetLastError(nullptr),
               "ranks_per_node 4 does not divide 6 ranks");
  ASSERT_EQ(moecommThreadGroupCreate(1, 1, &g), moecommSuccess);
  moecommComm_t c = nullptr;
  EXPECT_EQ(moecommCommInitThreadRank(&c, g, 1), moecommInvalidArgument);
  ASSERT_EQ(moecommCommInitThreadRank(&c, g, 0), moecommSuccess);
  moecommComm_t c2 = nullptr;
  EXPECT_EQ(moecommCommInitThreadRank(&c2, g, 0), moecommInvalidArgument);
  EXPECT_EQ(moecommThreadGroupDestroy(g), moecommInvalidArgument);
  EXPECT_EQ(moecommCommDestroy(c), moecommSuccess);
  EXPECT_EQ(moecommThreadGroupDestroy(g), moecommSuccess);
}

TEST(Faults, LayoutOfAnotherCommunicator) {
  Expected exp = computeExpected(smallProblem(2, 4, 2, 3));
  const ref::Problem &p = exp.problem;
  std::vector<moecommLayout_t> first(2, nullptr);
  runOnThreads(2, p.ranksPerNode, [&](moecommComm_t comm, int r) {
    moecommLayoutDesc_t d = descFor(p, r, moecommFlat);
    ASSERT_EQ(moecommLayoutCreate(comm, &d, &first[r]), moecommSuccess);
  });
  // (The first communicators are gone; their layouts are plain data.)
  std::vector<Outcome> o(2);
  runOnThreads(2, p.ranksPerNode, [&](moecommComm_t comm, int r) {
    Rows x = Rows::fromValues(exp.x[r], p.hidden, p.dataType);
    Rows recv(exp.layout[r].rows.size(), p.hidden, p.dataType);
    o[r] = outcome(comm, moecommDispatch(comm, first[r], x.view(), p.wireType,
                                         recv.view(), nullptr));
  });
  for (moecommLayout_t l : first)
    moecommLayoutDestroy(l);
  expectAll(o, moecommInvalidArgument,
            "rank 0: the layout belongs to another communicator");
}

} // namespace

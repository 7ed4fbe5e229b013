//===- CapacityLogicTest.cpp - The capacity algorithm on the CPU ----------===//
//
// The capacity mode's per-token / per-slot rules (RoutingLogic.h) are the
// same functions the kernels call. This test runs the whole algorithm with
// them on the host for W ranks — clean the ids, count and prefix-sum pairs
// per (rank, token), place pairs in P-slot blocks, "exchange" the blocks,
// keep rows per source under the capacity, sort expert-major (a stable
// sort, as CUB's radix sort is), invert, send combine rows back, sum per
// token — and compares every output with the reference oracle
// (Reference.h) with the same capacity: rows, sources, weights, tokens per
// expert, drops, and the weighted combine bit for bit. It needs no GPU, so
// the algorithm (multi-rank included) is checked on every build; the GPU
// tests then check the kernels that run it.
//
//===----------------------------------------------------------------------===//
#include "Layout.h"
#include "RoutingLogic.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <numeric>

using namespace moecomm;
using namespace moecomm::cuda;
using namespace moecomm::test;

namespace {

struct RankState {
  // Source side.
  std::vector<int32_t> clean;
  std::vector<float> weights;
  std::vector<int64_t> slotPos, sendSrc, sendCount;
  std::vector<CapacityMeta> sendMeta;
  int flags = 0;
  // Destination side.
  std::vector<int64_t> recvCount, kept, recvToken, recvIndex, inverse;
  std::vector<int64_t> tokensPerExpert, sources;
  std::vector<CapacityMeta> recvMeta;
  std::vector<float> recvWeights;
  int64_t R = 0, dropped = 0;
};

/// Runs dispatch (and the combine mapping) for every rank of `p` with
/// capacity C and pair capacity P; checks against the reference of
/// `expectedProblem` (the problem with cleaned routing and capacity).
void runAndCheck(const ref::Problem &p, int64_t C, int64_t P,
                 const ref::Problem &expectedProblem, int wantFlagsAny) {
  const int W = p.ranks, K = p.topk;
  const int64_t E = p.numExperts, L = E / W;
  Expected exp = computeExpected(expectedProblem);
  std::vector<RankState> st(W);
  const CapacityMeta poison{-7, -999, -1.0f, -3};

  // Source side of every rank.
  for (int r = 0; r < W; ++r) {
    RankState &s = st[r];
    const ref::RankRouting &rr = p.routing[r];
    const int64_t T = rr.numTokens;
    s.clean.assign(T * K, -1);
    s.weights.assign(T * K, 1.0f);
    std::vector<int64_t> counts(W * T + 1, 0), offsets(W * T + 1, 0);
    for (int64_t t = 0; t < T; ++t) {
      s.flags |=
          cleanToken(rr.topkIdx.data() + t * K, K, E, s.clean.data() + t * K);
      for (int k = 0; k < K; ++k) {
        if (!rr.topkWeights.empty())
          s.weights[t * K + k] = rr.topkWeights[t * K + k];
        const int32_t e = s.clean[t * K + k];
        if (e >= 0)
          counts[(e / L) * T + t]++;
      }
    }
    std::exclusive_scan(counts.begin(), counts.end(), offsets.begin(),
                        (int64_t)0);
    s.slotPos.assign(T * K, -1);
    s.sendSrc.assign(W * P, -1);
    s.sendMeta.assign(W * P, poison);
    s.sendCount.assign(W, 0);
    for (int64_t t = 0; t < T; ++t)
      for (int k = 0; k < K; ++k) {
        const int32_t e = s.clean[t * K + k];
        if (e < 0)
          continue;
        const int64_t d = e / L;
        const int64_t pos =
            pairPosition(s.clean.data() + t * K, K, k, L, offsets[d * T + t]);
        const int64_t slot = sourceSlot(pos, d, offsets[d * T], P);
        if (slot < 0) {
          s.flags |= MOECOMM_CAPACITY_OVERFLOW;
          continue;
        }
        ASSERT_EQ(s.sendSrc[slot], -1) << "two pairs in one slot";
        s.slotPos[t * K + k] = slot;
        s.sendSrc[slot] = t;
        s.sendMeta[slot] = {(int32_t)t, e, s.weights[t * K + k], k};
      }
    for (int d = 0; d < W; ++d)
      s.sendCount[d] = offsets[(d + 1) * T] - offsets[d * T];
  }
  // The fixed-size exchange: block r of rank s's buffers goes to rank r.
  for (int r = 0; r < W; ++r) {
    RankState &s = st[r];
    s.recvCount.assign(W, 0);
    s.recvMeta.assign(W * P, poison);
    s.recvToken.assign(W * P, -1);
    for (int q = 0; q < W; ++q) {
      s.recvCount[q] = st[q].sendCount[r];
      for (int64_t j = 0; j < P; ++j) {
        s.recvMeta[q * P + j] = st[q].sendMeta[r * P + j];
        s.recvToken[q * P + j] = st[q].sendSrc[r * P + j];
      }
    }
  }
  // Destination side.
  for (int r = 0; r < W; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    RankState &s = st[r];
    const ref::RankLayout &want = exp.layout[r];
    s.kept.assign(W, 0);
    s.R = keepRows(s.recvCount.data(), W, P, C, s.kept.data(), &s.dropped);
    if (s.dropped > 0)
      s.flags |= MOECOMM_CAPACITY_OVERFLOW;
    std::vector<std::pair<uint32_t, int64_t>> keyed(W * P);
    for (int64_t i = 0; i < W * P; ++i)
      keyed[i] = {slotKey(i, P, s.kept.data(), s.recvMeta.data(), r * L, L), i};
    // Sorting (key, slot) pairs = a stable sort by key (CUB's radix sort).
    std::sort(keyed.begin(), keyed.end());
    s.inverse.assign(W * P, -1);
    s.recvIndex.assign(C, -1);
    s.tokensPerExpert.assign(L, 0);
    s.sources.assign(2 * C, -1);
    s.recvWeights.assign(C, 0.0f);
    ASSERT_LE(s.R, C);
    for (int64_t i = 0; i < s.R; ++i) {
      const int64_t slot = keyed[i].second;
      ASSERT_LT(keyed[i].first, (uint32_t)L) << "a kept slot sorts last";
      const CapacityMeta &m = s.recvMeta[slot];
      ASSERT_NE(m.expert, poison.expert) << "row " << i << " was never sent";
      ASSERT_EQ(s.recvToken[slot], m.token);
      s.recvIndex[i] = slot;
      s.inverse[slot] = i;
      s.recvWeights[i] = m.weight;
      s.sources[2 * i] = slot / P;
      s.sources[2 * i + 1] = m.token;
      s.tokensPerExpert[keyed[i].first]++;
    }
    EXPECT_EQ(s.R, (int64_t)want.rows.size());
    EXPECT_EQ(s.dropped, want.dropped);
    EXPECT_EQ(s.tokensPerExpert, want.tokensPerExpert);
    for (size_t i = 0; i < want.rows.size() && (int64_t)i < s.R; ++i) {
      EXPECT_EQ(s.sources[2 * i], want.rows[i].srcRank) << "row " << i;
      EXPECT_EQ(s.sources[2 * i + 1], want.rows[i].srcToken) << "row " << i;
      EXPECT_EQ(s.recvMeta[s.recvIndex[i]].expert - r * L,
                want.rows[i].localExpert)
          << "row " << i;
      EXPECT_EQ(std::memcmp(&s.recvWeights[i], &want.rows[i].weight, 4), 0)
          << "weight of row " << i;
    }
  }
  // Combine: rank d returns y[inverse[slot]] in the slot the row came
  // from, with kept[s]; the source sums its kept slots in slot order.
  for (int r = 0; r < W; ++r) {
    SCOPED_TRACE("combine, rank " + std::to_string(r));
    const RankState &s = st[r];
    const int64_t T = p.routing[r].numTokens, H = p.hidden;
    std::vector<int64_t> keptBack(W);
    for (int d = 0; d < W; ++d)
      keptBack[d] = st[d].kept[r];
    std::vector<float> out(T * H, 0.0f);
    for (int64_t t = 0; t < T; ++t) {
      std::vector<float> acc(H, 0.0f);
      for (int k = 0; k < K; ++k) {
        const int64_t src =
            combineSource(s.slotPos[t * K + k], P, keptBack.data());
        if (src < 0)
          continue;
        const int64_t d = src / P, j = src % P;
        const int64_t row = st[d].inverse[r * P + j];
        ASSERT_GE(row, 0) << "a kept slot has no row at its destination";
        const float w = s.weights[t * K + k];
        for (int64_t h = 0; h < H; ++h)
          acc[h] = acc[h] + w * exp.y[d][row * H + h];
      }
      for (int64_t h = 0; h < H; ++h)
        out[t * H + h] = ref::roundTo(acc[h], p.dataType);
    }
    EXPECT_TRUE(sameBits(out, exp.combineW[r])) << "weighted combine";
  }
  int flags = 0;
  for (const RankState &s : st)
    flags |= s.flags;
  EXPECT_EQ(flags, wantFlagsAny);
}

ref::Problem problem(int W, int64_t E, int K, int64_t H, RoutingKind rk,
                     int64_t T, uint64_t seed) {
  return makeProblem(CaseSpec{W, 1, E, K, H, moecommBfloat16, moecommBfloat16,
                              rk, T, /*capacity=*/0, /*randomWeights=*/true,
                              seed});
}

int64_t defaultP(const ref::Problem &p, int64_t C) {
  int64_t maxT = 0;
  for (const ref::RankRouting &r : p.routing)
    maxT = std::max(maxT, r.numTokens);
  const int64_t L = p.numExperts / p.ranks;
  return std::min(C, maxT * std::min<int64_t>(p.topk, L));
}

TEST(CapacityLogic, MatchesTheReferenceOnEveryRank) {
  using RK = RoutingKind;
  struct Case {
    int W;
    int64_t E;
    int K;
    RK rk;
    int64_t T, C;
  };
  const Case cases[] = {
      {1, 8, 3, RK::Uniform, 20, 1000},
      {1, 8, 3, RK::Uniform, 20, 17},
      {2, 16, 4, RK::Skewed, 30, 1000},
      {2, 16, 4, RK::Skewed, 30, 41},
      {4, 32, 5, RK::UniformMasked, 25, 1000},
      {4, 32, 5, RK::UniformMasked, 25, 30},
      {8, 64, 8, RK::Uniform, 16, 1000},
      {8, 64, 8, RK::Uniform, 16, 60},
      {8, 8, 2, RK::OneExpert, 12, 20},
      {4, 16, 3, RK::EmptyRanks, 9, 7},
      {4, 16, 3, RK::AllMasked, 9, 7},
      {8, 16, 9, RK::Skewed, 5, 1},
  };
  for (const Case &c : cases) {
    ref::Problem p = problem(c.W, c.E, c.K, 24, c.rk, c.T, c.W * 100 + c.C);
    ref::Problem want = p;
    want.capacity = c.C;
    const int64_t P = defaultP(p, c.C);
    // Drops happen iff some destination gets more than C pairs.
    Expected e = computeExpected(want);
    int64_t drops = 0;
    for (const ref::RankLayout &l : e.layout)
      drops += l.dropped;
    SCOPED_TRACE("W " + std::to_string(c.W) + " C " + std::to_string(c.C) +
                 " P " + std::to_string(P));
    runAndCheck(p, c.C, P, want, drops > 0 ? MOECOMM_CAPACITY_OVERFLOW : 0);
  }
}

TEST(CapacityLogic, SmallPairCapacityOnOneRank) {
  // W = 1: a pair capacity P < C keeps the first P pairs, like capacity P.
  ref::Problem p = problem(1, 16, 4, 24, RoutingKind::Uniform, 40, 3);
  ref::Problem want = p;
  want.capacity = 50;
  runAndCheck(p, 1000, 50, want, MOECOMM_CAPACITY_OVERFLOW);
}

TEST(CapacityLogic, BadAndRepeatedIdsAreMasked) {
  ref::Problem p = problem(4, 16, 4, 24, RoutingKind::Uniform, 10, 9);
  ref::Problem want = p;
  // Rank 1 token 2: an id out of range; rank 3 token 0: a repeat.
  p.routing[1].topkIdx[2 * 4 + 1] = 16;
  want.routing[1].topkIdx[2 * 4 + 1] = -1;
  p.routing[3].topkIdx[0 * 4 + 3] = p.routing[3].topkIdx[0];
  want.routing[3].topkIdx[0 * 4 + 3] = -1;
  want.capacity = 1000;
  runAndCheck(p, 1000, defaultP(want, 1000), want,
              MOECOMM_CAPACITY_BAD_EXPERT | MOECOMM_CAPACITY_DUPLICATE);
}

// The device's int sizes are checked with int64 arithmetic that itself
// cannot overflow (T comes from the caller: T = 2^62 with K = 2 wrapped).
TEST(CapacityLogic, RoutingSizesBeyondTheDeviceAreRejected) {
  EXPECT_TRUE(checkRoutingLayoutSizes(1024, 8, 256, 8).ok());
  EXPECT_TRUE(checkRoutingLayoutSizes(INT_MAX / 2, 2, 2, 2).ok());
  struct Case {
    int64_t T;
    int K;
    int64_t E;
    int W;
  } cases[] = {{int64_t(1) << 62, 2, 4, 1},      // T * K wraps
               {INT64_MAX, 1, 4, 4},              // W * T wraps
               {INT_MAX / 2 + 1, 2, 2, 2},        // T * K = 2^31
               {int64_t(1) << 30, 1, 2, 2},       // W * T + 1 > INT_MAX
               {1, 1, INT64_MAX - 1, 2},          // E + 1 wraps
               {1, 1, INT_MAX, 1}};               // E + 1 > INT_MAX
  for (const Case &c : cases) {
    Status st = checkRoutingLayoutSizes(c.T, c.K, c.E, c.W);
    EXPECT_EQ(st.code, moecommInvalidArgument) << c.T << " " << c.K;
    EXPECT_NE(st.message.find("below 2^31"), std::string::npos) << st.message;
  }
}

} // namespace

//===- ReferenceTest.cpp - The oracle itself, on hand-computed cases ------===//
#include "moecomm/Reference/Reference.h"
#include "moecomm/Reference/CombineBound.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace moecomm;

namespace {

// DESIGN.md §8's example: W=4, G=2, E=8 (2 experts per rank), K=2.
ref::Problem designExample() {
  ref::Problem p;
  p.ranks = 4;
  p.ranksPerNode = 2;
  p.numExperts = 8;
  p.topk = 2;
  p.hidden = 2;
  p.dataType = moecommFloat32;
  p.wireType = moecommFloat32;
  p.routing.resize(4);
  p.routing[0] = {2, {0, 5, 3, -1}, {0.75f, 0.25f, 1.0f, 0.0f}};
  p.routing[1] = {1, {7, 1}, {0.5f, 0.5f}};
  p.routing[2] = {0, {}, {}};
  p.routing[3] = {1, {2, 6}, {0.5f, 0.5f}};
  return p;
}

struct Row {
  int64_t le, s, t;
};

void expectRows(const ref::RankLayout &l, std::vector<Row> rows) {
  ASSERT_EQ(l.rows.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(l.rows[i].localExpert, rows[i].le) << i;
    EXPECT_EQ(l.rows[i].srcRank, rows[i].s) << i;
    EXPECT_EQ(l.rows[i].srcToken, rows[i].t) << i;
  }
}

TEST(Reference, DesignExampleLayout) {
  ref::Problem p = designExample();
  ASSERT_EQ(ref::validate(p), "");
  auto l = ref::layout(p);
  // rank 0 hosts experts 0, 1; rank 1: 2, 3; rank 2: 4, 5; rank 3: 6, 7.
  expectRows(l[0], {{0, 0, 0}, {1, 1, 0}});
  expectRows(l[1], {{0, 3, 0}, {1, 0, 1}});
  expectRows(l[2], {{1, 0, 0}});
  expectRows(l[3], {{0, 3, 0}, {1, 1, 0}});
  EXPECT_EQ(l[0].tokensPerExpert, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(l[2].tokensPerExpert, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(l[0].rows[0].weight, 0.75f);
  EXPECT_EQ(l[2].rows[0].weight, 0.25f);
  EXPECT_EQ(l[2].rows[0].slot, 1);
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(l[r].dropped, 0);
  // Remote nodes per token: r0t0 {1}, r0t1 {}, r1t0 {1}, r3t0 {0}.
  EXPECT_EQ(ref::interNodeLowerBoundBytes(p, l, 10), 30);
}

TEST(Reference, DesignExampleDispatchAndCombine) {
  ref::Problem p = designExample();
  auto l = ref::layout(p);
  std::vector<std::vector<float>> x(4);
  for (int r = 0; r < 4; ++r)
    x[r] = ref::standardX(r, p.routing[r].numTokens, p.hidden);
  // §8's payload formula, spot-checked: x[1][0][1] = ((977 + 7) % 255 - 127)
  // / 128.
  EXPECT_EQ(x[1][1], (float)((977 + 7) % 255 - 127) / 128.0f);
  auto d = ref::dispatch(p, l, x);
  EXPECT_EQ(d[1][0], x[3][0]); // rank 1 row 0 = rank 3 token 0
  EXPECT_EQ(d[1][3], x[0][3]); // rank 1 row 1 = rank 0 token 1
  // Combine of y = 1 + (row index at its rank): token r0t0 reads rank 0 row
  // 0 (slot 0, w .75) and rank 2 row 0 (slot 1, w .25).
  std::vector<std::vector<float>> y(4);
  for (int r = 0; r < 4; ++r)
    for (size_t i = 0; i < l[r].rows.size(); ++i)
      for (int h = 0; h < 2; ++h)
        y[r].push_back(1.0f + (float)i + 10.0f * r);
  auto w = ref::combine(p, l, y, true);
  auto u = ref::combine(p, l, y, false);
  EXPECT_EQ(w[0][0], 0.75f * 1.0f + 0.25f * 21.0f);
  EXPECT_EQ(u[0][0], 1.0f + 21.0f);
  EXPECT_EQ(w[0][2], 1.0f * 12.0f); // r0t1: rank 1 row 1
  EXPECT_EQ(u[1][0], 2.0f + 32.0f); // r1t0: rank 3 row 1 (e7), rank 0 row 1
  EXPECT_EQ(w[3][0], 0.5f * 11.0f + 0.5f * 31.0f);
  EXPECT_TRUE(w[2].empty());
  auto a = ref::combineAbsSum(p, l, y, true);
  EXPECT_DOUBLE_EQ(a[0][0], 0.75 + 0.25 * 21);
}

TEST(Reference, CapacityDropsLatestSourceFirst) {
  ref::Problem p = designExample();
  p.capacity = 1;
  auto l = ref::layout(p);
  // rank 0 receives (0,0,e0) and (1,0,e1): keeps rank 0's.
  expectRows(l[0], {{0, 0, 0}});
  EXPECT_EQ(l[0].dropped, 1);
  // rank 1 receives (0,1,e3) and (3,0,e2): keeps rank 0's although e2 sorts
  // first expert-major.
  expectRows(l[1], {{1, 0, 1}});
  EXPECT_EQ(l[1].dropped, 1);
  EXPECT_EQ(l[1].tokensPerExpert, (std::vector<int64_t>{0, 1}));
  expectRows(l[3], {{1, 1, 0}});
  auto kept = ref::keptSlots(p, l);
  EXPECT_FALSE(kept[3][0]); // r3t0 slot 0 (e2) dropped at rank 1
  EXPECT_FALSE(kept[3][1]); // r3t0 slot 1 (e6) dropped at rank 3
  EXPECT_TRUE(kept[0][0]);
  EXPECT_FALSE(kept[0][3]); // masked
  // A token whose pairs are all dropped combines to zeros.
  std::vector<std::vector<float>> y(4);
  for (int r = 0; r < 4; ++r)
    y[r].assign(l[r].rows.size() * 2, 3.0f);
  auto w = ref::combine(p, l, y, true);
  EXPECT_EQ(w[3][0], 0.0f);
  EXPECT_EQ(w[3][1], 0.0f);
}

TEST(Reference, ValidationMessages) {
  ref::Problem p = designExample();
  p.routing[2] = {6, std::vector<int64_t>(12, -1), {}};
  p.routing[2].topkIdx[5 * 2 + 1] = 300;
  moecommResult_t code;
  EXPECT_EQ(ref::validate(p, &code),
            "rank 2 token 5 slot 1: expert id 300 out of range [-1, 8)");
  EXPECT_EQ(code, moecommInvalidArgument);
  p = designExample();
  p.topk = 3;
  p.routing[0] = {4, {-1, -1, -1, -1, -1, -1, -1, -1, -1, 7, 1, 7}, {}};
  p.routing[1] = {0, {}, {}};
  p.routing[3] = {0, {}, {}};
  EXPECT_EQ(ref::validate(p),
            "rank 0 token 3: expert id 7 appears in slots 0 and 2");
  p = designExample();
  p.numExperts = 10;
  EXPECT_EQ(ref::validate(p), "num_experts 10 is not divisible by 4 ranks");
  p = designExample();
  p.numExperts = int64_t(1) << 32;
  EXPECT_EQ(ref::validate(p),
            "rank 0: num_experts 4294967296 does not fit in 31 bits");
  p = designExample();
  p.routing[1].topkIdx[0] = -2;
  EXPECT_EQ(ref::validate(p),
            "rank 1 token 0 slot 0: expert id -2 out of range [-1, 8)");
  // T * K wraps int64 (the runtime's message for the same routing).
  p = designExample();
  p.routing[1].numTokens = int64_t(1) << 62;
  EXPECT_EQ(ref::validate(p), "rank 1: num_tokens 4611686018427387904 x topk "
                              "2 ids are more bytes than memory holds");
}

// DESIGN.md §8's example with 12 slots (3 per rank): experts 3, 4, 5 and 6
// get a second replica. Locality: r0t0's expert 5 and r0t1's expert 3 stay
// on node 0, r3t0's expert 6 on node 1 (slots 8 and 9 tie: rank 3 starts at
// its rotation, slot 9); r1t0's 7 and 1 have one slot each.
ref::Problem designExamplePlaced() {
  ref::Problem p = designExample();
  p.slotExperts = {0, 1, 5, 2, 3, 4, 4, 5, 6, 6, 7, 3};
  return p;
}

TEST(Reference, DesignExampleWithReplicas) {
  ref::Problem p = designExamplePlaced();
  ASSERT_EQ(ref::validate(p), "");
  EXPECT_EQ(p.localExperts(), 3);
  ref::Problem q = ref::physicalProblem(p);
  EXPECT_EQ(q.numExperts, 12);
  EXPECT_FALSE(q.hasPlacement());
  EXPECT_EQ(q.routing[0].topkIdx, (std::vector<int64_t>{0, 2, 4, -1}));
  EXPECT_EQ(q.routing[1].topkIdx, (std::vector<int64_t>{10, 1}));
  EXPECT_EQ(q.routing[3].topkIdx, (std::vector<int64_t>{3, 9}));
  auto l = ref::layout(p);
  expectRows(l[0], {{0, 0, 0}, {1, 1, 0}, {2, 0, 0}});
  expectRows(l[1], {{0, 3, 0}, {1, 0, 1}});
  expectRows(l[2], {});
  expectRows(l[3], {{0, 3, 0}, {1, 1, 0}});
  EXPECT_EQ(l[2].tokensPerExpert, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(l[0].expertOffsets, (std::vector<int64_t>{0, 1, 2, 3}));
  // Remote nodes per token: r1t0 {1}, r3t0 {0} (30 without replicas).
  EXPECT_EQ(ref::interNodeLowerBoundBytes(p, l, 10), 20);
}

// The combine of identity experts is Σ weight * x whatever the placement:
// the same bits with and without one (the choice moves rows, not sums).
TEST(Reference, IdentityCombineIgnoresThePlacement) {
  for (moecommReplicaChoice_t choice :
       {moecommReplicaLocality, moecommReplicaLoadOnly}) {
    ref::Problem placed = designExamplePlaced();
    placed.replicaChoice = choice;
    const ref::Problem plain = designExample();
    std::vector<std::vector<float>> x(4);
    for (int r = 0; r < 4; ++r)
      x[r] = ref::standardX(r, plain.routing[r].numTokens, plain.hidden);
    auto lp = ref::layout(placed), l = ref::layout(plain);
    auto dp = ref::dispatch(placed, lp, x), d = ref::dispatch(plain, l, x);
    for (bool weighted : {true, false}) {
      auto cp = ref::combine(placed, lp, dp, weighted);
      auto c = ref::combine(plain, l, d, weighted);
      for (int r = 0; r < 4; ++r) {
        ASSERT_EQ(cp[r].size(), c[r].size());
        for (size_t i = 0; i < c[r].size(); ++i)
          EXPECT_EQ(std::memcmp(&cp[r][i], &c[r][i], 4), 0)
              << "rank " << r << " element " << i;
      }
    }
  }
}

TEST(Reference, PlacementValidationMessages) {
  ref::Problem p = designExamplePlaced();
  p.replicaChoice = (moecommReplicaChoice_t)5;
  moecommResult_t code;
  EXPECT_EQ(ref::validate(p, &code), "rank 0: unknown replica choice 5");
  EXPECT_EQ(code, moecommInvalidArgument);
  p = designExamplePlaced();
  p.slotExperts[1] = 0;
  EXPECT_EQ(ref::validate(p), "rank 0: placement: logical expert 1 has no slot");
  p = designExamplePlaced();
  p.slotExperts.resize(10);
  EXPECT_EQ(ref::validate(p),
            "rank 0: placement: 10 slots are not divisible by 4 ranks");
  // E % W is the slots' business with a placement: 6 experts, 12 slots.
  p = designExamplePlaced();
  p.numExperts = 6;
  p.slotExperts = {0, 1, 2, 3, 4, 5, 5, 4, 3, 2, 1, 0};
  p.routing[1].topkIdx = {5, 1};
  p.routing[3].topkIdx = {2, 4};
  EXPECT_EQ(ref::validate(p), "");
  EXPECT_EQ(ref::layout(p)[0].tokensPerExpert.size(), 3u);
}

TEST(Reference, Fp8RoundTripIsPerRowAndBlock) {
  ref::Problem p;
  p.ranks = 1;
  p.numExperts = 1;
  p.topk = 1;
  p.hidden = 130; // one full and one partial block
  p.dataType = moecommFloat32;
  p.wireType = moecommFloat8E4M3;
  p.routing = {{2, {0, 0}, {}}};
  std::vector<std::vector<float>> x(1, std::vector<float>(260, 0.0f));
  x[0][0] = 448.0f * 3;     // block 0 of row 0: scale 3
  x[0][1] = 3.0f * 1.0625f; // 1.0625 is between e4m3 1.0 and 1.125: tie
  x[0][129] = 0.875f;       // block 1 of row 0: scale 2^-9
  x[0][130] = 7.0f;         // row 1 has its own scales
  auto l = ref::layout(p);
  auto d = ref::dispatch(p, l, x);
  EXPECT_EQ(d[0][0], 1344.0f);
  EXPECT_EQ(d[0][1], 3.0f); // tie to even (1.0)
  EXPECT_EQ(d[0][129], 0.875f);
  EXPECT_EQ(d[0][130], 7.0f);
  EXPECT_EQ(d[0][128], 0.0f);
  EXPECT_EQ(ref::rowBytes(moecommFloat8E4M3, 130), 130 + 8);
  EXPECT_EQ(ref::rowBytes(moecommBfloat16, 7168), 14336);
}

} // namespace

TEST(Reference, CombineBoundIsDocsRuntimeStatement) {
  // docs/runtime.md: L = 0 for per_expert and for one rank (no stage),
  // else the dispatch stages + 1.
  EXPECT_EQ(ref::combineRoundings(moecommPerExpert, 2), 0);
  EXPECT_EQ(ref::combineRoundings(moecommFlat, 0), 0);
  EXPECT_EQ(ref::combineRoundings(moecommFlat, 1), 2);
  EXPECT_EQ(ref::combineRoundings(moecommHierarchical, 1), 2);
  EXPECT_EQ(ref::combineRoundings(moecommHierarchical, 2), 3);
  EXPECT_EQ(ref::combineRoundings(moecommHierarchical, 2),
            ref::kMaxCombineRoundings);
  // ((L + 1) u + 3K 2^-24) A + (L + 1 + 3K) eta.
  ref::CombineBound bf16 = ref::combineBound(moecommBfloat16, 8, 3);
  EXPECT_EQ(bf16.relative, 4 * 0x1.0p-8 + 24 * 0x1.0p-24);
  EXPECT_EQ(bf16.absolute, 28 * 0x1.0p-133);
  EXPECT_EQ(bf16.of(2.0), 2 * bf16.relative + bf16.absolute);
  ref::CombineBound f32 = ref::combineBound(moecommFloat32, 2, 2);
  EXPECT_EQ(f32.relative, 3 * 0x1.0p-24 + 6 * 0x1.0p-24);
  EXPECT_EQ(f32.absolute, 9 * 0x1.0p-149);
}

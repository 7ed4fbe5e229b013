//===- PlacementRuntimeTest.cpp - Replicated experts, threads backend -----===//
//
// moecommLayoutDesc_t's expert placement (issue 16 part 3): the layout picks
// one replica per (token, logical expert) with chooseReplicas
// (moecomm/Model/Placement.h) and builds everything over the physical slots.
// Each cell runs every strategy and both choices against the oracle, whose
// layout comes from the same choice (ref::physicalProblem) and whose combine
// does not depend on the placement; the traffic counters must equal
// countTraffic over the physical routing, and hierarchical's inter-node bytes
// the lower bound of the chosen replicas.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include "moecomm/Model/Placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>

using namespace moecomm;
using namespace moecomm::test;
using namespace moecomm::test::shorthand;

namespace {

/// How a cell's spare slots (beyond one per expert) are filled.
enum class Spread {
  Random,    ///< seeded random experts: replicas anywhere, twice on a rank too
  EveryNode, ///< the last expert on the first rank of every node
  SameNode,  ///< each rank's first expert again on its node neighbour
};

/// A valid placement of E experts over S = W * perRank slots: slot s < E
/// holds a seeded shuffle of the experts (each at least once), the rest
/// follow `spread`.
std::vector<int64_t> makePlacement(int W, int G, int64_t E, int64_t perRank,
                                   Spread spread, uint64_t seed) {
  const int64_t S = W * perRank;
  std::vector<int64_t> slots((size_t)S);
  std::vector<int64_t> order((size_t)E);
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  // One copy of each expert, spread over the ranks' first slots.
  std::vector<int64_t> spare;
  for (int64_t s = 0; s < S; ++s)
    spare.push_back(s);
  for (int64_t e = 0; e < E; ++e) {
    int64_t s = (e % W) * perRank + e / W;
    slots[(size_t)s] = order[(size_t)e];
    spare.erase(std::find(spare.begin(), spare.end(), s));
  }
  for (int64_t s : spare) {
    const int r = (int)(s / perRank);
    switch (spread) {
    case Spread::Random:
      slots[(size_t)s] = std::uniform_int_distribution<int64_t>(0, E - 1)(rng);
      break;
    case Spread::EveryNode:
      slots[(size_t)s] = r % G == 0 ? E - 1 : order[(size_t)(s % E)];
      break;
    case Spread::SameNode:
      slots[(size_t)s] = slots[(size_t)((r ^ 1) % W * perRank)];
      break;
    }
  }
  return slots;
}

/// Every other cell of the oracle matrix below H = 7168 (T = 0 ranks, all
/// tokens to one expert, masked slots, capacity drops, the FP8 wire types, H
/// not a multiple of 32 or 128, one rank, one and two stages) and one with E
/// not a multiple of W, with a placement of one or two spare slots per rank:
/// replicas on random ranks, on every node and on the same node in turn
/// (one-expert cells: the hot expert on every node); two cells aligned.
std::vector<CaseSpec> placementCells() {
  const std::vector<CaseSpec> matrix = matrixCells();
  std::vector<CaseSpec> cells;
  for (size_t i = 0; i < matrix.size(); i += 2)
    if (matrix[i].H < 7168)
      cells.push_back(matrix[i]);
  cells.push_back(seededCell(2, 1, 5, 2, 7, F32, F32, RK::Uniform, 5));
  const Spread spreads[] = {Spread::Random, Spread::EveryNode,
                            Spread::SameNode};
  for (size_t i = 0; i < cells.size(); ++i) {
    CaseSpec &c = cells[i];
    const int64_t perRank = (c.E + c.W - 1) / c.W + 1 + (int64_t)(i % 2);
    const Spread spread =
        c.routing == RK::OneExpert ? Spread::EveryNode : spreads[i % 3];
    c.slotExperts = makePlacement(c.W, c.G, c.E, perRank, spread, c.seed);
    c.align = i % 5 == 3 ? 16 : 1;
  }
  return cells;
}

std::vector<CaseParam> placementParams() {
  std::vector<CaseSpec> specs;
  for (const CaseSpec &c : placementCells())
    for (moecommReplicaChoice_t choice :
         {moecommReplicaLocality, moecommReplicaLoadOnly}) {
      specs.push_back(c);
      specs.back().choice = choice;
    }
  return withEveryStrategy(specs);
}

class Replicas : public ::testing::TestWithParam<CaseParam> {};

TEST_P(Replicas, OraclesHoldOverThePhysicalSlots) {
  const CaseParam &param = GetParam();
  const Expected exp = computeExpected(makeProblem(param.spec));
  ASSERT_EQ(ref::validate(exp.problem), "");
  std::vector<RankRun> runs = runEveryRank(exp, param.strategy);
  for (int r = 0; r < exp.problem.ranks; ++r) {
    // localExperts is S/W; the counters equal countTraffic over the
    // physical routing (exp.summary).
    checkRank(exp, param.strategy, r, runs[r]);
    EXPECT_EQ(runs[r].info.localExperts,
              (int64_t)param.spec.slotExperts.size() / param.spec.W);
  }
  checkLowerBound(exp, runs[0]);
}

INSTANTIATE_TEST_SUITE_P(Cells, Replicas,
                         ::testing::ValuesIn(placementParams()),
                         [](const ::testing::TestParamInfo<CaseParam> &info) {
                           return caseParamName(info.param);
                         });

/// Everything a rank's run returns, traffic included, compared bit for bit.
void expectSameRun(const RankRun &a, const RankRun &b, int rank) {
  SCOPED_TRACE("rank " + std::to_string(rank));
  ASSERT_EQ(a.result, moecommSuccess) << a.error;
  ASSERT_EQ(b.result, moecommSuccess) << b.error;
  EXPECT_EQ(std::memcmp(&a.info, &b.info, sizeof(a.info)), 0) << "info";
  EXPECT_EQ(a.tokensPerExpert, b.tokensPerExpert);
  EXPECT_EQ(a.expertOffsets, b.expertOffsets);
  EXPECT_EQ(a.sources, b.sources);
  EXPECT_TRUE(sameBits(a.weights, b.weights)) << "recv weights";
  for (auto rows : {&RankRun::dispatch, &RankRun::combineW, &RankRun::combineU,
                    &RankRun::identityW, &RankRun::identityU})
    EXPECT_TRUE(sameBits(a.*rows, b.*rows));
  for (auto counters : {&RankRun::layoutTraffic, &RankRun::dispatchTraffic,
                        &RankRun::combineTraffic, &RankRun::dispatchGlobal,
                        &RankRun::combineGlobal})
    EXPECT_EQ(
        std::memcmp(&(a.*counters), &(b.*counters), sizeof(moecommTraffic_t)),
        0)
        << "traffic";
}

// S = E with slot e holding expert e is no placement: the same layout,
// rows, sums and bytes, bit for bit, with either choice.
class IdentityPlacement : public ::testing::TestWithParam<CaseParam> {};

TEST_P(IdentityPlacement, EqualsNoPlacementBitForBit) {
  const CaseParam &param = GetParam();
  CaseSpec identity = param.spec;
  identity.slotExperts = identityPlacement(identity.E).slotExperts;
  const Expected exp = computeExpected(makeProblem(param.spec));
  const Expected expId = computeExpected(makeProblem(identity));
  std::vector<RankRun> runs = runEveryRank(exp, param.strategy);
  std::vector<RankRun> runsId = runEveryRank(expId, param.strategy);
  for (int r = 0; r < exp.problem.ranks; ++r) {
    checkRank(expId, param.strategy, r, runsId[r]);
    expectSameRun(runs[r], runsId[r], r);
  }
}

std::vector<CaseParam> identityParams() {
  std::vector<CaseSpec> specs;
  for (const CaseSpec &c : matrixCells())
    if (c.H < 7168 && c.W >= 2) {
      specs.push_back(c);
      specs.back().choice =
          specs.size() % 2 ? moecommReplicaLocality : moecommReplicaLoadOnly;
    }
  // One cell per strategy keeps the suite short: strategies rotate.
  std::vector<CaseParam> all = withEveryStrategy(specs), some;
  for (size_t i = 0; i < specs.size(); ++i)
    some.push_back(all[4 * i + i % 4]);
  return some;
}

INSTANTIATE_TEST_SUITE_P(Cells, IdentityPlacement,
                         ::testing::ValuesIn(identityParams()),
                         [](const ::testing::TestParamInfo<CaseParam> &info) {
                           return caseParamName(info.param);
                         });

// With replicas on a token's own node, the greedy choice is optimal when
// every replicated expert of a token has a replica on its own node or on
// the node of its one unreplicated expert: then hierarchical's inter-node
// bytes are exactly Σ_tokens minRemoteNodes x row bytes, and below the
// bound without replicas. W = 8 as 4 nodes x 2, 8 logical experts, 16
// slots: rank r holds expert r and a replica of expert r % 4, so experts
// 0..3 live on two nodes (n and n + 2) and 4..7 on one.
TEST(ReplicaLowerBound, GreedyOptimalRoutingMeetsMinRemoteNodes) {
  const int W = 8, G = 2, K = 3;
  CaseSpec spec = seededCell(W, G, 8, K, 40, BF16, BF16, RK::Uniform, 6);
  spec.slotExperts.resize(16);
  for (int r = 0; r < W; ++r) {
    spec.slotExperts[2 * r] = r;
    spec.slotExperts[2 * r + 1] = r % 4;
  }
  ref::Problem p = makeProblem(spec);
  const ReplicaTable table(ExpertPlacement{8, spec.slotExperts}, W, G);
  const Topology &topo = table.slotTopology();
  // Replicated experts (0..3) with a replica on node n: 2(n % 2), +1.
  auto replicatedOn = [](int node, int i) { return 2 * (node % 2) + i; };
  int64_t minNodes = 0;
  std::mt19937_64 rng(7);
  for (int r = 0; r < W; ++r) {
    ref::RankRouting &rr = p.routing[r];
    for (int64_t t = 0; t < rr.numTokens; ++t) {
      int64_t *ids = &rr.topkIdx[t * K];
      ids[0] = 4 + (int64_t)(rng() % 4); // unreplicated, node ids[0] / 2
      ids[1] = replicatedOn(topo.node(r), (int)(rng() % 2));
      ids[2] = replicatedOn((int)ids[0] / 2, (int)(rng() % 2));
      if (ids[2] == ids[1])
        ids[2] = -1; // masked: a token lists an expert once
      minNodes += minRemoteNodes(table, r, ids, K);
    }
  }
  ASSERT_EQ(ref::validate(p), "");
  const Expected exp = computeExpected(p);
  std::vector<RankRun> runs = runEveryRank(exp, moecommHierarchical);
  for (int r = 0; r < W; ++r)
    checkRank(exp, moecommHierarchical, r, runs[r]);
  const int64_t rowBytes = wireRowBytes(p.wireType, p.hidden);
  uint64_t inter = 0;
  for (int sc = 0; sc < 3; ++sc)
    inter += runs[0].dispatchGlobal.bytes[0][sc][moecommLinkInterNode];
  EXPECT_EQ(inter, (uint64_t)(minNodes * rowBytes));
  ref::Problem unplaced = p;
  unplaced.slotExperts.clear();
  EXPECT_LT(inter, (uint64_t)ref::interNodeLowerBoundBytes(
                       unplaced, ref::layout(unplaced), rowBytes));
}

// All tokens to one expert replicated on every node: locality keeps every
// copy on its token's node (no inter-node byte), load-only spreads the rows
// over the replicas' ranks.
TEST(ReplicaChoice, HotExpertOnEveryNode) {
  CaseSpec spec = seededCell(4, 2, 8, 1, 16, F32, F32, RK::OneExpert, 12);
  spec.slotExperts = makePlacement(4, 2, 8, 3, Spread::EveryNode, spec.seed);
  for (moecommReplicaChoice_t choice :
       {moecommReplicaLocality, moecommReplicaLoadOnly}) {
    spec.choice = choice;
    const Expected exp = computeExpected(makeProblem(spec));
    std::vector<RankRun> runs = runEveryRank(exp, moecommHierarchical);
    std::vector<int64_t> rows;
    for (int r = 0; r < spec.W; ++r) {
      checkRank(exp, moecommHierarchical, r, runs[r]);
      rows.push_back(runs[r].info.recvRows);
    }
    uint64_t inter = 0;
    for (int sc = 0; sc < 3; ++sc)
      inter += runs[0].dispatchGlobal.bytes[0][sc][moecommLinkInterNode];
    if (choice == moecommReplicaLocality)
      EXPECT_EQ(inter, 0u);
    else
      EXPECT_LT(receiveImbalance(rows), (double)spec.W);
  }
}

} // namespace

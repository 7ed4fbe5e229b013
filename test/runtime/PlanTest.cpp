//===- PlanTest.cpp - Plans and exact traffic without a communicator ------===//
#include "TestUtil.h"

#include "moecomm/Runtime/Plan.h"
#include "moecomm/Model/Traffic.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace moecomm;
using namespace moecomm::test;

namespace {

TEST(Plan, StageRules) {
  using V = std::vector<moecommScope_t>;
  const auto D = moecommDirectionDispatch, C = moecommDirectionCombine;
  EXPECT_EQ(stageScopes(1, 1, moecommHierarchical, D), V{});
  EXPECT_EQ(stageScopes(8, 4, moecommPerExpert, D), V{moecommScopeGlobal});
  EXPECT_EQ(stageScopes(8, 4, moecommFlat, C), V{moecommScopeGlobal});
  EXPECT_EQ(stageScopes(8, 8, moecommHierarchical, D),
            V{moecommScopeIntraNode});
  EXPECT_EQ(stageScopes(8, 1, moecommHierarchical, C),
            V{moecommScopeInterNode});
  EXPECT_EQ(stageScopes(8, 4, moecommHierarchical, D),
            (V{moecommScopeInterNode, moecommScopeIntraNode}));
  EXPECT_EQ(stageScopes(8, 4, moecommHierarchical, C),
            (V{moecommScopeIntraNode, moecommScopeInterNode}));
}

TEST(Plan, KeptCountsDropTheTail) {
  // 3 ranks; destination 1 receives 2, 3, 4 from sources 0, 1, 2.
  std::vector<int64_t> pairs = {0, 2, 0, 0, 3, 0, 0, 4, 1};
  auto kept = keptPairCounts(pairs, 3, 4);
  EXPECT_EQ(kept, (std::vector<int64_t>{0, 2, 0, 0, 2, 0, 0, 0, 1}));
  EXPECT_EQ(keptPairCounts(pairs, 3, 0), pairs);
}

// Plans built from the global routing: every send matches the receiver's
// count, row maps stay in range, the destination side matches the
// reference, and the plans' traffic equals countTraffic exactly.
void checkPlans(const CaseSpec &spec) {
  SCOPED_TRACE(spec.name());
  ref::Problem p = makeProblem(spec);
  auto layout = ref::layout(p);
  Topology topo = topologyOf(p);
  auto views = routingViewsOf(p);
  RoutingSummary summary = summarizeRouting(topo, p.capacity, views);
  for (moecommStrategy_t s :
       {moecommPerExpert, moecommFlat, moecommHierarchical}) {
    std::vector<RankPlan> plans;
    ASSERT_EQ(buildPlans(topo, s, p.capacity, views, plans), "");
    StrategyTraffic tr = countTraffic(summary, s, 100, 10);
    for (int r = 0; r < p.ranks; ++r) {
      const RankPlan &plan = plans[r];
      EXPECT_EQ(plan.dropped, layout[r].dropped);
      EXPECT_EQ(plan.tokensPerExpert, layout[r].tokensPerExpert);
      ASSERT_EQ(plan.recvRows(), (int64_t)layout[r].rows.size());
      for (size_t i = 0; i < layout[r].rows.size(); ++i) {
        EXPECT_EQ(plan.recvSources[2 * i], layout[r].rows[i].srcRank);
        EXPECT_EQ(plan.recvSources[2 * i + 1], layout[r].rows[i].srcToken);
      }
      for (int dir = 0; dir < 2; ++dir) {
        const DirectionPlan &dp = dir == 0 ? plan.dispatch : plan.combine;
        const auto &stages = dir == 0 ? tr.dispatch : tr.combine;
        ASSERT_EQ(dp.stages.size(), stages.size());
        int64_t inRows = dir == 0 ? plan.numTokens : plan.recvRows();
        for (size_t i = 0; i < dp.stages.size(); ++i) {
          const StagePlan &st = dp.stages[i];
          EXPECT_EQ(st.scope, stages[i].scope);
          EXPECT_EQ(st.pack.rows(), st.sendRows());
          for (int64_t src : st.pack.src)
            EXPECT_TRUE(src >= 0 && src < inRows);
          // Exact per-rank traffic from the plan.
          int64_t bytes[2] = {0, 0}, msgs[2] = {0, 0};
          for (size_t m = 0; m < st.group.size(); ++m) {
            int peer = st.group[m];
            // The receiver expects exactly what this rank sends.
            const StagePlan &other =
                (dir == 0 ? plans[peer].dispatch : plans[peer].combine)
                    .stages[i];
            int me =
                (int)(std::find(other.group.begin(), other.group.end(), r) -
                      other.group.begin());
            ASSERT_LT(me, (int)other.group.size());
            EXPECT_EQ(st.sendCounts[m], other.recvCounts[me]);
            if (peer != r && st.sendCounts[m] > 0) {
              bytes[topo.link(r, peer)] +=
                  st.sendCounts[m] * (dir == 0 ? 100 : 10);
              msgs[topo.link(r, peer)] += 1;
            }
          }
          for (int l = 0; l < 2; ++l) {
            EXPECT_EQ(bytes[l], stages[i].ranks[r].bytesSent[l]);
            EXPECT_EQ(msgs[l], stages[i].ranks[r].messagesSent[l]);
          }
          EXPECT_EQ(st.sendRows(), stages[i].ranks[r].rowsSent);
          EXPECT_EQ(st.recvRows(), stages[i].ranks[r].rowsRecv);
          inRows = st.recvRows();
        }
        EXPECT_EQ(dp.unpack.rows(),
                  dir == 0 ? plan.recvRows() : plan.numTokens);
        for (int64_t src : dp.unpack.src)
          EXPECT_TRUE(src >= 0 && src < inRows);
      }
    }
    if (s == moecommHierarchical) {
      // Oracle 5 without moving a byte.
      EXPECT_EQ(tr.totalBytes(moecommDirectionDispatch, moecommLinkInterNode),
                ref::interNodeLowerBoundBytes(p, layout, 100));
      EXPECT_EQ(tr.totalBytes(moecommDirectionCombine, moecommLinkInterNode),
                ref::interNodeLowerBoundBytes(p, layout, 10));
    }
  }
}

TEST(Plan, ConsistentWithReferenceAndTraffic) {
  CaseSpec s;
  s.W = 8;
  s.G = 4;
  s.E = 32;
  s.K = 5;
  s.T = 13;
  s.routing = RoutingKind::UniformMasked;
  checkPlans(s);
  s.W = 16;
  s.G = 4;
  s.E = 64;
  s.K = 8;
  s.routing = RoutingKind::Skewed;
  s.capacity = 40;
  checkPlans(s);
  s.W = 12;
  s.G = 3;
  s.E = 24;
  s.K = 3;
  s.capacity = 0;
  s.routing = RoutingKind::EmptyRanks;
  checkPlans(s);
}

// Builds into `plans` the hierarchical plans of W=4 ranks, G=2 per node,
// E=4 experts, K=2 slots, with `routing` (one entry per rank). Returns
// buildPlans' message ("" = built).
std::string hierarchicalPlans4x2(std::vector<ref::RankRouting> routing,
                                 std::vector<RankPlan> &plans) {
  ref::Problem p;
  p.ranks = 4;
  p.ranksPerNode = 2;
  p.numExperts = 4;
  p.topk = 2;
  p.routing = std::move(routing);
  return buildPlans(topologyOf(p), moecommHierarchical, 0, routingViewsOf(p),
                    plans);
}

TEST(Plan, HierarchicalRelayOrder) {
  // W=4, G=2: rank 0's token 0 goes to experts on ranks 2 and 3 (node 1):
  // one inter-node row to relay 2, which forwards to itself and to rank 3.
  std::vector<RankPlan> plans;
  ASSERT_EQ(hierarchicalPlans4x2({{2, {3, 2, 1, -1}, {0.5f, 0.5f, 1.0f, 1.0f}},
                                  {0, {}, {}},
                                  {1, {3, -1}, {1.0f, 1.0f}},
                                  {0, {}, {}}},
                                 plans),
            "");
  const StagePlan &s0 = plans[0].dispatch.stages[0];
  EXPECT_EQ(s0.scope, moecommScopeInterNode);
  EXPECT_EQ(s0.group, (std::vector<int>{0, 2}));
  EXPECT_EQ(s0.sendCounts, (std::vector<int64_t>{1, 1})); // token 1, token 0
  EXPECT_EQ(s0.pack.src, (std::vector<int64_t>{1, 0}));
  const StagePlan &r1 = plans[2].dispatch.stages[1];
  EXPECT_EQ(r1.group, (std::vector<int>{2, 3}));
  // Relay 2 has stage-0 rows: (src 0, token 0) then (src 2, token 0). To
  // rank 2: (0,0) [expert 2]; to rank 3: (0,0), (2,0) [expert 3].
  EXPECT_EQ(r1.sendCounts, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(r1.pack.src, (std::vector<int64_t>{0, 0, 1}));
  // Rank 3: expert 3 rows ordered by source rank.
  EXPECT_EQ(plans[3].recvSources, (std::vector<int64_t>{0, 0, 2, 0}));
  // Combine at the relay sums the partials of ranks 2 and 3 for (0, 0).
  const RowMap &c1 = plans[2].combine.stages[1].pack;
  EXPECT_EQ(c1.offsets, (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(c1.src, (std::vector<int64_t>{0, 1, 2}));
  // The home rank sums its token's per-node partials: token 0 only from
  // node 1, token 1 only from node 0.
  const RowMap &un = plans[0].combine.unpack;
  EXPECT_EQ(un.offsets, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(un.src, (std::vector<int64_t>{1, 0}));
}

TEST(Plan, RelaySendsOtherNodesRowsFirst) {
  // W=4, G=2: tokens of rank 0 (node 0) and rank 2 (node 1) both go to
  // experts 0 and 1 (node 0). Relay 0 receives (src 0, token 0) from itself
  // and (src 2, token 0) from node 1, and forwards node 1's row first to
  // each of its ranks: in combine, the partial sums bound for node 1 are
  // then the first to reach it (PipelinedOp sends blocks in row order).
  std::vector<RankPlan> plans;
  ASSERT_EQ(hierarchicalPlans4x2({{1, {0, 1}, {0.5f, 0.5f}},
                                  {0, {}, {}},
                                  {1, {0, 1}, {0.5f, 0.5f}},
                                  {0, {}, {}}},
                                 plans),
            "");
  const StagePlan &r1 = plans[0].dispatch.stages[1];
  EXPECT_EQ(r1.group, (std::vector<int>{0, 1}));
  EXPECT_EQ(r1.sendCounts, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(r1.pack.src, (std::vector<int64_t>{1, 0, 1, 0}));
  // Rank 1's expert-major output is still ordered by source rank.
  EXPECT_EQ(plans[1].recvSources, (std::vector<int64_t>{0, 0, 2, 0}));
}

TEST(Plan, CountTrafficScalesTo1024Ranks) {
  CaseSpec s;
  s.W = 1024;
  s.G = 8;
  s.E = 2048;
  s.K = 8;
  s.T = 16;
  s.routing = RoutingKind::Uniform;
  ref::Problem p = makeProblem(s);
  Topology topo = topologyOf(p);
  RoutingSummary sum = summarizeRouting(topo, 0, routingViewsOf(p));
  auto layout = ref::layout(p);
  const int64_t row = wireRowBytes(moecommBfloat16, 7168);
  StrategyTraffic h = countTraffic(sum, moecommHierarchical, row, row);
  StrategyTraffic f = countTraffic(sum, moecommFlat, row, row);
  StrategyTraffic e = countTraffic(sum, moecommPerExpert, row, row);
  int64_t lb = ref::interNodeLowerBoundBytes(p, layout, row);
  EXPECT_EQ(h.totalBytes(moecommDirectionDispatch, moecommLinkInterNode), lb);
  EXPECT_GE(f.totalBytes(moecommDirectionDispatch, moecommLinkInterNode), lb);
  EXPECT_GE(e.totalBytes(moecommDirectionDispatch, moecommLinkInterNode),
            f.totalBytes(moecommDirectionDispatch, moecommLinkInterNode));
  // per_expert moves every kept pair: sum of all pairs minus self copies.
  int64_t pairs = 0;
  for (const auto &rr : p.routing)
    pairs += rr.numTokens * p.topk;
  int64_t self = 0;
  for (int r = 0; r < p.ranks; ++r)
    self += sum.pairs[(size_t)r * p.ranks + r];
  EXPECT_EQ(e.totalBytes(moecommDirectionDispatch, moecommLinkInterNode) +
                e.totalBytes(moecommDirectionDispatch, moecommLinkIntraNode),
            (pairs - self) * row);
}

TEST(Plan, CountTrafficUses64BitCounts) {
  // A synthetic summary with 2^33 tokens between two ranks on two nodes.
  RoutingSummary s;
  s.topo.ranks = 2;
  s.topo.ranksPerNode = 1;
  s.topo.numExperts = 2;
  const int64_t big = int64_t(1) << 33;
  s.pairs = {0, big, big, 0};
  s.tokenRanks = s.pairs;
  s.tokenNodes = s.pairs;
  StrategyTraffic t = countTraffic(s, moecommFlat, 14336, 14336);
  EXPECT_EQ(t.dispatch[0].ranks[0].bytesSent[moecommLinkInterNode],
            big * 14336);
  EXPECT_EQ(t.totalBytes(moecommDirectionCombine, moecommLinkInterNode),
            2 * big * 14336);
}

TEST(Plan, InvalidRoutingIsReported) {
  ref::Problem p;
  p.ranks = 2;
  p.numExperts = 4;
  p.topk = 2;
  p.routing = {{1, {0, 0}, {}}, {0, {}, {}}};
  std::vector<RankPlan> plans;
  EXPECT_EQ(buildPlans(topologyOf(p), moecommFlat, 0, routingViewsOf(p), plans),
            "rank 0 token 0: expert id 0 appears in slots 0 and 1");
  EXPECT_TRUE(plans.empty());
}

} // namespace

//===- CostModelTest.cpp - Alpha-beta model and uniform expectations ------===//
#include "TestUtil.h"

#include "moecomm/Model/CostModel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace moecomm;
using namespace moecomm::test;

namespace {

RoutingSummary summaryOf(const ref::Problem &p) {
  return summarizeRouting(topologyOf(p), p.capacity, routingViewsOf(p));
}

TEST(CostModel, Presets) {
  const LinkPreset *h100 = findLinkPreset("h100-dgx");
  const LinkPreset *h200 = findLinkPreset("h200-dgx");
  const LinkPreset *gb = findLinkPreset("gb200-nvl72");
  ASSERT_TRUE(h100 && h200 && gb);
  EXPECT_EQ(findLinkPreset("tpu"), nullptr);
  EXPECT_EQ(h200->ranksPerNode, 8);
  EXPECT_EQ(gb->ranksPerNode, 72);
  EXPECT_EQ(h200->link.intraBetaBytesPerSec, 450e9);
  EXPECT_EQ(h200->link.interBetaBytesPerSec, 50e9);
  EXPECT_EQ(gb->link.intraBetaBytesPerSec, 900e9);
  EXPECT_EQ(defaultLinkModel().interBetaBytesPerSec,
            h200->link.interBetaBytesPerSec);
}

TEST(CostModel, StageTimeIsMaxOverRanksAndLinks) {
  StageTraffic st;
  st.ranks.resize(2);
  st.ranks[0].bytesSent[moecommLinkIntraNode] = 900;
  st.ranks[0].messagesSent[moecommLinkIntraNode] = 3;
  st.ranks[1].bytesRecv[moecommLinkInterNode] = 100;
  st.ranks[1].messagesRecv[moecommLinkInterNode] = 1;
  moecommLinkModel_t m{1.0, 100.0, 5.0, 10.0};
  // rank 0 intra: 3 * 1 + 900 / 100 = 12; rank 1 inter: 5 + 100 / 10 = 15.
  EXPECT_DOUBLE_EQ(modelStageTime(st, m), 15.0);
  StrategyTraffic tr;
  tr.dispatch = {st, st};
  tr.combine = {st};
  ModelledTime t = modelTime(tr, m);
  EXPECT_DOUBLE_EQ(t.dispatchSec, 30.0);
  EXPECT_DOUBLE_EQ(t.combineSec, 15.0);
  EXPECT_DOUBLE_EQ(t.totalSec(), 45.0);
}

TEST(CostModel, ChoosesHierarchicalAcrossNodesAndFlatInOneNode) {
  CaseSpec s;
  s.W = 16;
  s.G = 8;
  s.E = 256;
  s.K = 8;
  s.T = 256;
  s.routing = RoutingKind::Uniform;
  ref::Problem p = makeProblem(s);
  const int64_t row = wireRowBytes(moecommBfloat16, 7168);
  ModelledTime times[3];
  EXPECT_EQ(chooseStrategy(summaryOf(p), row, row, defaultLinkModel(), times),
            moecommHierarchical);
  EXPECT_LT(times[moecommHierarchical].totalSec(),
            times[moecommFlat].totalSec());
  EXPECT_LT(times[moecommFlat].totalSec(), times[moecommPerExpert].totalSec());
  // One node: flat and the intra-only hierarchical form move the same rows;
  // the tie goes to flat.
  s.G = 16;
  p = makeProblem(s);
  EXPECT_EQ(chooseStrategy(summaryOf(p), row, row, defaultLinkModel()),
            moecommFlat);
  // A model where intra-node messages dominate prefers one stage (the
  // hierarchical fan-out adds an intra-node stage after the inter-node one).
  s.G = 8;
  p = makeProblem(s);
  moecommLinkModel_t slowMessages{1.0, 450e9, 0.0, 50e9};
  EXPECT_EQ(chooseStrategy(summaryOf(p), row, row, slowMessages), moecommFlat);
}

TEST(CostModel, ExpectedDistinctGroups) {
  // E = 4, K = 2, 2 groups of 2: P(a group gets none) = C(2,2)/C(4,2) = 1/6.
  EXPECT_DOUBLE_EQ(expectedDistinctGroups(4, 2, 2), 2.0 * (5.0 / 6.0));
  EXPECT_DOUBLE_EQ(expectedDistinctGroups(8, 8, 4), 4.0);
  EXPECT_DOUBLE_EQ(expectedDistinctGroups(8, 1, 8), 1.0);
  // Against sampling without replacement.
  std::mt19937_64 rng(5);
  const int64_t E = 256, groups = 8;
  const int K = 8, trials = 20000;
  double total = 0;
  std::vector<int64_t> all(E);
  for (int i = 0; i < trials; ++i) {
    for (int64_t e = 0; e < E; ++e)
      all[e] = e;
    std::vector<bool> hit(groups, false);
    for (int k = 0; k < K; ++k) {
      std::uniform_int_distribution<int64_t> d(k, E - 1);
      std::swap(all[k], all[d(rng)]);
      hit[all[k] / (E / groups)] = true;
    }
    for (bool h : hit)
      total += h;
  }
  EXPECT_NEAR(total / trials, expectedDistinctGroups(E, K, groups), 0.03);
}

TEST(CostModel, ExpectedTrafficMatchesUniformRouting) {
  CaseSpec s;
  s.W = 16;
  s.G = 4;
  s.E = 128;
  s.K = 6;
  s.T = 400;
  s.routing = RoutingKind::Uniform;
  ref::Problem p = makeProblem(s);
  double meanT = 0;
  for (const auto &r : p.routing)
    meanT += (double)r.numTokens / p.ranks;
  RoutingSummary sum = summaryOf(p);
  for (moecommStrategy_t st :
       {moecommPerExpert, moecommFlat, moecommHierarchical}) {
    StrategyTraffic exact = countTraffic(sum, st, 100, 50);
    ExpectedTraffic expect =
        expectedTrafficUniform(16, 4, 128, 6, meanT, st, 100, 50);
    ASSERT_EQ(exact.dispatch.size(), expect.dispatch.size());
    for (size_t i = 0; i < exact.dispatch.size(); ++i) {
      EXPECT_EQ(exact.dispatch[i].scope, expect.dispatch[i].scope);
      for (int l = 0; l < 2; ++l) {
        double mean = 0;
        for (const RankStageTraffic &r : exact.dispatch[i].ranks)
          mean += (double)r.bytesSent[l] / 16;
        EXPECT_NEAR(mean, expect.dispatch[i].bytesSent[l],
                    0.05 * expect.dispatch[i].bytesSent[l] + 1)
            << "strategy " << st << " stage " << i << " link " << l;
      }
    }
  }
  moecommLinkModel_t m = defaultLinkModel();
  EXPECT_EQ(chooseStrategyUniform(64, 8, 256, 8, 4096, 14336, 14336, m),
            moecommHierarchical);
  EXPECT_EQ(chooseStrategyUniform(8, 8, 256, 8, 4096, 14336, 14336, m),
            moecommFlat);
}

// uniformCosts is each strategy's expected traffic and modelled time, and
// picks the cheapest (chooseStrategyUniform returns that pick; the
// compiler's static choice and moecomm-cost-report's table come from it).
TEST(CostModel, UniformCostsOfEveryStrategy) {
  moecommLinkModel_t m = defaultLinkModel();
  UniformCosts costs = uniformCosts(64, 8, 256, 8, 4096, 14336, 14336, m);
  double best = costs.time[costs.best].totalSec();
  for (moecommStrategy_t s :
       {moecommPerExpert, moecommFlat, moecommHierarchical}) {
    ExpectedTraffic traffic =
        expectedTrafficUniform(64, 8, 256, 8, 4096, s, 14336, 14336);
    EXPECT_EQ(costs.traffic[s].dispatch.size(), traffic.dispatch.size());
    EXPECT_EQ(costs.time[s].totalSec(), modelTime(traffic, m).totalSec());
    EXPECT_LE(best, costs.time[s].totalSec()) << strategyName(s);
  }
  // A tie (hierarchical on one node costs what flat does) goes to the
  // earlier strategy.
  EXPECT_EQ(uniformCosts(8, 8, 256, 8, 4096, 14336, 14336, m).best,
            moecommFlat);
}

} // namespace

//===- CostModel.cpp - Alpha-beta time model of the strategies ------------===//
#include "moecomm/Model/CostModel.h"

#include <algorithm>
#include <cmath>

namespace moecomm {

// Alpha assumptions (per message, per direction): 2 us on NVLink (one
// NCCL/NVSHMEM peer transfer including its launch and completion signalling)
// and 5 us inter-node (an RDMA write through the NIC proxy plus the network
// round trip of its completion). Betas are the per-GPU, per-direction link
// bandwidths of DESIGN.md §7: NVLink 4 on H100/H200 DGX 450 GB/s, NVLink 5 on
// GB200 NVL72 900 GB/s; one 400 Gb/s (50 GB/s) NIC per GPU inter-node.
const std::vector<LinkPreset> &linkPresets() {
  static const std::vector<LinkPreset> presets = {
      {"h100-dgx", 8, {2e-6, 450e9, 5e-6, 50e9}},
      {"h200-dgx", 8, {2e-6, 450e9, 5e-6, 50e9}},
      {"gb200-nvl72", 72, {2e-6, 900e9, 5e-6, 50e9}},
  };
  return presets;
}

const LinkPreset *findLinkPreset(const std::string &name) {
  for (const LinkPreset &p : linkPresets())
    if (name == p.name)
      return &p;
  return nullptr;
}

moecommLinkModel_t defaultLinkModel() {
  return findLinkPreset("h200-dgx")->link;
}

namespace {
double linkTime(const moecommLinkModel_t &link, int cls, double messages,
                double bytes) {
  double alpha =
      cls == moecommLinkIntraNode ? link.intraAlphaSec : link.interAlphaSec;
  double beta = cls == moecommLinkIntraNode ? link.intraBetaBytesPerSec
                                            : link.interBetaBytesPerSec;
  return alpha * messages + (beta > 0 ? bytes / beta : 0.0);
}
} // namespace

double modelStageTime(const StageTraffic &stage,
                      const moecommLinkModel_t &link) {
  double worst = 0;
  for (const RankStageTraffic &r : stage.ranks)
    for (int cls = 0; cls < 2; ++cls) {
      double msgs = (double)std::max(r.messagesSent[cls], r.messagesRecv[cls]);
      double bytes = (double)std::max(r.bytesSent[cls], r.bytesRecv[cls]);
      worst = std::max(worst, linkTime(link, cls, msgs, bytes));
    }
  return worst;
}

ModelledTime modelTime(const StrategyTraffic &traffic,
                       const moecommLinkModel_t &link) {
  ModelledTime t;
  for (const StageTraffic &st : traffic.dispatch) {
    t.dispatchStageSec.push_back(modelStageTime(st, link));
    t.dispatchSec += t.dispatchStageSec.back();
  }
  for (const StageTraffic &st : traffic.combine) {
    t.combineStageSec.push_back(modelStageTime(st, link));
    t.combineSec += t.combineStageSec.back();
  }
  return t;
}

moecommStrategy_t chooseStrategy(const RoutingSummary &summary,
                                 int64_t dispatchRowBytes,
                                 int64_t combineRowBytes,
                                 const moecommLinkModel_t &link,
                                 ModelledTime *times) {
  moecommStrategy_t best = moecommPerExpert;
  double bestTime = 0;
  for (moecommStrategy_t s :
       {moecommPerExpert, moecommFlat, moecommHierarchical}) {
    ModelledTime t = modelTime(
        countTraffic(summary, s, dispatchRowBytes, combineRowBytes), link);
    if (times)
      times[s] = t;
    if (s == moecommPerExpert || t.totalSec() < bestTime) {
      best = s;
      bestTime = t.totalSec();
    }
  }
  return best;
}

double expectedDistinctGroups(int64_t numExperts, int topk, int64_t groups) {
  if (groups <= 0 || numExperts <= 0)
    return 0;
  int64_t per = numExperts / groups;
  // P(a group gets none of the K experts) = C(E - per, K) / C(E, K).
  double none = 1.0;
  for (int i = 0; i < topk; ++i) {
    double num = (double)(numExperts - per - i);
    double den = (double)(numExperts - i);
    if (num <= 0 || den <= 0) {
      none = 0;
      break;
    }
    none *= num / den;
  }
  return (double)groups * (1.0 - none);
}

namespace {
// A symmetric stage: every rank sends `rowsPerPeer` rows to each of
// `intraPeers` other ranks of its node, `interPeers` ranks of other nodes,
// and `selfRows` to itself; a message to a peer exists with probability
// `msgProb`.
ExpectedStage symmetricStage(moecommScope_t scope, double rowsPerPeer,
                             double selfRows, int intraPeers, int interPeers,
                             double msgProb, int64_t rowBytes) {
  ExpectedStage s;
  s.scope = scope;
  s.rowsSent = s.rowsRecv = rowsPerPeer * (intraPeers + interPeers) + selfRows;
  s.bytesSent[moecommLinkIntraNode] = s.bytesRecv[moecommLinkIntraNode] =
      rowsPerPeer * intraPeers * (double)rowBytes;
  s.bytesSent[moecommLinkInterNode] = s.bytesRecv[moecommLinkInterNode] =
      rowsPerPeer * interPeers * (double)rowBytes;
  s.messagesSent[moecommLinkIntraNode] = s.messagesRecv[moecommLinkIntraNode] =
      msgProb * intraPeers;
  s.messagesSent[moecommLinkInterNode] = s.messagesRecv[moecommLinkInterNode] =
      msgProb * interPeers;
  return s;
}
} // namespace

ExpectedTraffic expectedTrafficUniform(int ranks, int ranksPerNode,
                                       int64_t numExperts, int topk,
                                       double tokensPerRank,
                                       moecommStrategy_t strategy,
                                       int64_t dispatchRowBytes,
                                       int64_t combineRowBytes) {
  ExpectedTraffic out;
  out.strategy = strategy;
  const int W = ranks, G = ranksPerNode, N = ranks / ranksPerNode;
  const double T = tokensPerRank;
  if (W <= 1)
    return out;
  // Probability that a token has >= 1 expert on a given rank / node.
  double pRank = expectedDistinctGroups(numExperts, topk, W) / W;
  double pNode = expectedDistinctGroups(numExperts, topk, N) / N;
  auto atLeastOne = [](double p, double n) {
    return 1.0 - std::pow(1.0 - p, n);
  };
  for (int dir = 0; dir < 2; ++dir) {
    int64_t rb = dir == 0 ? dispatchRowBytes : combineRowBytes;
    std::vector<ExpectedStage> stages;
    if (strategy == moecommPerExpert) {
      double rows = T * topk / W;
      stages.push_back(symmetricStage(moecommScopeGlobal, rows, rows, G - 1,
                                      W - G, atLeastOne(pRank, T), rb));
    } else if (strategy != moecommHierarchical || G == W || G == 1) {
      moecommScope_t scope =
          stageScope(W, G, strategy, moecommDirectionDispatch, 0);
      double rows = T * pRank;
      stages.push_back(symmetricStage(scope, rows, rows, G - 1, W - G,
                                      atLeastOne(pRank, T), rb));
    } else {
      double rows0 = T * pNode;
      ExpectedStage inter = symmetricStage(moecommScopeInterNode, rows0, rows0,
                                           0, N - 1, atLeastOne(pNode, T), rb);
      double rows1 = N * T * pRank;
      ExpectedStage intra =
          symmetricStage(moecommScopeIntraNode, rows1, rows1, G - 1, 0,
                         atLeastOne(pRank, N * T), rb);
      if (dir == 0)
        stages = {inter, intra};
      else
        stages = {intra, inter};
    }
    (dir == 0 ? out.dispatch : out.combine) = stages;
  }
  return out;
}

ModelledTime modelTime(const ExpectedTraffic &traffic,
                       const moecommLinkModel_t &link) {
  ModelledTime t;
  auto stageTime = [&](const ExpectedStage &s) {
    double worst = 0;
    for (int cls = 0; cls < 2; ++cls)
      worst = std::max(
          worst, linkTime(link, cls,
                          std::max(s.messagesSent[cls], s.messagesRecv[cls]),
                          std::max(s.bytesSent[cls], s.bytesRecv[cls])));
    return worst;
  };
  for (const ExpectedStage &s : traffic.dispatch) {
    t.dispatchStageSec.push_back(stageTime(s));
    t.dispatchSec += t.dispatchStageSec.back();
  }
  for (const ExpectedStage &s : traffic.combine) {
    t.combineStageSec.push_back(stageTime(s));
    t.combineSec += t.combineStageSec.back();
  }
  return t;
}

UniformCosts uniformCosts(int ranks, int ranksPerNode, int64_t numExperts,
                          int topk, double tokensPerRank,
                          int64_t dispatchRowBytes, int64_t combineRowBytes,
                          const moecommLinkModel_t &link) {
  UniformCosts costs;
  for (moecommStrategy_t s :
       {moecommPerExpert, moecommFlat, moecommHierarchical}) {
    costs.traffic[s] =
        expectedTrafficUniform(ranks, ranksPerNode, numExperts, topk,
                               tokensPerRank, s, dispatchRowBytes,
                               combineRowBytes);
    costs.time[s] = modelTime(costs.traffic[s], link);
    if (costs.time[s].totalSec() < costs.time[costs.best].totalSec())
      costs.best = s;
  }
  return costs;
}

moecommStrategy_t
chooseStrategyUniform(int ranks, int ranksPerNode, int64_t numExperts, int topk,
                      double tokensPerRank, int64_t dispatchRowBytes,
                      int64_t combineRowBytes, const moecommLinkModel_t &link) {
  return uniformCosts(ranks, ranksPerNode, numExperts, topk, tokensPerRank,
                      dispatchRowBytes, combineRowBytes, link)
      .best;
}

} // namespace moecomm

//===- Traffic.cpp - Exact traffic of each strategy from routing ----------===//
#include "moecomm/Model/Traffic.h"

#include "moecomm/Model/Sizes.h"

#include <algorithm>

namespace moecomm {

const char *strategyName(moecommStrategy_t strategy) {
  switch (strategy) {
  case moecommPerExpert:
    return "per_expert";
  case moecommFlat:
    return "flat";
  case moecommHierarchical:
    return "hierarchical";
  case moecommAuto:
    return "auto";
  case moecommStrategyMinEnum: // not a strategy
  case moecommStrategyMaxEnum:
    break;
  }
  return "unknown";
}

const char *scopeName(moecommScope_t scope) {
  switch (scope) {
  case moecommScopeGlobal:
    return "global";
  case moecommScopeIntraNode:
    return "intra_node";
  case moecommScopeInterNode:
    return "inter_node";
  case moecommScopeMinEnum: // not a scope
  case moecommScopeMaxEnum:
    break;
  }
  return "unknown";
}

const char *directionName(moecommDirection_t direction) {
  switch (direction) {
  case moecommDirectionDispatch:
    return "dispatch";
  case moecommDirectionCombine:
    return "combine";
  case moecommDirectionAllToAll:
    return "all_to_all";
  case moecommDirectionMinEnum: // not a direction
  case moecommDirectionMaxEnum:
    break;
  }
  return "unknown";
}

std::vector<int64_t> pairCountsOfRank(const Topology &topo,
                                      const RoutingView &routing) {
  std::vector<int64_t> counts(topo.ranks, 0);
  for (int64_t t = 0; t < routing.numTokens; ++t)
    for (int k = 0; k < routing.topk; ++k) {
      int64_t e = routing.expert(t, k);
      if (e >= 0)
        counts[topo.rankOfExpert(e)]++;
    }
  return counts;
}

std::vector<int64_t> keptPairCounts(const std::vector<int64_t> &pairs,
                                    int ranks, int64_t capacity) {
  std::vector<int64_t> kept(pairs);
  if (capacity <= 0)
    return kept;
  for (int d = 0; d < ranks; ++d) {
    int64_t before = 0;
    for (int s = 0; s < ranks; ++s) {
      int64_t c = pairs[(size_t)s * ranks + d];
      int64_t room = std::max<int64_t>(0, capacity - before);
      kept[(size_t)s * ranks + d] = std::min(c, room);
      before += c;
    }
  }
  return kept;
}

std::vector<uint8_t> keptSlotMask(const Topology &topo,
                                  const RoutingView &routing,
                                  const int64_t *keptRow) {
  const int K = routing.topk;
  std::vector<uint8_t> mask(routing.numTokens * K, 0);
  std::vector<int64_t> used(topo.ranks, 0);
  // Per destination the pairs are kept in (token, expert) order: visit each
  // token's slots by ascending expert id.
  std::vector<std::pair<int64_t, int>> slots;
  for (int64_t t = 0; t < routing.numTokens; ++t) {
    slots.clear();
    for (int k = 0; k < K; ++k) {
      int64_t e = routing.expert(t, k);
      if (e >= 0)
        slots.push_back({e, k});
    }
    std::sort(slots.begin(), slots.end());
    for (auto &[e, k] : slots) {
      int d = topo.rankOfExpert(e);
      if (used[d] < keptRow[d]) {
        used[d]++;
        mask[t * K + k] = 1;
      }
    }
  }
  return mask;
}

void summarizeRank(const Topology &topo, const RoutingView &routing,
                   const std::vector<uint8_t> &keptMask, int64_t *tokenRanks,
                   int64_t *tokenNodes) {
  const int W = topo.ranks, N = topo.nodes(), K = routing.topk;
  std::fill(tokenRanks, tokenRanks + W, 0);
  std::fill(tokenNodes, tokenNodes + N, 0);
  std::vector<int64_t> lastRank(W, -1), lastNode(N, -1);
  for (int64_t t = 0; t < routing.numTokens; ++t)
    for (int k = 0; k < K; ++k) {
      if (!keptMask[t * K + k])
        continue;
      int d = topo.rankOfExpert(routing.expert(t, k));
      int n = topo.node(d);
      if (lastRank[d] != t) {
        lastRank[d] = t;
        tokenRanks[d]++;
      }
      if (lastNode[n] != t) {
        lastNode[n] = t;
        tokenNodes[n]++;
      }
    }
}

RoutingSummary summarizeRouting(const Topology &topo, int64_t capacity,
                                const std::vector<RoutingView> &routing) {
  const int W = topo.ranks, N = topo.nodes();
  RoutingSummary s;
  s.topo = topo;
  std::vector<int64_t> pairs((size_t)W * W);
  for (int r = 0; r < W; ++r) {
    std::vector<int64_t> row = pairCountsOfRank(topo, routing[r]);
    std::copy(row.begin(), row.end(), pairs.begin() + (size_t)r * W);
  }
  s.pairs = keptPairCounts(pairs, W, capacity);
  s.tokenRanks.assign((size_t)W * W, 0);
  s.tokenNodes.assign((size_t)W * N, 0);
  for (int r = 0; r < W; ++r) {
    std::vector<uint8_t> mask =
        keptSlotMask(topo, routing[r], &s.pairs[(size_t)r * W]);
    summarizeRank(topo, routing[r], mask, &s.tokenRanks[(size_t)r * W],
                  &s.tokenNodes[(size_t)r * N]);
  }
  return s;
}

namespace {

// Fills one stage's per-rank traffic from a dense [W][W] matrix of rows
// sent a -> b.
StageTraffic stageFromMatrix(const Topology &topo, moecommScope_t scope,
                             const std::vector<int64_t> &rows,
                             int64_t rowBytes) {
  const int W = topo.ranks;
  StageTraffic st;
  st.scope = scope;
  st.ranks.assign(W, RankStageTraffic());
  for (int a = 0; a < W; ++a)
    for (int b = 0; b < W; ++b) {
      int64_t n = rows[(size_t)a * W + b];
      if (n == 0)
        continue;
      st.ranks[a].rowsSent += n;
      st.ranks[b].rowsRecv += n;
      if (a == b)
        continue;
      int link = topo.link(a, b);
      const int64_t bytes = saturatingMul(n, rowBytes);
      st.ranks[a].bytesSent[link] =
          saturatingAdd(st.ranks[a].bytesSent[link], bytes);
      st.ranks[a].messagesSent[link] += 1;
      st.ranks[b].bytesRecv[link] =
          saturatingAdd(st.ranks[b].bytesRecv[link], bytes);
      st.ranks[b].messagesRecv[link] += 1;
    }
  return st;
}

std::vector<int64_t> transpose(const std::vector<int64_t> &m, int W) {
  std::vector<int64_t> t(m.size());
  for (int a = 0; a < W; ++a)
    for (int b = 0; b < W; ++b)
      t[(size_t)b * W + a] = m[(size_t)a * W + b];
  return t;
}

} // namespace

StrategyTraffic countTraffic(const RoutingSummary &summary,
                             moecommStrategy_t strategy,
                             int64_t dispatchRowBytes,
                             int64_t combineRowBytes) {
  const Topology &topo = summary.topo;
  const int W = topo.ranks, G = topo.ranksPerNode, N = topo.nodes();
  StrategyTraffic out;
  out.strategy = strategy;
  std::vector<moecommScope_t> scopes =
      stageScopes(W, G, strategy, moecommDirectionDispatch);
  // Dispatch row matrices, one per stage in execution order.
  std::vector<std::vector<int64_t>> mats;
  if (scopes.size() == 1) {
    mats.push_back(strategy == moecommPerExpert ? summary.pairs
                                                : summary.tokenRanks);
  } else if (scopes.size() == 2) {
    std::vector<int64_t> m0((size_t)W * W, 0), m1((size_t)W * W, 0);
    for (int s = 0; s < W; ++s)
      for (int n = 0; n < N; ++n)
        m0[(size_t)s * W + n * G + topo.localRank(s)] =
            summary.tokenNodes[(size_t)s * N + n];
    // Relay p forwards, to each rank d of its node, the tokens of every
    // source on its rail that have a kept expert on d.
    for (int s = 0; s < W; ++s)
      for (int d = 0; d < W; ++d) {
        int p = topo.node(d) * G + topo.localRank(s);
        m1[(size_t)p * W + d] += summary.tokenRanks[(size_t)s * W + d];
      }
    mats.push_back(std::move(m0));
    mats.push_back(std::move(m1));
  }
  for (size_t i = 0; i < mats.size(); ++i)
    out.dispatch.push_back(
        stageFromMatrix(topo, scopes[i], mats[i], dispatchRowBytes));
  for (size_t i = mats.size(); i-- > 0;)
    out.combine.push_back(stageFromMatrix(
        topo, scopes[i], transpose(mats[i], W), combineRowBytes));
  return out;
}

int64_t StrategyTraffic::totalBytes(moecommDirection_t direction,
                                    moecommLinkClass_t link) const {
  const std::vector<StageTraffic> &stages =
      direction == moecommDirectionCombine ? combine : dispatch;
  int64_t total = 0;
  for (const StageTraffic &st : stages)
    for (const RankStageTraffic &r : st.ranks)
      total = saturatingAdd(total, r.bytesSent[link]);
  return total;
}

int64_t StrategyTraffic::totalMessages(moecommDirection_t direction,
                                       moecommLinkClass_t link) const {
  const std::vector<StageTraffic> &stages =
      direction == moecommDirectionCombine ? combine : dispatch;
  int64_t total = 0;
  for (const StageTraffic &st : stages)
    for (const RankStageTraffic &r : st.ranks)
      total += r.messagesSent[link];
  return total;
}

} // namespace moecomm

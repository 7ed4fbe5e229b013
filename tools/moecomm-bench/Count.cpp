//===- Count.cpp - exact traffic and modelled time of a sweep cell --------===//

#include "Count.h"

#include "moecomm/Workload/Generators.h"
#include "moecomm/Workload/ModelConfig.h"
#include "moecomm/Workload/RoutingProblem.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace moecomm::bench {

Expected<RoutingGroup>
makeGroup(const workload::ModelConfig &config, const Cluster &topo,
          const workload::RoutingDist &dist, int64_t tokens, int64_t experts,
          uint64_t seed, const std::string &traceFile,
          std::shared_ptr<const workload::RoutingProblem> reuse) {
  RoutingGroup g;
  g.config = config;
  g.topo = topo;
  g.requested = dist;
  g.effective = effectiveRouting(dist, topo);
  g.tokens = tokens;
  g.experts = experts;
  g.seed = seed;

  if (reuse) {
    g.routing = std::move(reuse);
  } else {
    workload::GenerateOptions o;
    o.dist = g.effective;
    o.ranks = topo.ranks();
    o.ranksPerNode = topo.ranksPerNode;
    o.numExperts = experts;
    o.topk = config.topk;
    o.hidden = config.hidden;
    o.tokens = {tokens};
    o.seed = seed;
    o.groups = 0; // node-limited: one group per node
    o.traceFile = traceFile;
    Expected<workload::RoutingProblem> p = workload::generateRouting(o);
    if (!p)
      return p.takeError();
    g.routing = std::make_shared<const workload::RoutingProblem>(std::move(*p));
  }
  const workload::RoutingProblem &problem = *g.routing;

  const int W = topo.ranks();
  moecomm::Topology t;
  t.ranks = W;
  t.ranksPerNode = topo.ranksPerNode;
  t.numExperts = experts;
  g.views.resize(W);
  for (int r = 0; r < W; ++r) {
    RoutingView &v = g.views[r];
    v.numTokens = problem.numTokens[r];
    v.topk = problem.topk;
    v.topkIdx = problem.topkIdx[r].data();
    v.idxType = moecommInt64;
    v.topkWeights = problem.topkWeights[r].data();
  }
  g.summary = summarizeRouting(t, /*capacity=*/0, g.views);

  // DESIGN §5.5's bound, straight from topk_idx: distinct remote nodes.
  const int N = topo.nodes;
  const int64_t perRank = experts / W;
  std::vector<int64_t> stamp(N, -1);
  int64_t copies = 0, serial = 0;
  for (int r = 0; r < W; ++r) {
    const int home = r / topo.ranksPerNode;
    const std::vector<int64_t> &idx = problem.topkIdx[r];
    for (int64_t tok = 0; tok < problem.numTokens[r]; ++tok, ++serial)
      for (int k = 0; k < problem.topk; ++k) {
        const int64_t e = idx[tok * problem.topk + k];
        if (e < 0)
          continue;
        const int node = static_cast<int>(e / perRank) / topo.ranksPerNode;
        if (node != home && stamp[node] != serial) {
          stamp[node] = serial;
          ++copies;
        }
      }
  }
  g.remoteNodeCopies = copies;
  return g;
}

TrafficTotals totalsOf(const StrategyTraffic &traffic) {
  TrafficTotals t;
  for (int link = 0; link < 2; ++link)
    for (int dir = 0; dir < 2; ++dir) {
      const auto d = static_cast<moecommDirection_t>(dir);
      const auto l = static_cast<moecommLinkClass_t>(link);
      t.bytes[dir][link] = traffic.totalBytes(d, l);
      t.messages[dir][link] = traffic.totalMessages(d, l);
    }
  return t;
}

DtypeCounts countDtype(const RoutingGroup &group, workload::PayloadType dtype,
                       const std::vector<LinkPreset> &presets) {
  DtypeCounts c;
  c.dtype = dtype;
  const int64_t H = group.config.hidden;
  c.dispatchRowBytes = wireRowBytes(workload::wireType(dtype), H);
  c.combineRowBytes = wireRowBytes(workload::hostType(dtype), H);
  for (moecommStrategy_t s : kFixedStrategies) {
    c.traffic[s] =
        countTraffic(group.summary, s, c.dispatchRowBytes, c.combineRowBytes);
    c.totals[s] = totalsOf(c.traffic[s]);
  }
  const Cluster &topo = group.topo;
  double meanTokens = 0;
  for (int64_t t : group.problem().numTokens)
    meanTokens += static_cast<double>(t);
  meanTokens /= std::max(1, topo.ranks());
  for (const LinkPreset &p : presets) {
    std::array<ModelledTime, 3> times;
    for (moecommStrategy_t s : kFixedStrategies)
      times[s] = modelTime(c.traffic[s], p.link);
    c.times.push_back(times);
    c.autoChoice.push_back(chooseStrategy(group.summary, c.dispatchRowBytes,
                                          c.combineRowBytes, p.link));
    c.staticChoice.push_back(chooseStrategyUniform(
        topo.ranks(), topo.ranksPerNode, group.experts, group.config.topk,
        meanTokens, c.dispatchRowBytes, c.combineRowBytes, p.link));
  }
  return c;
}

bool routingDependsOnNodes(const workload::RoutingDist &dist) {
  return dist.kind == workload::RoutingDist::NodeLimited;
}

bool presetApplies(const LinkPreset &p, const Cluster &topo) {
  return topo.ranksPerNode <= p.ranksPerNode;
}

size_t choicePreset(const std::vector<LinkPreset> &presets, size_t autoPreset,
                    const Cluster &topo) {
  if (presetApplies(presets[autoPreset], topo))
    return autoPreset;
  size_t best = presets.size();
  for (size_t p = 0; p < presets.size(); ++p)
    if (presetApplies(presets[p], topo) &&
        (best == presets.size() ||
         presets[p].ranksPerNode < presets[best].ranksPerNode))
      best = p;
  return best == presets.size() ? autoPreset : best;
}

} // namespace moecomm::bench

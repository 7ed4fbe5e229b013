//===- Placements.cpp - the placement axis of moecomm-bench ---------------===//

#include "Placements.h"

#include "moecomm/Model/Placement.h"
#include "moecomm/Workload/Eplb.h"
#include "moecomm/Workload/ToolIO.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;

namespace moecomm::bench {

Expected<std::vector<PlacementSpec>> parsePlacements(StringRef list) {
  Expected<std::vector<std::string>> entries = splitList(list, "placements");
  if (!entries)
    return entries.takeError();
  std::vector<PlacementSpec> specs;
  StringSet<> seen;
  for (const std::string &entry : *entries) {
    PlacementSpec s;
    s.spec = entry;
    StringRef text(entry);
    if (text != "none") {
      long long r = -1;
      s.oneGroup = text.consume_front("eplb-global:");
      if ((!s.oneGroup && !text.consume_front("eplb:")) ||
          text.getAsInteger(10, r) || r < 0 || r > (1 << 24))
        return workload::inputError(
            formatv("bad --placements entry '{0}' (expected none, eplb:R or "
                    "eplb-global:R with R redundant slots in [0, 16777216])",
                    entry));
      s.redundant = r;
    }
    if (!seen.insert(entry).second)
      return workload::inputError(
          formatv("--placements lists '{0}' twice", entry));
    specs.push_back(s);
  }
  return specs;
}

Error checkPlacementFits(const PlacementSpec &spec, int64_t experts, int ranks,
                         StringRef where) {
  if (spec.isNone())
    return Error::success();
  const int64_t slots = experts + spec.redundant;
  const int64_t rem = slots % ranks;
  if (rem == 0)
    return Error::success();
  // The nearest R with (E + R) % W == 0; a tie goes up (more replicas).
  const int64_t down = spec.redundant - rem, up = spec.redundant + ranks - rem;
  const int64_t nearest = down >= 0 && rem < ranks - rem ? down : up;
  return workload::inputError(formatv(
      "--placements {0}: {1} + {2} = {3} slots are not divisible by "
      "{4} ranks ({5}); the nearest valid R is {6}",
      spec.spec, experts, spec.redundant, slots, ranks, where, nearest));
}

Expected<std::vector<double>> placementLoads(const RoutingGroup &g,
                                             const std::string &traceFile,
                                             bool fromRouting) {
  if (fromRouting) {
    std::vector<double> loads((size_t)g.experts, 0.0);
    for (const RoutingView &v : g.views)
      for (int64_t t = 0; t < v.numTokens; ++t)
        for (int k = 0; k < v.topk; ++k)
          if (int64_t e = v.expert(t, k); e >= 0)
            loads[(size_t)e] += 1;
    return loads;
  }
  workload::GenerateOptions o;
  o.dist = g.effective;
  o.ranks = g.topo.ranks();
  o.ranksPerNode = g.topo.ranksPerNode;
  o.numExperts = g.experts;
  o.topk = g.config.topk;
  o.seed = g.seed;
  o.traceFile = traceFile;
  return workload::expertWeights(o);
}

namespace {

/// What one (placement, choice) gives, before the wire dtype is applied.
struct Physical {
  RoutingSummary summary;
  double imbalance = 1;
};

/// Rows received per rank / mean, from a summary's [W][W] kept pairs.
double imbalanceOf(const RoutingSummary &s) {
  const int W = s.topo.ranks;
  std::vector<int64_t> received((size_t)W, 0);
  for (int src = 0; src < W; ++src)
    for (int dst = 0; dst < W; ++dst)
      received[(size_t)dst] += s.pairs[(size_t)src * W + dst];
  return receiveImbalance(received);
}

Physical choose(const RoutingGroup &g, const ReplicaTable &table,
                moecommReplicaChoice_t choice) {
  const int W = g.topo.ranks();
  std::vector<std::vector<int64_t>> ids((size_t)W);
  std::vector<RoutingView> views((size_t)W);
  for (int r = 0; r < W; ++r) {
    const RoutingView &logical = g.views[(size_t)r];
    ids[(size_t)r].resize((size_t)(logical.numTokens * logical.topk));
    chooseReplicas(table, choice, r, logical, ids[(size_t)r].data());
    RoutingView &v = views[(size_t)r];
    v = logical;
    v.topkIdx = ids[(size_t)r].data();
    v.idxType = moecommInt64;
  }
  Physical p;
  p.summary = summarizeRouting(table.slotTopology(), /*capacity=*/0, views);
  p.imbalance = imbalanceOf(p.summary);
  return p;
}

/// Σ over every rank's tokens of minRemoteNodes (rows).
int64_t placementRemoteCopies(const RoutingGroup &g,
                              const ReplicaTable &table) {
  int64_t copies = 0;
  for (int r = 0; r < g.topo.ranks(); ++r)
    copies += minRemoteCopies(table, r, g.views[(size_t)r]);
  return copies;
}

} // namespace

Expected<std::vector<PlacementRow>>
placementRows(const std::string &sweep, const RoutingGroup &g,
              ArrayRef<PlacementSpec> specs, ArrayRef<double> loads,
              ArrayRef<workload::PayloadType> dtypes) {
  const int W = g.topo.ranks();
  const int64_t H = g.config.hidden;
  // Expert groups for EPLB: the config's (DeepSeek's n_group) when they
  // divide the experts the cell uses (E may be scaled to the ranks).
  const int groups =
      g.config.numGroups >= 1 && g.experts % g.config.numGroups == 0
          ? g.config.numGroups
          : 1;
  PlacementRow base;
  base.sweep = sweep;
  base.config = g.config.name;
  base.routing = g.requested.spec;
  base.cluster = g.topo;
  base.experts = g.experts;
  base.tokens = g.tokens;
  const double noneImbalance = imbalanceOf(g.summary);

  std::vector<PlacementRow> rows;
  for (const PlacementSpec &spec : specs) {
    // (choice name, physical result) per row of this placement.
    std::vector<std::pair<std::string, Physical>> physical;
    int64_t copies = g.remoteNodeCopies;
    std::string policy = "-";
    if (spec.isNone()) {
      physical.push_back({"-", Physical{g.summary, noneImbalance}});
    } else {
      const int specGroups = spec.oneGroup ? 1 : groups;
      Expected<ExpertPlacement> p = workload::rebalanceExperts(
          loads, g.experts + spec.redundant, specGroups, g.topo.nodes, W);
      if (!p)
        return p.takeError();
      policy = workload::eplbIsHierarchical(specGroups, g.topo.nodes)
                   ? "hierarchical"
                   : "global";
      ReplicaTable table(*p, W, g.topo.ranksPerNode);
      copies = placementRemoteCopies(g, table);
      physical.push_back(
          {"locality", choose(g, table, moecommReplicaLocality)});
      physical.push_back(
          {"load_only", choose(g, table, moecommReplicaLoadOnly)});
    }
    for (workload::PayloadType dtype : dtypes) {
      const int64_t dispatchRow = wireRowBytes(workload::wireType(dtype), H);
      const int64_t combineRow = wireRowBytes(workload::hostType(dtype), H);
      auto inter = [&](const RoutingSummary &s, moecommStrategy_t strategy) {
        TrafficTotals t =
            totalsOf(countTraffic(s, strategy, dispatchRow, combineRow));
        return t.bytes[moecommDirectionDispatch][moecommLinkInterNode] +
               t.bytes[moecommDirectionCombine][moecommLinkInterNode];
      };
      const int64_t noReplicas = inter(g.summary, moecommHierarchical);
      for (const auto &[choice, phys] : physical) {
        PlacementRow row = base;
        row.dtype = dtype;
        row.placement = spec.spec;
        row.slots = g.experts + std::max<int64_t>(spec.redundant, 0);
        row.policy = policy;
        row.choice = choice;
        for (moecommStrategy_t s : kFixedStrategies)
          row.interBytes[s] = inter(phys.summary, s);
        row.lowerBound[0] = copies * dispatchRow;
        row.lowerBound[1] = copies * combineRow;
        row.noReplicaHierarchical = noReplicas;
        row.imbalance = phys.imbalance;
        rows.push_back(std::move(row));
      }
    }
  }
  return rows;
}

} // namespace moecomm::bench

//===- Eplb.cpp - DeepSeek's Expert Parallelism Load Balancer -------------===//
//
// One layer of eplb.py's rebalance_experts (see Eplb.h): the same three steps
// on plain vectors; torch's batched gathers become index arithmetic.
//
//===----------------------------------------------------------------------===//
#include "moecomm/Workload/Eplb.h"

#include "moecomm/Workload/ToolIO.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

using namespace llvm;

namespace moecomm::workload {
namespace {

/// Balanced packing of weights.size() = n items into `packs` packs of n /
/// packs items: pack[i] and rankInPack[i] (the order the pack received it).
void balancedPacking(ArrayRef<double> weights, int64_t packs,
                     std::vector<int64_t> &pack,
                     std::vector<int64_t> &rankInPack) {
  const int64_t n = (int64_t)weights.size();
  const int64_t perPack = n / packs;
  pack.assign((size_t)n, 0);
  rankInPack.assign((size_t)n, 0);
  if (perPack == 1) { // EPLB keeps the items in place
    std::iota(pack.begin(), pack.end(), 0);
    return;
  }
  std::vector<int64_t> order((size_t)n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return weights[(size_t)a] != weights[(size_t)b]
               ? weights[(size_t)a] > weights[(size_t)b]
               : a < b; // equal weights in index order
  });
  std::vector<double> packWeight((size_t)packs, 0.0);
  std::vector<int64_t> packItems((size_t)packs, 0);
  for (int64_t item : order) {
    int64_t best = -1;
    for (int64_t p = 0; p < packs; ++p)
      if (packItems[(size_t)p] < perPack &&
          (best < 0 || packWeight[(size_t)p] < packWeight[(size_t)best]))
        best = p;
    pack[(size_t)item] = best;
    rankInPack[(size_t)item] = packItems[(size_t)best]++;
    packWeight[(size_t)best] += weights[(size_t)item];
  }
}

/// Replicates weights.size() = n experts onto `slots` >= n physical experts:
/// slot i < n holds expert i; each further slot goes to the expert with the
/// largest weight per replica. phy2log [slots], count [n] replicas each.
void replicateExperts(ArrayRef<double> weights, int64_t slots,
                      std::vector<int64_t> &phy2log,
                      std::vector<int64_t> &count) {
  const int64_t n = (int64_t)weights.size();
  phy2log.resize((size_t)slots);
  std::iota(phy2log.begin(), phy2log.begin() + n, 0);
  count.assign((size_t)n, 1);
  for (int64_t s = n; s < slots; ++s) {
    int64_t best = 0;
    for (int64_t e = 1; e < n; ++e)
      if (weights[(size_t)e] / (double)count[(size_t)e] >
          weights[(size_t)best] / (double)count[(size_t)best])
        best = e;
    phy2log[(size_t)s] = best;
    count[(size_t)best]++;
  }
}

} // namespace

Expected<ExpertPlacement> rebalanceExperts(ArrayRef<double> weight,
                                           int64_t numReplicas, int numGroups,
                                           int numNodes, int numGpus) {
  const int64_t E = (int64_t)weight.size(), S = numReplicas;
  if (E < 1)
    return inputError("eplb: no logical experts");
  if (S < E)
    return inputError(formatv("eplb: {0} slots for {1} logical experts (need "
                              "at least one each)",
                              S, E));
  if (numGpus < 1 || S % numGpus != 0)
    return inputError(
        formatv("eplb: {0} slots are not divisible by {1} ranks", S, numGpus));
  if (numNodes < 1 || numGpus % numNodes != 0)
    return inputError(formatv("eplb: {0} ranks are not divisible by {1} nodes",
                              numGpus, numNodes));
  if (numGroups < 1)
    return inputError(
        formatv("eplb: num_groups must be >= 1, got {0}", numGroups));
  for (int64_t e = 0; e < E; ++e)
    if (!std::isfinite(weight[(size_t)e]) || weight[(size_t)e] < 0)
      return inputError(formatv("eplb: expert {0}'s load {1} is not a finite "
                                "number >= 0",
                                e, format("%g", weight[(size_t)e])));
  int64_t G = numGroups, N = numNodes;
  if (!eplbIsHierarchical(numGroups, numNodes)) {
    G = 1; // the global policy: one group on one node
    N = 1;
  } else if (E % G != 0) {
    return inputError(formatv(
        "eplb: {0} expert groups do not divide the {1} experts", G, E));
  }
  const int64_t groupSize = E / G, groupsPerNode = G / N;
  const int64_t expertsPerNode = E / N, slotsPerNode = S / N;
  const int64_t gpusPerNode = numGpus / N, slotsPerGpu = S / numGpus;

  // 1. Groups to nodes: mlog (node-major expert order) -> logical expert.
  std::vector<double> groupLoad((size_t)G, 0.0);
  for (int64_t e = 0; e < E; ++e)
    groupLoad[(size_t)(e / groupSize)] += weight[(size_t)e];
  std::vector<int64_t> groupNode, groupRank;
  balancedPacking(groupLoad, N, groupNode, groupRank);
  std::vector<int64_t> mlog2log((size_t)E);
  for (int64_t e = 0; e < E; ++e) {
    const int64_t g = e / groupSize;
    const int64_t mlog =
        (groupNode[(size_t)g] * groupsPerNode + groupRank[(size_t)g]) *
            groupSize +
        e % groupSize;
    mlog2log[(size_t)mlog] = e;
  }

  ExpertPlacement placement;
  placement.numLogical = E;
  placement.slotExperts.resize((size_t)S);
  std::vector<double> nodeLoad((size_t)expertsPerNode), phyLoad;
  std::vector<int64_t> phy2mlog, count, gpu, rankInGpu;
  for (int64_t n = 0; n < N; ++n) {
    // 2. Replicas within the node.
    for (int64_t i = 0; i < expertsPerNode; ++i)
      nodeLoad[(size_t)i] =
          weight[(size_t)mlog2log[(size_t)(n * expertsPerNode + i)]];
    replicateExperts(nodeLoad, slotsPerNode, phy2mlog, count);
    // 3. The node's physical experts to its ranks.
    phyLoad.resize((size_t)slotsPerNode);
    for (int64_t p = 0; p < slotsPerNode; ++p) {
      const int64_t m = phy2mlog[(size_t)p];
      phyLoad[(size_t)p] = nodeLoad[(size_t)m] / (double)count[(size_t)m];
    }
    balancedPacking(phyLoad, gpusPerNode, gpu, rankInGpu);
    for (int64_t p = 0; p < slotsPerNode; ++p) {
      const int64_t slot = n * slotsPerNode +
                           gpu[(size_t)p] * slotsPerGpu + rankInGpu[(size_t)p];
      placement.slotExperts[(size_t)slot] =
          mlog2log[(size_t)(n * expertsPerNode + phy2mlog[(size_t)p])];
    }
  }
  return placement;
}

} // namespace moecomm::workload

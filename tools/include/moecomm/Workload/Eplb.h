//===- Eplb.h - DeepSeek's Expert Parallelism Load Balancer -----*- C++ -*-===//
//
// The placement algorithm of DeepSeek's EPLB (github.com/deepseek-ai/EPLB,
// eplb.py's rebalance_experts), written here for one MoE layer: given each
// logical expert's load, it chooses which experts get the redundant slots and
// which rank hosts each physical slot, so that the ranks' loads balance. The
// result is moecomm's ExpertPlacement (EPLB's phy2log), the input of the
// replica choice (moecomm/Model/Placement.h).
//
// Policies, decided as the published one decides:
//   hierarchical (num_groups % num_nodes == 0): pack the expert groups
//     (E / num_groups consecutive experts each) onto the nodes with balanced
//     packing by group load; within each node, give each of its S / N slots
//     beyond its E / N experts to the expert with the largest load per
//     replica; pack each node's physical experts (load = expert load /
//     replicas) onto its num_gpus / N ranks with balanced packing. Expert
//     groups stay on one node.
//   global (otherwise): the same with one node and one group.
// Balanced packing puts n items into m packs of n / m items each: items in
// order of decreasing weight, each into the lightest pack that has room;
// with one item per pack, item i goes to pack i.
//
// Deterministic tie-breaks (the published code leaves the sort's order of
// equal weights to torch): equal weights are packed in ascending index
// order; equally light packs go to the lowest pack index; an equal largest
// load per replica goes to the lowest expert index. Loads are compared as
// doubles (EPLB uses float32, so exact ties may resolve differently there).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_WORKLOAD_EPLB_H
#define MOECOMM_WORKLOAD_EPLB_H

#include "moecomm/Model/Placement.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace moecomm::workload {

/// EPLB's rebalance_experts for one layer: `weight` [E = weight.size()] holds each logical
/// expert's load (any unit: tokens, rows; finite, >= 0); the result places
/// the E experts on `numReplicas` = S physical slots over `numGpus` = W
/// ranks (S / W consecutive slots per rank, moecomm's slot topology) in
/// `numNodes` nodes, with `numGroups` expert groups. It passes
/// checkPlacement(result, numGpus).
/// Errors (invalid_argument, one line): E < 1, S < E, S % W != 0,
/// numNodes < 1 or W % numNodes != 0, numGroups < 1, weight.size() != E,
/// a weight that is negative or not finite; in the hierarchical policy also
/// E % numGroups != 0 (whole groups).
llvm::Expected<ExpertPlacement> rebalanceExperts(llvm::ArrayRef<double> weight,
                                                 int64_t numReplicas,
                                                 int numGroups, int numNodes,
                                                 int numGpus);

/// Whether rebalanceExperts uses the hierarchical policy for these counts.
inline bool eplbIsHierarchical(int numGroups, int numNodes) {
  return numNodes >= 1 && numGroups % numNodes == 0;
}

} // namespace moecomm::workload

#endif // MOECOMM_WORKLOAD_EPLB_H

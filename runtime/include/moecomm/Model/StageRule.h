//===- StageRule.h - Exchange stages of each strategy -----------*- C++ -*-===//
//
// How many exchange stages a strategy has on a topology, and the scope of
// each (DESIGN.md §2). The dialect's verifiers and its split, the runtime's
// plans and the traffic model all plan with this one rule:
//
//   W == 1                      -> 0 stages
//   per_expert, flat            -> 1 stage, scope global
//   hierarchical, G == W        -> 1 stage, intra_node
//   hierarchical, G == 1        -> 1 stage, inter_node
//   hierarchical, otherwise     -> dispatch [inter_node, intra_node],
//                                  combine  [intra_node, inter_node]
//
// Combine stage i mirrors dispatch stage S-1-i. W is the number of ranks, G
// the ranks per node (W >= 1, G >= 1, G divides W).
//
// Library: moecomm_model (C++17, no dependencies). Namespace moecomm.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_MODEL_STAGERULE_H
#define MOECOMM_MODEL_STAGERULE_H

#include "moecomm/moecomm.h"

#include <cstdint>
#include <vector>

namespace moecomm {

/// Exchange stages of `strategy` (not moecommAuto: it has no plan of its
/// own) on W = `ranks` ranks of G = `ranksPerNode` per node: 0, 1 or 2.
int numStages(int64_t ranks, int64_t ranksPerNode, moecommStrategy_t strategy);

/// Scope of exchange stage `stage` (in [0, numStages)) of `direction`
/// (dispatch or combine).
moecommScope_t stageScope(int64_t ranks, int64_t ranksPerNode,
                          moecommStrategy_t strategy,
                          moecommDirection_t direction, int64_t stage);

/// The scopes of every stage of `direction`, in execution order.
std::vector<moecommScope_t> stageScopes(int ranks, int ranksPerNode,
                                        moecommStrategy_t strategy,
                                        moecommDirection_t direction);

} // namespace moecomm

#endif // MOECOMM_MODEL_STAGERULE_H

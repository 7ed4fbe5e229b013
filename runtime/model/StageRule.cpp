//===- StageRule.cpp - Exchange stages of each strategy -------------------===//
#include "moecomm/Model/StageRule.h"

namespace moecomm {

int numStages(int64_t ranks, int64_t ranksPerNode, moecommStrategy_t strategy) {
  if (ranks <= 1)
    return 0;
  if (strategy != moecommHierarchical)
    return 1;
  return (ranksPerNode == ranks || ranksPerNode == 1) ? 1 : 2;
}

moecommScope_t stageScope(int64_t ranks, int64_t ranksPerNode,
                          moecommStrategy_t strategy,
                          moecommDirection_t direction, int64_t stage) {
  if (strategy != moecommHierarchical)
    return moecommScopeGlobal;
  if (ranksPerNode == ranks)
    return moecommScopeIntraNode;
  if (ranksPerNode == 1)
    return moecommScopeInterNode;
  // Dispatch crosses the slow network first (one copy per node); combine
  // reduces inside the node first and crosses it last.
  bool interFirst = direction == moecommDirectionDispatch;
  return (stage == 0) == interFirst ? moecommScopeInterNode
                                    : moecommScopeIntraNode;
}

std::vector<moecommScope_t> stageScopes(int ranks, int ranksPerNode,
                                        moecommStrategy_t strategy,
                                        moecommDirection_t direction) {
  std::vector<moecommScope_t> scopes;
  for (int i = 0, e = numStages(ranks, ranksPerNode, strategy); i < e; ++i)
    scopes.push_back(stageScope(ranks, ranksPerNode, strategy, direction, i));
  return scopes;
}

} // namespace moecomm

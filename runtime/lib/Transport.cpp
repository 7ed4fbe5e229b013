//===- Transport.cpp - Shared helpers of the transports -------------------===//
#include "Transport.h"

#include "moecomm/Runtime/Plan.h"

namespace moecomm {

std::vector<int> Transport::group(moecommScope_t scope) const {
  Topology topo;
  topo.ranks = size_;
  topo.ranksPerNode = ranksPerNode_;
  return scopeGroup(topo, scope, rank_);
}

int Transport::memberIndex(moecommScope_t scope) const {
  switch (scope) {
  case moecommScopeIntraNode:
    return rank_ % ranksPerNode_;
  case moecommScopeInterNode:
    return rank_ / ranksPerNode_;
  default:
    return rank_;
  }
}

} // namespace moecomm

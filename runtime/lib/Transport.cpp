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

std::unique_ptr<PendingGather> Transport::allGatherStart(uint64_t seq,
                                                         const void *mine,
                                                         int64_t bytes,
                                                         void *all) {
  auto pending = std::make_unique<PendingGather>();
  pending->status = allGather(seq, mine, bytes, all);
  pending->done = true;
  return pending;
}

bool Transport::testGather(PendingGather &pending) { return pending.done; }

Status Transport::waitGather(PendingGather &pending) { return pending.status; }

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

//===- Placement.h - Replicated experts and the replica choice --*- C++ -*-===//
//
// An expert placement maps physical expert slots to logical experts
// (DeepSeek EPLB's `phy2log`): slot s in [0, S) holds a copy of logical
// expert slotExperts[s], and rank r hosts slots [r*S/W, (r+1)*S/W) -- the
// Topology of the physical slots (numExperts = S). A logical expert with
// several slots is replicated (EPLB's redundant experts of hot experts).
//
// With replicas a token can reach an expert on its own node or on a node it
// already sends to, so the hierarchical strategy's inter-node lower bound
// (DESIGN.md §7: Σ_tokens distinct remote nodes) itself drops. The replica
// choice rewrites one rank's logical top-k ids into physical slot ids before
// the layout is built; dispatch, combine and cached_dispatch then move rows
// between slots exactly as without a placement, and combine mirrors the
// choice because it reuses the layout.
//
// The choice (moecommReplicaChoice_t) is a pure function of the placement,
// the topology, the source rank and that rank's routing, so every backend
// and the oracle make the same one. Each rank picks for its own tokens, in
// token order; a slot's load is the rows this rank has sent it so far.
//
// moecommReplicaLocality: each replica has a cap on this rank's rows. Of
// the c (token, expert) pairs this rank routes to an expert's n replicas,
// load-only deals the first c % n replicas (in its rank-rotated order)
// ceil(c / n) rows and the others floor(c / n); with c >= n those are the
// caps, so every slot receives from this rank exactly load-only's rows (the
// same receive loads: the placement's packing assumes them) while the choice
// of which tokens go where follows locality. With c < n each replica may
// take one row, so locality also picks which replicas a small (decode-sized)
// batch uses. Three passes over the rank's tokens, each in token order
// (masked slots stay -1; a token's visited nodes are its own node and the
// nodes of the slots it has; a free replica is one under its cap on a
// visited node):
//   1. A logical expert with one slot takes it; then each expert with
//      exactly one free replica takes it.
//   2. Each expert left with a free replica takes one -- on the token's own
//      node if it has one there, else on another visited node -- the least
//      loaded of those. So the tokens that need no new node come first to
//      the caps, the most constrained first.
//   3. Repeat until every expert has a slot: the node holding replicas
//      under their cap of the most remaining experts becomes visited
//      (ties: the first node after the token's own node, cyclically), and
//      the experts left take free replicas as in 2.
// Without caps, locality would send every own-node token of a hot expert to
// the own node's replica: 1.4-1.7x load-only's imbalance at DeepSeek-V3 8x8
// (docs/BENCHMARKS.md, "Replicated experts").
// moecommReplicaLoadOnly: each expert takes its least-loaded replica.
// Ties between equally loaded replicas go to the first after rotating an
// expert's replica list (slots ascending) by the source rank, so ranks start
// on different replicas. Expert order within a token: slot order k.
//
// Library: moecomm_model (C++17, no dependencies). Namespace moecomm.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_MODEL_PLACEMENT_H
#define MOECOMM_MODEL_PLACEMENT_H

#include "moecomm/Model/Traffic.h"
#include "moecomm/moecomm.h"

#include <cstdint>
#include <string>
#include <vector>

namespace moecomm {

/// A placement: numLogical experts E over S = slotExperts.size() slots.
struct ExpertPlacement {
  int64_t numLogical = 0;
  std::vector<int64_t> slotExperts; ///< [S] logical expert of each slot

  int64_t numSlots() const { return (int64_t)slotExperts.size(); }
};

/// "locality" or "load_only" (the tools' and Python's spelling); "unknown"
/// for values outside the enum.
const char *replicaChoiceName(moecommReplicaChoice_t choice);

/// The identity placement of E experts (slot e holds expert e).
ExpertPlacement identityPlacement(int64_t numLogical);

/// "" when `p` is valid for W = `ranks`, else a one-line message: E >= 1,
/// S >= E, S % W == 0, every slot's expert in [0, E), every expert in at
/// least one slot. E.g. "placement: logical expert 3 has no slot".
std::string checkPlacement(const ExpertPlacement &p, int ranks);

/// The placement's replicas, looked up per logical expert, on a topology of
/// its slots. Build it once per placement (O(S) memory).
class ReplicaTable {
public:
  /// `p` must pass checkPlacement for `ranks`.
  ReplicaTable(const ExpertPlacement &p, int ranks, int ranksPerNode);

  /// The topology of the physical slots (numExperts = S).
  const Topology &slotTopology() const { return topo; }
  int64_t numLogical() const { return (int64_t)first.size() - 1; }
  /// Slots of logical expert e, ascending: [begin, end) into slots().
  const int64_t *replicasBegin(int64_t e) const { return &slots[first[e]]; }
  const int64_t *replicasEnd(int64_t e) const { return &slots[first[e + 1]]; }
  int64_t replicaCount(int64_t e) const { return first[e + 1] - first[e]; }

private:
  Topology topo;
  std::vector<int64_t> first; ///< [E+1] CSR row starts into slots
  std::vector<int64_t> slots; ///< [S] slots grouped by logical expert
};

/// The replica choice of one (valid) rank's routing: logical ids in
/// [-1, E) -> physicalIds [T][K] (int64) slot ids in [-1, S), by `choice`
/// (the rule above). `rank` in [0, W).
void chooseReplicas(const ReplicaTable &table, moecommReplicaChoice_t choice,
                    int rank, const RoutingView &logical, int64_t *physicalIds);

/// The fewest remote nodes one token must send to given the placement: the
/// smallest set of nodes other than the source's own that, with the own
/// node, holds a replica of each of the token's non-masked logical experts
/// (an exact search; experts[k] = -1 are masked). Σ over tokens times the
/// row bytes is the placement's hierarchical inter-node lower bound, which
/// equals DESIGN.md §7's without replicas.
int minRemoteNodes(const ReplicaTable &table, int rank, const int64_t *experts,
                   int topk);

/// Σ over one (valid) rank's tokens of minRemoteNodes: the rows that rank
/// must send inter-node, at least, in one direction of hierarchical.
int64_t minRemoteCopies(const ReplicaTable &table, int rank,
                        const RoutingView &logical);

/// max / mean of rowsPerRank (received rows per rank): 1 is perfect
/// balance; 1 when every rank receives nothing.
double receiveImbalance(const std::vector<int64_t> &rowsPerRank);

} // namespace moecomm

#endif // MOECOMM_MODEL_PLACEMENT_H

//===- Placement.cpp - Replicated experts and the replica choice ----------===//
#include "moecomm/Model/Placement.h"

#include <algorithm>
#include <string>

namespace moecomm {

const char *replicaChoiceName(moecommReplicaChoice_t choice) {
  static const char *const names[] = {"locality", "load_only"}; // by value
  return choice == moecommReplicaLocality || choice == moecommReplicaLoadOnly
             ? names[choice]
             : "unknown";
}

ExpertPlacement identityPlacement(int64_t numLogical) {
  ExpertPlacement p;
  p.numLogical = numLogical;
  p.slotExperts.resize((size_t)std::max<int64_t>(numLogical, 0));
  for (int64_t e = 0; e < numLogical; ++e)
    p.slotExperts[(size_t)e] = e;
  return p;
}

std::string checkPlacement(const ExpertPlacement &p, int ranks) {
  const int64_t E = p.numLogical, S = p.numSlots();
  if (E < 1)
    return "placement: num_logical_experts must be >= 1, got " +
           std::to_string(E);
  if (S < E)
    return "placement: " + std::to_string(S) + " slots for " +
           std::to_string(E) + " logical experts (need at least one each)";
  if (ranks < 1 || S % ranks != 0)
    return "placement: " + std::to_string(S) + " slots are not divisible by " +
           std::to_string(ranks) + " ranks";
  std::vector<uint8_t> seen((size_t)E, 0);
  for (int64_t s = 0; s < S; ++s) {
    int64_t e = p.slotExperts[(size_t)s];
    if (e < 0 || e >= E)
      return "placement: slot " + std::to_string(s) + " holds expert " +
             std::to_string(e) + ", out of range [0, " + std::to_string(E) +
             ")";
    seen[(size_t)e] = 1;
  }
  for (int64_t e = 0; e < E; ++e)
    if (!seen[(size_t)e])
      return "placement: logical expert " + std::to_string(e) + " has no slot";
  return "";
}

ReplicaTable::ReplicaTable(const ExpertPlacement &p, int ranks,
                           int ranksPerNode) {
  topo.ranks = ranks;
  topo.ranksPerNode = ranksPerNode;
  topo.numExperts = p.numSlots();
  first.assign((size_t)p.numLogical + 1, 0);
  for (int64_t e : p.slotExperts)
    first[(size_t)e + 1]++;
  for (size_t e = 0; e < (size_t)p.numLogical; ++e)
    first[e + 1] += first[e];
  slots.resize((size_t)p.numSlots());
  std::vector<int64_t> next(first.begin(), first.end() - 1);
  for (int64_t s = 0; s < p.numSlots(); ++s) // ascending within an expert
    slots[(size_t)next[(size_t)p.slotExperts[(size_t)s]]++] = s;
}

namespace {

/// One rank's state while it chooses: its slot loads and a token's scratch.
class Chooser {
public:
  Chooser(const ReplicaTable &table, int rank)
      : table(table), topo(table.slotTopology()), rank(rank),
        own(topo.node(rank)), load((size_t)topo.numExperts, 0),
        cap((size_t)topo.numExperts, 0) {}

  /// Each replica's cap on the rows of this rank. Of the c (token, expert)
  /// pairs this rank routes to expert e's n replicas, load-only (least
  /// loaded, ties to the first after rotating the replicas by the rank)
  /// deals them round robin: the first c % n replicas in rotated order get
  /// ceil(c / n), the others floor(c / n). With c >= n those are the caps:
  /// they sum to c, so locality fills each replica exactly to its cap and
  /// every slot gets the same rows from this rank as under load-only (the
  /// same receive load), while locality picks which tokens go where. With
  /// c < n each replica may take one row, so locality also picks which c
  /// replicas are used (a decode-sized batch keeps its tokens near); load
  /// differs from load-only's by at most that one row per replica.
  void countCaps(const RoutingView &logical) {
    std::vector<int64_t> pairs((size_t)table.numLogical(), 0);
    for (int64_t t = 0; t < logical.numTokens; ++t)
      for (int k = 0; k < logical.topk; ++k)
        if (int64_t e = logical.expert(t, k); e >= 0)
          pairs[(size_t)e]++;
    for (int64_t e = 0; e < table.numLogical(); ++e) {
      const int64_t n = table.replicaCount(e), c = pairs[(size_t)e];
      for (int64_t i = 0; i < n; ++i)
        cap[(size_t)rotatedReplica(e, i)] =
            c < n ? (c > 0 ? 1 : 0) : c / n + (i < c % n ? 1 : 0);
    }
  }

  /// Replica i of `e` in the list rotated by this rank: the order both the
  /// caps and load-only's ties follow, so that each cap is the row count
  /// load-only gives that replica.
  int64_t rotatedReplica(int64_t e, int64_t i) const {
    return table.replicasBegin(e)[(i + rank) % table.replicaCount(e)];
  }

  /// The least-loaded replica of `e` among those `accept`ed, or -1. Ties:
  /// the first after rotating the replica list by the rank.
  template <typename Accept> int64_t leastLoaded(int64_t e, Accept accept) {
    const int64_t n = table.replicaCount(e);
    int64_t best = -1;
    for (int64_t i = 0; i < n; ++i) {
      int64_t s = rotatedReplica(e, i);
      if (accept(s) && (best < 0 || load[(size_t)s] < load[(size_t)best]))
        best = s;
    }
    return best;
  }

  /// Whether replica `slot` may take one more row under the locality
  /// rule. Some replica of an expert always may: the rows its replicas took
  /// so far are fewer than its pairs, which their caps sum to.
  bool underCap(int64_t slot) const {
    return load[(size_t)slot] < cap[(size_t)slot];
  }

  int64_t take(int64_t slot) {
    load[(size_t)slot]++;
    return slot;
  }

  bool isVisited(int node) const {
    return std::find(visited.begin(), visited.end(), node) != visited.end();
  }
  void visit(int node) {
    if (!isVisited(node))
      visited.push_back(node);
  }

  /// Locality, first pass: single-slot experts, then the experts with
  /// exactly one replica under its cap on the nodes the token visits.
  void chooseForced(const int64_t *experts, int K, int64_t *out) {
    for (int k = 0; k < K; ++k) {
      int64_t e = experts[k];
      out[k] = -1;
      if (e >= 0 && table.replicaCount(e) == 1)
        out[k] = take(*table.replicasBegin(e));
    }
    visitAssigned(experts, K, out);
    assignOnVisited(experts, K, out, /*onlyUnique=*/true);
  }

  /// Locality, second pass: replicas under their cap on visited nodes.
  void chooseNearby(const int64_t *experts, int K, int64_t *out) {
    visitAssigned(experts, K, out);
    assignOnVisited(experts, K, out, /*onlyUnique=*/false);
  }

  /// Locality, third pass: the experts left, visiting the node that serves
  /// most of them until none is left.
  void chooseRest(const int64_t *experts, int K, int64_t *out) {
    int remaining = visitAssigned(experts, K, out);
    while (remaining > 0) {
      remaining -= assignOnVisited(experts, K, out, /*onlyUnique=*/false);
      if (remaining > 0)
        visit(bestNewNode(experts, K, out));
    }
  }

  void chooseLoadOnly(const int64_t *experts, int K, int64_t *out) {
    for (int k = 0; k < K; ++k)
      out[k] = experts[k] < 0 ? -1 : take(leastLoaded(experts[k], [](int64_t) {
        return true;
      }));
  }

private:
  /// The token's visited nodes: its own and those of the slots it has.
  /// Returns how many of its experts have no slot yet.
  int visitAssigned(const int64_t *experts, int K, const int64_t *out) {
    visited.assign(1, own);
    int remaining = 0;
    for (int k = 0; k < K; ++k) {
      if (out[k] >= 0)
        visit(topo.nodeOfExpert(out[k]));
      else if (experts[k] >= 0)
        ++remaining;
    }
    return remaining;
  }

  /// Each expert without a slot (with onlyUnique: only one with exactly one
  /// such replica) takes its least-loaded replica under its cap on the
  /// token's own node, else on another visited node. Returns how many took
  /// one.
  int assignOnVisited(const int64_t *experts, int K, int64_t *out,
                      bool onlyUnique) {
    int assigned = 0;
    for (int k = 0; k < K; ++k) {
      if (experts[k] < 0 || out[k] >= 0)
        continue;
      const int64_t e = experts[k];
      if (onlyUnique &&
          std::count_if(table.replicasBegin(e), table.replicasEnd(e),
                        [&](int64_t slot) {
                          return underCap(slot) &&
                                 isVisited(topo.nodeOfExpert(slot));
                        }) != 1)
        continue;
      int64_t s = leastLoaded(e, [&](int64_t slot) {
        return underCap(slot) && topo.nodeOfExpert(slot) == own;
      });
      if (s < 0)
        s = leastLoaded(e, [&](int64_t slot) {
          return underCap(slot) && isVisited(topo.nodeOfExpert(slot));
        });
      if (s >= 0) {
        out[k] = take(s);
        ++assigned;
      }
    }
    return assigned;
  }

  /// The node holding replicas under their cap of the most experts
  /// still without a slot (ties: the first after the own node, cyclically).
  int bestNewNode(const int64_t *experts, int K, const int64_t *out) {
    const int N = topo.nodes();
    counts.assign((size_t)N, 0);
    for (int k = 0; k < K; ++k) {
      if (experts[k] < 0 || out[k] >= 0)
        continue;
      int last = -1; // replicas ascend, so one expert's nodes come in order
      for (const int64_t *s = table.replicasBegin(experts[k]);
           s != table.replicasEnd(experts[k]); ++s) {
        int n = topo.nodeOfExpert(*s);
        if (n != last && underCap(*s)) {
          counts[(size_t)n]++;
          last = n;
        }
      }
    }
    int best = -1;
    for (int i = 1; i <= N; ++i) {
      int n = (own + i) % N;
      if (best < 0 || counts[(size_t)n] > counts[(size_t)best])
        best = n;
    }
    return best;
  }

  const ReplicaTable &table;
  const Topology &topo;
  const int rank, own;
  std::vector<int64_t> load;  ///< [S] rows this rank gave each slot so far
  std::vector<int64_t> cap;   ///< [S] rows this rank may give each slot
  std::vector<int> visited;
  std::vector<int64_t> counts;
};

/// Branch and bound over the nodes of the first expert not yet covered by
/// the own node and `chosen`.
void searchCover(const ReplicaTable &table, const int64_t *experts, int K,
                 int own, std::vector<int> &chosen, int &best) {
  if ((int)chosen.size() >= best)
    return;
  const Topology &topo = table.slotTopology();
  auto covered = [&](int64_t e) {
    for (const int64_t *s = table.replicasBegin(e); s != table.replicasEnd(e);
         ++s) {
      int n = topo.nodeOfExpert(*s);
      if (n == own ||
          std::find(chosen.begin(), chosen.end(), n) != chosen.end())
        return true;
    }
    return false;
  };
  int k = 0;
  while (k < K && (experts[k] < 0 || covered(experts[k])))
    ++k;
  if (k == K) {
    best = (int)chosen.size();
    return;
  }
  int last = -1;
  for (const int64_t *s = table.replicasBegin(experts[k]);
       s != table.replicasEnd(experts[k]); ++s) {
    int n = topo.nodeOfExpert(*s);
    if (n == last)
      continue;
    last = n;
    chosen.push_back(n);
    searchCover(table, experts, K, own, chosen, best);
    chosen.pop_back();
  }
}

} // namespace

void chooseReplicas(const ReplicaTable &table, moecommReplicaChoice_t choice,
                    int rank, const RoutingView &logical,
                    int64_t *physicalIds) {
  Chooser chooser(table, rank);
  // Only the locality rule reads the caps.
  if (choice == moecommReplicaLocality)
    chooser.countCaps(logical);
  const int K = logical.topk;
  std::vector<int64_t> experts((size_t)K);
  const int passes = choice == moecommReplicaLoadOnly ? 1 : 3;
  for (int pass = 0; pass < passes; ++pass)
    for (int64_t t = 0; t < logical.numTokens; ++t) {
      for (int k = 0; k < K; ++k)
        experts[(size_t)k] = logical.expert(t, k);
      int64_t *out = physicalIds + t * K;
      if (choice == moecommReplicaLoadOnly)
        chooser.chooseLoadOnly(experts.data(), K, out);
      else if (pass == 0)
        chooser.chooseForced(experts.data(), K, out);
      else if (pass == 1)
        chooser.chooseNearby(experts.data(), K, out);
      else
        chooser.chooseRest(experts.data(), K, out);
    }
}

int minRemoteNodes(const ReplicaTable &table, int rank, const int64_t *experts,
                   int topk) {
  std::vector<int> chosen;
  int best = table.slotTopology().nodes(); // never more than every node
  searchCover(table, experts, topk, table.slotTopology().node(rank), chosen,
              best);
  return best;
}

int64_t minRemoteCopies(const ReplicaTable &table, int rank,
                        const RoutingView &logical) {
  int64_t copies = 0;
  std::vector<int64_t> experts((size_t)logical.topk);
  for (int64_t t = 0; t < logical.numTokens; ++t) {
    for (int k = 0; k < logical.topk; ++k)
      experts[(size_t)k] = logical.expert(t, k);
    copies += minRemoteNodes(table, rank, experts.data(), logical.topk);
  }
  return copies;
}

double receiveImbalance(const std::vector<int64_t> &rowsPerRank) {
  int64_t sum = 0, max = 0;
  for (int64_t r : rowsPerRank) {
    sum += r;
    max = std::max(max, r);
  }
  if (sum == 0)
    return 1.0;
  return (double)max * (double)rowsPerRank.size() / (double)sum;
}

} // namespace moecomm

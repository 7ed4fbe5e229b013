//===- PlacementTest.cpp - Placements, the replica choice, its bound ------===//
#include "moecomm/Model/Placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

using namespace moecomm;

namespace {

ExpertPlacement placementOf(int64_t E, std::vector<int64_t> slots) {
  ExpertPlacement p;
  p.numLogical = E;
  p.slotExperts = std::move(slots);
  return p;
}

/// Physical ids of one token on `rank`.
std::vector<int64_t> choose(const ReplicaTable &table,
                            moecommReplicaChoice_t choice, int rank,
                            std::vector<int64_t> logical, int topk) {
  RoutingView v;
  v.topk = topk;
  v.numTokens = (int64_t)logical.size() / topk;
  v.topkIdx = logical.data();
  v.idxType = moecommInt64;
  std::vector<int64_t> out(logical.size());
  chooseReplicas(table, choice, rank, v, out.data());
  return out;
}

/// Distinct nodes other than `rank`'s of the slots in ids[0, K).
int remoteNodes(const Topology &topo, int rank, const int64_t *ids, int K) {
  std::set<int> nodes;
  for (int k = 0; k < K; ++k)
    if (ids[k] >= 0 && topo.nodeOfExpert(ids[k]) != topo.node(rank))
      nodes.insert(topo.nodeOfExpert(ids[k]));
  return (int)nodes.size();
}

TEST(Placement, CheckNamesTheFault) {
  EXPECT_EQ(checkPlacement(identityPlacement(8), 4), "");
  EXPECT_EQ(checkPlacement(placementOf(0, {}), 1),
            "placement: num_logical_experts must be >= 1, got 0");
  EXPECT_EQ(checkPlacement(placementOf(4, {0, 1, 2}), 1),
            "placement: 3 slots for 4 logical experts (need at least one "
            "each)");
  EXPECT_EQ(checkPlacement(placementOf(4, {0, 1, 2, 3, 0, 1}), 4),
            "placement: 6 slots are not divisible by 4 ranks");
  EXPECT_EQ(checkPlacement(placementOf(2, {0, 2}), 2),
            "placement: slot 1 holds expert 2, out of range [0, 2)");
  EXPECT_EQ(checkPlacement(placementOf(3, {0, 1, 1, 0}), 2),
            "placement: logical expert 2 has no slot");
}

TEST(Placement, TableListsReplicasAscending) {
  ReplicaTable t(placementOf(3, {2, 0, 2, 1, 0, 2}), 3, 1);
  EXPECT_EQ(t.numLogical(), 3);
  EXPECT_EQ(t.slotTopology().numExperts, 6);
  EXPECT_EQ(std::vector<int64_t>(t.replicasBegin(0), t.replicasEnd(0)),
            (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(std::vector<int64_t>(t.replicasBegin(1), t.replicasEnd(1)),
            (std::vector<int64_t>{3}));
  EXPECT_EQ(std::vector<int64_t>(t.replicasBegin(2), t.replicasEnd(2)),
            (std::vector<int64_t>{0, 2, 5}));
}

TEST(Placement, IdentityChangesNothing) {
  ReplicaTable t(identityPlacement(8), 4, 2);
  for (auto choice : {moecommReplicaLocality, moecommReplicaLoadOnly})
    EXPECT_EQ(choose(t, choice, 1, {7, -1, 0, 3, 5, 2}, 3),
              (std::vector<int64_t>{7, -1, 0, 3, 5, 2}));
  int64_t token[] = {7, -1, 0}; // rank 1 is on node 0; expert 7 on node 1
  EXPECT_EQ(minRemoteNodes(t, 1, token, 3), 1);
}

// 4 nodes x 1 rank, 3 slots per rank (slot s on node s / 3). Logical 0 on
// nodes 1 and 2, logical 1 on nodes 2 and 3, logical 2 on node 3 only,
// logical 3 on nodes 0 and 1, logical 4 on nodes 0, 2 and 3, logical 5 on
// node 1 only.
ExpertPlacement fourNodes() {
  return placementOf(6, {3, 4, 4, 0, 3, 5, 0, 1, 4, 1, 2, 4});
}

TEST(Placement, LocalityPrefersOwnThenVisitedThenBestNode) {
  ReplicaTable t(fourNodes(), 4, 1);
  // Own node: logical 3 has a replica on each token's own node.
  EXPECT_EQ(choose(t, moecommReplicaLocality, 0, {3}, 1),
            (std::vector<int64_t>{0}));
  EXPECT_EQ(choose(t, moecommReplicaLocality, 1, {3}, 1),
            (std::vector<int64_t>{4}));
  // Own before visited: logical 5 makes node 1 visited, yet logical 3 takes
  // node 0's slot 0.
  EXPECT_EQ(choose(t, moecommReplicaLocality, 0, {5, 3}, 2),
            (std::vector<int64_t>{5, 0}));
  // Visited: logical 2 forces node 3 on token 0, so token 0's logical 1
  // takes node 3's slot 9 (each of logical 1's two replicas may take one of
  // its two rows), and token 1's takes slot 7; load-only would give token 0
  // slot 7 (the first in rank 0's order) and make it visit node 2 too.
  EXPECT_EQ(choose(t, moecommReplicaLocality, 0, {1, 2, 1, -1}, 2),
            (std::vector<int64_t>{9, 10, 7, -1}));
  EXPECT_EQ(choose(t, moecommReplicaLoadOnly, 0, {1, 2, 1, -1}, 2),
            (std::vector<int64_t>{7, 10, 9, -1}));
  // Best new node: logicals 0 and 1 share only node 2, so token 0 takes
  // both replicas there (one remote node); token 1 gets the other replicas
  // (nodes 1 and 3). Three remote nodes in all, against load-only's four
  // (it gives token 0 slots 3 and 7, token 1 slots 6 and 9).
  const std::vector<int64_t> pair = {0, 1, 0, 1};
  std::vector<int64_t> loc = choose(t, moecommReplicaLocality, 0, pair, 2);
  std::vector<int64_t> bal = choose(t, moecommReplicaLoadOnly, 0, pair, 2);
  EXPECT_EQ(loc, (std::vector<int64_t>{6, 7, 3, 9}));
  EXPECT_EQ(bal, (std::vector<int64_t>{3, 7, 6, 9}));
  const Topology &topo = t.slotTopology();
  EXPECT_EQ(remoteNodes(topo, 0, loc.data(), 2) +
                remoteNodes(topo, 0, loc.data() + 2, 2),
            3);
  EXPECT_EQ(remoteNodes(topo, 0, bal.data(), 2) +
                remoteNodes(topo, 0, bal.data() + 2, 2),
            4);
  int64_t token[] = {0, 1};
  EXPECT_EQ(minRemoteNodes(t, 0, token, 2), 1);
}

TEST(Placement, LeastLoadedWithRankRotatedTies) {
  ReplicaTable t(fourNodes(), 4, 1);
  // Load-only, rank 0: logical 0's replicas alternate, starting at slot 3.
  EXPECT_EQ(choose(t, moecommReplicaLoadOnly, 0, {0, 0, 0, 0}, 1),
            (std::vector<int64_t>{3, 6, 3, 6}));
  // Rank 1 starts on the other replica.
  EXPECT_EQ(choose(t, moecommReplicaLoadOnly, 1, {0, 0, 0}, 1),
            (std::vector<int64_t>{6, 3, 6}));
  // Locality from node 0: logical 0 has no replica on node 0 and nothing is
  // visited, so the best new node is the first after node 0 holding it
  // (node 1) -- until slot 3 has its cap, load-only's 1 of the 2 rows.
  EXPECT_EQ(choose(t, moecommReplicaLocality, 0, {0, 0}, 1),
            (std::vector<int64_t>{3, 6}));
  // The cap moves the second token of logical 1 off node 3, which logical
  // 2 makes it visit, to node 2 (rank 0; logical 1's slots 7 and 9).
  EXPECT_EQ(choose(t, moecommReplicaLocality, 0, {1, 2, 1, 2}, 2),
            (std::vector<int64_t>{9, 10, 7, 10}));
  // Tokens that need no new node come first to the caps: token 1 visits
  // node 1 for logical 5 and takes logical 0's node-1 slot 3; token 0, which
  // must visit a new node anyway, gets slot 6 (in token order it would have
  // taken slot 3 and sent token 1 to a second node).
  EXPECT_EQ(choose(t, moecommReplicaLocality, 0, {0, -1, 0, 5}, 2),
            (std::vector<int64_t>{6, -1, 3, 5}));
}

TEST(Placement, LocalityKeepsLoadOnlyShares) {
  std::mt19937_64 rng(777);
  for (int trial = 0; trial < 50; ++trial) {
    const int G = 2, N = 1 + (int)(rng() % 4), W = G * N;
    const int64_t E = 8;
    const int64_t S = (int64_t)W * ((E + W - 1) / W + 1 + (int64_t)(rng() % 2));
    std::vector<int64_t> slots((size_t)S);
    for (int64_t s = 0; s < S; ++s)
      slots[(size_t)s] = s < E ? s : (int64_t)(rng() % 3); // hot: 0, 1, 2
    std::shuffle(slots.begin(), slots.end(), rng);
    ExpertPlacement p = placementOf(E, slots);
    ASSERT_EQ(checkPlacement(p, W), "");
    ReplicaTable t(p, W, G);
    const int K = 3, rank = (int)(rng() % W);
    std::vector<int64_t> ids;
    std::vector<int64_t> pairs((size_t)E, 0);
    for (int tok = 0; tok < 40; ++tok) {
      std::vector<int64_t> row = {0, 1, 2, 3, 4, 5, 6, 7};
      std::shuffle(row.begin(), row.end(), rng);
      for (int k = 0; k < K; ++k) {
        ids.push_back(row[(size_t)k]);
        pairs[(size_t)row[(size_t)k]]++;
      }
    }
    // Each slot of an expert with at least as many pairs as replicas gets
    // from this rank exactly the rows load-only gives it (so the receive
    // load is load-only's); every slot gets ceil or floor of its expert's
    // pairs over its replicas, or at most 1 when there are fewer pairs.
    std::vector<int64_t> rows[2];
    int which = 0;
    for (auto choice : {moecommReplicaLocality, moecommReplicaLoadOnly}) {
      rows[which].assign((size_t)S, 0);
      for (int64_t s : choose(t, choice, rank, ids, K))
        rows[which][(size_t)s]++;
      ++which;
    }
    for (int64_t s = 0; s < S; ++s) {
      const int64_t e = p.slotExperts[(size_t)s], n = t.replicaCount(e);
      const int64_t c = pairs[(size_t)e];
      if (c >= n)
        EXPECT_EQ(rows[0][(size_t)s], rows[1][(size_t)s])
            << "trial " << trial << " slot " << s;
      for (const std::vector<int64_t> &r : rows) {
        EXPECT_GE(r[(size_t)s], c >= n ? c / n : 0)
            << "trial " << trial << " slot " << s;
        EXPECT_LE(r[(size_t)s], (c + n - 1) / n)
            << "trial " << trial << " slot " << s;
      }
    }
  }
}

/// The smallest remote node set by enumerating every subset of nodes.
int bruteForceMinRemote(const ReplicaTable &t, int rank,
                        const std::vector<int64_t> &experts) {
  const Topology &topo = t.slotTopology();
  const int N = topo.nodes();
  int best = N;
  for (uint32_t set = 0; set < (1u << N); ++set) {
    if (set & (1u << topo.node(rank)))
      continue;
    bool ok = true;
    for (int64_t e : experts) {
      if (e < 0)
        continue;
      bool any = false;
      for (const int64_t *s = t.replicasBegin(e); s != t.replicasEnd(e); ++s) {
        int n = topo.nodeOfExpert(*s);
        any |= n == topo.node(rank) || (set & (1u << n));
      }
      ok &= any;
    }
    if (ok)
      best = std::min(best, __builtin_popcount(set));
  }
  return best;
}

TEST(Placement, RandomPlacementsBoundAndChoice) {
  std::mt19937_64 rng(12345);
  for (int trial = 0; trial < 200; ++trial) {
    const int G = 1 + (int)(rng() % 3), N = 1 + (int)(rng() % 6);
    const int W = G * N;
    const int64_t E = 4 + (int64_t)(rng() % 12);
    const int64_t perRank = (E + W - 1) / W + (int64_t)(rng() % 3);
    std::vector<int64_t> slots((size_t)(perRank * W));
    for (int64_t s = 0; s < (int64_t)slots.size(); ++s)    // every expert once,
      slots[(size_t)s] = s < E ? s : (int64_t)(rng() % E); // then replicas
    std::shuffle(slots.begin(), slots.end(), rng);
    ExpertPlacement p = placementOf(E, slots);
    ASSERT_EQ(checkPlacement(p, W), "");
    ReplicaTable t(p, W, G);
    const int K = 1 + (int)(rng() % std::min<int64_t>(E, 6));
    const int rank = (int)(rng() % W);
    std::vector<int64_t> ids((size_t)E);
    for (int64_t e = 0; e < E; ++e)
      ids[(size_t)e] = e;
    std::shuffle(ids.begin(), ids.end(), rng);
    ids.resize((size_t)K);
    if (rng() % 4 == 0)
      ids[0] = -1;
    const int best = minRemoteNodes(t, rank, ids.data(), K);
    EXPECT_EQ(best, bruteForceMinRemote(t, rank, ids)) << "trial " << trial;
    for (auto choice : {moecommReplicaLocality, moecommReplicaLoadOnly}) {
      std::vector<int64_t> phys = choose(t, choice, rank, ids, K);
      for (int k = 0; k < K; ++k) // a replica of the same logical expert
        EXPECT_EQ(phys[(size_t)k] < 0 ? -1 : p.slotExperts[(size_t)phys[k]],
                  ids[(size_t)k]);
      EXPECT_GE(remoteNodes(t.slotTopology(), rank, phys.data(), K), best);
    }
  }
}

TEST(Placement, ReceiveImbalance) {
  EXPECT_DOUBLE_EQ(receiveImbalance({0, 0}), 1.0);
  EXPECT_DOUBLE_EQ(receiveImbalance({2, 2, 2}), 1.0);
  EXPECT_DOUBLE_EQ(receiveImbalance({1, 3}), 1.5);
}

} // namespace

TEST(Placement, ReplicaChoiceNames) {
  EXPECT_STREQ(replicaChoiceName(moecommReplicaLocality), "locality");
  EXPECT_STREQ(replicaChoiceName(moecommReplicaLoadOnly), "load_only");
  EXPECT_STREQ(replicaChoiceName(static_cast<moecommReplicaChoice_t>(-1)),
               "unknown");
}

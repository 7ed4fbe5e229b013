//===- EplbTest.cpp - EPLB's placement on small cases ---------------------===//
//
// rebalanceExperts (moecomm/Workload/Eplb.h): the published example of
// github.com/deepseek-ai/EPLB (example.py's two layers), one hand-computed
// case per policy, and the invariants on seeded loads: a valid placement,
// S / W slots per rank, groups on one node (hierarchical), and the replicas
// on the experts with the largest load per replica.
//
//===----------------------------------------------------------------------===//
#include "moecomm/Workload/Eplb.h"

#include "llvm/Support/Error.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

using namespace moecomm;
using namespace moecomm::workload;

namespace {

std::vector<int64_t> place(const std::vector<double> &w, int64_t slots,
                           int groups, int nodes, int gpus) {
  llvm::Expected<ExpertPlacement> p =
      rebalanceExperts(w, slots, groups, nodes, gpus);
  if (!p) {
    ADD_FAILURE() << llvm::toString(p.takeError());
    return {};
  }
  EXPECT_EQ(p->numLogical, (int64_t)w.size());
  EXPECT_EQ(checkPlacement(*p, gpus), "");
  return p->slotExperts;
}

// EPLB's README example: 12 experts in 4 groups, 16 slots, 2 nodes of 4
// GPUs; the phy2log it prints for each layer.
TEST(Eplb, PublishedExampleHierarchical) {
  EXPECT_EQ(place({90, 132, 40, 61, 104, 165, 39, 4, 73, 56, 183, 86}, 16, 4,
                  2, 8),
            (std::vector<int64_t>{5, 6, 5, 7, 8, 4, 3, 4, 10, 9, 10, 2, 0, 1,
                                  11, 1}));
  EXPECT_EQ(place({20, 107, 104, 64, 19, 197, 187, 157, 172, 86, 16, 27}, 16,
                  4, 2, 8),
            (std::vector<int64_t>{7, 10, 6, 8, 6, 11, 8, 9, 2, 4, 5, 1, 5, 0,
                                  3, 1}));
}

// By hand: group loads {2, 10, 4, 6} pack as node 0 = {g1, g0}, node 1 =
// {g3, g2} (g0 ties nodes 0 and 1 at 10: the lower wins). Node 0's loads
// (experts 2, 3, 0, 1) = 5, 5, 1, 1 give the two replicas to 2 then 3 (the
// tie at 5 goes to the first); physical loads 2.5, 2.5, 1, 1, 2.5, 2.5 pack
// 2.5s alternately, then the 1s. Node 1 likewise.
TEST(Eplb, HandComputedHierarchical) {
  EXPECT_EQ(place({1, 1, 5, 5, 2, 2, 3, 3}, 12, 4, 2, 4),
            (std::vector<int64_t>{2, 2, 0, 3, 3, 1, 4, 6, 6, 5, 7, 7}));
}

// By hand, 3 % 2 != 0 groups per node, so the global policy: expert 0 (10)
// gets both redundant slots (10/2 = 5 ties expert 2's 5: the lower expert
// wins); physical loads 10/3, 1, 5, 2, 10/3, 10/3 pack as GPU 0 = {5, 10/3,
// 1} (experts 2, 0, 1) and GPU 1 = {10/3, 10/3, 2} (experts 0, 0, 3).
TEST(Eplb, HandComputedGlobal) {
  EXPECT_EQ(place({10, 1, 5, 2}, 6, 1, 1, 2),
            (std::vector<int64_t>{2, 0, 1, 0, 0, 3}));
  EXPECT_FALSE(eplbIsHierarchical(3, 2));
  EXPECT_EQ(place({10, 1, 5, 2, 0, 0}, 8, 3, 2, 2),
            place({10, 1, 5, 2, 0, 0}, 8, 1, 1, 2));
}

// Replicas per expert and, for the greedy replication's invariant, whether
// every expert with r > 1 replicas has load / (r - 1) >= every expert's
// load / replicas (else its last replica would have gone elsewhere).
void expectGreedyReplicas(const std::vector<double> &w,
                          const std::vector<int64_t> &experts,
                          const std::vector<int64_t> &slots) {
  std::vector<int64_t> count(w.size(), 0);
  for (int64_t s : slots)
    count[(size_t)s]++;
  double maxPerReplica = 0;
  for (int64_t e : experts)
    maxPerReplica = std::max(maxPerReplica, w[(size_t)e] / count[(size_t)e]);
  for (int64_t e : experts) {
    EXPECT_GE(count[(size_t)e], 1) << "expert " << e;
    if (count[(size_t)e] > 1)
      EXPECT_GE(w[(size_t)e] / (count[(size_t)e] - 1), maxPerReplica)
          << "expert " << e;
  }
}

TEST(Eplb, InvariantsOnSeededLoads) {
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(state >> 40) / (double)(1ull << 24);
  };
  struct Shape {
    int64_t experts, slots;
    int groups, nodes, gpus;
  };
  for (Shape sh : {Shape{256, 320, 8, 8, 64}, Shape{256, 288, 8, 4, 32},
                   Shape{64, 96, 1, 4, 16}, Shape{16, 24, 4, 2, 8},
                   Shape{8, 8, 2, 2, 4}}) {
    std::vector<double> w((size_t)sh.experts);
    for (double &x : w)
      x = next() * next() * 100; // skewed
    std::vector<int64_t> slots =
        place(w, sh.slots, sh.groups, sh.nodes, sh.gpus);
    ASSERT_EQ((int64_t)slots.size(), sh.slots);
    const bool hier = eplbIsHierarchical(sh.groups, sh.nodes);
    const int nodes = hier ? sh.nodes : 1;
    const int64_t perNode = sh.slots / nodes;
    const int64_t groupSize = sh.experts / (hier ? sh.groups : 1);
    // Groups on one node; each node replicates its own experts greedily.
    std::vector<int> nodeOf((size_t)sh.experts / groupSize, -1);
    for (int n = 0; n < nodes; ++n) {
      std::vector<int64_t> nodeSlots(slots.begin() + n * perNode,
                                     slots.begin() + (n + 1) * perNode);
      std::set<int64_t> experts(nodeSlots.begin(), nodeSlots.end());
      EXPECT_EQ((int64_t)experts.size(), sh.experts / nodes);
      for (int64_t e : experts) {
        int &g = nodeOf[(size_t)(e / groupSize)];
        EXPECT_TRUE(g < 0 || g == n) << "group of expert " << e;
        g = n;
      }
      expectGreedyReplicas(w, {experts.begin(), experts.end()}, nodeSlots);
    }
  }
}

TEST(Eplb, BadCountsAreOneLineErrors) {
  auto error = [](std::vector<double> w, int64_t slots, int groups, int nodes,
                  int gpus) {
    llvm::Expected<ExpertPlacement> p =
        rebalanceExperts(w, slots, groups, nodes, gpus);
    return p ? std::string() : llvm::toString(p.takeError());
  };
  EXPECT_EQ(error({}, 4, 1, 1, 1), "eplb: no logical experts");
  EXPECT_EQ(error({1, 1, 1, 1}, 3, 1, 1, 1),
            "eplb: 3 slots for 4 logical experts (need at least one each)");
  EXPECT_EQ(error({1, 1, 1, 1}, 6, 1, 1, 4),
            "eplb: 6 slots are not divisible by 4 ranks");
  EXPECT_EQ(error({1, 1, 1, 1}, 8, 1, 3, 4),
            "eplb: 4 ranks are not divisible by 3 nodes");
  EXPECT_EQ(error({1, 1, 1, 1}, 8, 0, 1, 4),
            "eplb: num_groups must be >= 1, got 0");
  EXPECT_EQ(error({1, 1, 1, 1, 1, 1}, 12, 4, 2, 4),
            "eplb: 4 expert groups do not divide the 6 experts");
  EXPECT_EQ(error({1, -1}, 2, 1, 1, 1),
            "eplb: expert 1's load -1 is not a finite number >= 0");
}

} // namespace

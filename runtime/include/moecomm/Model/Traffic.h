//===- Traffic.h - Exact traffic of each strategy from routing --*- C++ -*-===//
//
// Pure functions (no communicator, no payload) that count, exactly, the rows,
// bytes and messages every rank sends and receives in every exchange stage of
// every strategy, for any routing. The runtime uses the same functions for
// `moecommAuto` and its tests check them against the runtime's traffic
// counters; the benchmark uses them for up to 1024 ranks.
//
// Library: moecomm_model (C++17, no dependencies). Namespace moecomm.
//
// Stages and their scopes follow the stage rule (StageRule.h); row sizes
// the wire format (WireFormat.h).
// Rows per stage (after capacity drops):
//   per_expert: one row per kept (token, expert) to the expert's rank.
//   flat (and the 1-stage hierarchical forms): one row per (token, rank
//     holding >= 1 of its kept experts).
//   hierarchical stage 0: one row per (token, node holding >= 1 of its kept
//     experts) to the relay n*G + local_rank(source); stage 1: the relay
//     sends one row per (source, token, rank of its node holding >= 1 kept
//     expert of the token).
// Combine stage i mirrors dispatch stage S-1-i (sends and receives swap).
// Bytes and messages exclude copies to self; a message is a non-empty send
// to one group member.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TRAFFIC_H
#define MOECOMM_TRAFFIC_H

#include "moecomm/Model/StageRule.h"
#include "moecomm/Model/WireFormat.h"
#include "moecomm/moecomm.h"

#include <cstdint>
#include <vector>

namespace moecomm {

/// W ranks in nodes of G; E experts, rank r hosts [r*E/W, (r+1)*E/W).
struct Topology {
  int ranks = 1;
  int ranksPerNode = 1;
  int64_t numExperts = 1;

  int nodes() const { return ranks / ranksPerNode; }
  int node(int r) const { return r / ranksPerNode; }
  int localRank(int r) const { return r % ranksPerNode; }
  int64_t localExperts() const { return numExperts / ranks; }
  int rankOfExpert(int64_t e) const { return (int)(e / localExperts()); }
  int nodeOfExpert(int64_t e) const { return node(rankOfExpert(e)); }
  /// Link class of a transfer between ranks a and b.
  moecommLinkClass_t link(int a, int b) const {
    return node(a) == node(b) ? moecommLinkIntraNode : moecommLinkInterNode;
  }
};

/// A non-owning view of one rank's routing: topk_idx [T][K] (int32 or
/// int64; -1 = masked) and topk_weights [T][K] (nullptr = all 1.0).
struct RoutingView {
  int64_t numTokens = 0;
  int topk = 1;
  const void *topkIdx = nullptr;
  moecommDataType_t idxType = moecommInt64;
  const float *topkWeights = nullptr;

  int64_t expert(int64_t t, int k) const {
    int64_t i = t * topk + k;
    return idxType == moecommInt32
               ? (int64_t) static_cast<const int32_t *>(topkIdx)[i]
               : static_cast<const int64_t *>(topkIdx)[i];
  }
  float weight(int64_t t, int k) const {
    return topkWeights ? topkWeights[t * topk + k] : 1.0f;
  }
};

/// Names used in reports, flags and plans: "per_expert", "flat",
/// "hierarchical", "auto"; "global", "intra_node", "inter_node"; "dispatch",
/// "combine", "all_to_all"; "unknown" for values outside the enums.
const char *strategyName(moecommStrategy_t strategy);
const char *scopeName(moecommScope_t scope);
const char *directionName(moecommDirection_t direction);


/// [W] non-masked (token, expert) pairs of one (valid) rank per destination
/// rank.
std::vector<int64_t> pairCountsOfRank(const Topology &topo,
                                      const RoutingView &routing);

/// Capacity drops. pairs: [W][W] pair counts (source, destination). Returns
/// the kept counts [W][W]: destination d keeps its pairs in (source rank,
/// source token, expert) order up to `capacity` (0 = unbounded), so the tail
/// (latest source rank, then token) is dropped.
std::vector<int64_t> keptPairCounts(const std::vector<int64_t> &pairs,
                                    int ranks, int64_t capacity);

/// [T*K] 1 where slot (t, k) of `rank` is kept (not masked, not dropped),
/// given that rank's row of the kept matrix (keptRow[d], d in [0, W)).
std::vector<uint8_t> keptSlotMask(const Topology &topo,
                                  const RoutingView &routing,
                                  const int64_t *keptRow);

/// Per-rank routing summary after drops, enough to count every strategy's
/// traffic. All matrices are row-major.
struct RoutingSummary {
  Topology topo;
  std::vector<int64_t> pairs; ///< [W][W] kept pairs source -> dest
  std::vector<int64_t>
      tokenRanks; ///< [W][W] tokens of s with a kept expert on d
  std::vector<int64_t>
      tokenNodes; ///< [W][N] tokens of s with a kept expert on node n
};

/// One rank's rows of tokenRanks ([W]) and tokenNodes ([N]) given its kept
/// slot mask (keptSlotMask).
void summarizeRank(const Topology &topo, const RoutingView &routing,
                   const std::vector<uint8_t> &keptMask, int64_t *tokenRanks,
                   int64_t *tokenNodes);

/// The summary of a whole (valid) routing: routing[r] for each of W ranks.
RoutingSummary summarizeRouting(const Topology &topo, int64_t capacity,
                                const std::vector<RoutingView> &routing);

/// One rank's traffic in one stage. rows* include the copy to self; bytes
/// and messages exclude it and are split by link class
/// (moecommLinkClass_t). Bytes are exact, or INT64_MAX when they do not fit
/// in int64 (a row size from a hint, not from memory).
struct RankStageTraffic {
  int64_t rowsSent = 0, rowsRecv = 0;
  int64_t bytesSent[2] = {0, 0}, bytesRecv[2] = {0, 0};
  int64_t messagesSent[2] = {0, 0}, messagesRecv[2] = {0, 0};
};

struct StageTraffic {
  moecommScope_t scope = moecommScopeGlobal;
  std::vector<RankStageTraffic> ranks; ///< [W]
};

/// Every stage of one strategy, both directions.
struct StrategyTraffic {
  moecommStrategy_t strategy = moecommPerExpert;
  std::vector<StageTraffic> dispatch; ///< execution order
  std::vector<StageTraffic> combine;  ///< execution order

  /// Sum over ranks and stages of bytes sent on `link` in `direction`.
  int64_t totalBytes(moecommDirection_t direction,
                     moecommLinkClass_t link) const;
  /// Sum over ranks and stages of messages sent on `link`.
  int64_t totalMessages(moecommDirection_t direction,
                        moecommLinkClass_t link) const;
};

/// Exact traffic of `strategy` (not auto) for `summary`. Row bytes: see
/// wireRowBytes (dispatch: the wire type; combine: the data type).
StrategyTraffic countTraffic(const RoutingSummary &summary,
                             moecommStrategy_t strategy,
                             int64_t dispatchRowBytes, int64_t combineRowBytes);

} // namespace moecomm

#endif // MOECOMM_TRAFFIC_H

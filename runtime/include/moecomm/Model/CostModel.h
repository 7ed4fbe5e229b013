//===- CostModel.h - Alpha-beta time model of the strategies ----*- C++ -*-===//
//
// The performance model of DESIGN.md §7, shared by the runtime (moecommAuto),
// the compiler's static strategy choice and the benchmark. Times are
// *modelled*, never measured.
//
// A stage costs, for each rank and link class, alpha * messages +
// max(bytes sent, bytes received) / beta (messages: max of sent and
// received); the stage time is the maximum over ranks and link classes; a
// direction's time is the sum over its stages.
//
// Library: moecomm_model (C++17, no dependencies). Namespace moecomm.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_COSTMODEL_H
#define MOECOMM_COSTMODEL_H

#include "moecomm/Model/Traffic.h"

#include <string>
#include <vector>

namespace moecomm {

/// A named hardware preset: link model plus the natural ranks per node.
struct LinkPreset {
  const char *name;
  int ranksPerNode;
  moecommLinkModel_t link;
};

/// The presets: "h100-dgx", "h200-dgx" (G = 8, NVLink 450 GB/s per
/// direction per GPU, inter-node 50 GB/s per GPU = 400 Gb/s) and
/// "gb200-nvl72" (G = 72, NVLink 900 GB/s, inter-node 50 GB/s).
const std::vector<LinkPreset> &linkPresets();
/// The preset called `name`, or nullptr.
const LinkPreset *findLinkPreset(const std::string &name);
/// The runtime's default link model (h200-dgx).
moecommLinkModel_t defaultLinkModel();

/// Modelled seconds of one direction, stage by stage.
struct ModelledTime {
  std::vector<double> dispatchStageSec;
  std::vector<double> combineStageSec;
  double dispatchSec = 0;
  double combineSec = 0;
  double totalSec() const { return dispatchSec + combineSec; }
};

/// Modelled time of one stage: max over ranks and link classes of
/// alpha * max(messages sent, received) + max(bytes sent, received) / beta.
double modelStageTime(const StageTraffic &stage,
                      const moecommLinkModel_t &link);
/// Modelled time of every stage of `traffic`.
ModelledTime modelTime(const StrategyTraffic &traffic,
                       const moecommLinkModel_t &link);

/// The strategy (per_expert, flat or hierarchical) with the least modelled
/// dispatch + combine time for `summary`; ties go to the earlier of
/// per_expert, flat, hierarchical. Fills times[3] (indexed by strategy) if
/// non-null. Deterministic: equal inputs give equal answers on every rank.
moecommStrategy_t chooseStrategy(const RoutingSummary &summary,
                                 int64_t dispatchRowBytes,
                                 int64_t combineRowBytes,
                                 const moecommLinkModel_t &link,
                                 ModelledTime *times = nullptr);

//===--- Expected traffic under uniform routing (for static choices) -----===//

/// Expected number of groups that receive at least one of K distinct experts
/// drawn uniformly without replacement from E, when the experts are split
/// into `groups` equal groups: groups * (1 - C(E - E/groups, K) / C(E, K)).
double expectedDistinctGroups(int64_t numExperts, int topk, int64_t groups);

/// Expected traffic of one (typical) rank in one stage under uniform routing.
struct ExpectedStage {
  moecommScope_t scope = moecommScopeGlobal;
  double rowsSent = 0, rowsRecv = 0;
  double bytesSent[2] = {0, 0}, bytesRecv[2] = {0, 0};
  double messagesSent[2] = {0, 0}, messagesRecv[2] = {0, 0};
};

struct ExpectedTraffic {
  moecommStrategy_t strategy = moecommPerExpert;
  std::vector<ExpectedStage> dispatch;
  std::vector<ExpectedStage> combine;
};

/// Expected per-rank traffic of `strategy` when every rank has
/// `tokensPerRank` tokens whose K experts are drawn uniformly without
/// replacement from E (no masked slots, no capacity). Messages to a member
/// count with the probability that at least one row goes there.
ExpectedTraffic expectedTrafficUniform(int ranks, int ranksPerNode,
                                       int64_t numExperts, int topk,
                                       double tokensPerRank,
                                       moecommStrategy_t strategy,
                                       int64_t dispatchRowBytes,
                                       int64_t combineRowBytes);
/// Modelled time of expected traffic (same formula as modelTime).
ModelledTime modelTime(const ExpectedTraffic &traffic,
                       const moecommLinkModel_t &link);
/// Expected traffic and modelled time of per_expert, flat and hierarchical
/// (indexed by moecommStrategy_t) under uniform routing, and the strategy
/// with the least modelled time (ties go to the earlier).
struct UniformCosts {
  ExpectedTraffic traffic[3];
  ModelledTime time[3];
  moecommStrategy_t best = moecommPerExpert;
};
/// The costs of every strategy when every rank has `tokensPerRank` tokens
/// routed uniformly (expectedTrafficUniform, modelTime).
UniformCosts uniformCosts(int ranks, int ranksPerNode, int64_t numExperts,
                          int topk, double tokensPerRank,
                          int64_t dispatchRowBytes, int64_t combineRowBytes,
                          const moecommLinkModel_t &link);
/// uniformCosts(...).best: the static choice of the compiler and the
/// benchmark.
moecommStrategy_t
chooseStrategyUniform(int ranks, int ranksPerNode, int64_t numExperts, int topk,
                      double tokensPerRank, int64_t dispatchRowBytes,
                      int64_t combineRowBytes, const moecommLinkModel_t &link);

} // namespace moecomm

#endif // MOECOMM_COSTMODEL_H

//===- Count.h - exact traffic and modelled time of a cell ------*- C++ -*-===//
//
// The counting path of moecomm-bench: no payload, no communicator. A
// RoutingGroup is one generated routing (config x topology x routing x
// tokens); countDtype() counts, exactly, every fixed strategy's traffic for
// one wire dtype (moecomm::countTraffic, the function the runtime's counters
// are tested against) and models it on each link preset (moecomm::modelTime).
// This is what lets the benchmark reach 1024 ranks in seconds.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_BENCH_COUNT_H
#define MOECOMM_TOOLS_BENCH_COUNT_H

#include "Sweep.h"

#include "moecomm/Model/CostModel.h"
#include "moecomm/Model/Traffic.h"
#include "moecomm/Workload/Generators.h"
#include "moecomm/Workload/ModelConfig.h"
#include "moecomm/Workload/RoutingProblem.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace moecomm::bench {

/// One generated routing and everything derived from it that does not
/// depend on the wire dtype.
struct RoutingGroup {
  workload::ModelConfig config;
  Cluster topo;
  workload::RoutingDist requested; ///< as given in the sweep
  workload::RoutingDist effective; ///< as generated (effectiveRouting)
  int64_t tokens = 0;         ///< per rank
  int64_t experts = 0;        ///< E used (cellExperts)
  uint64_t seed = 1;
  /// The routing (shared between groups that differ only in G when the
  /// distribution does not depend on the nodes: uniform, zipf, trace).
  std::shared_ptr<const workload::RoutingProblem> routing;
  const workload::RoutingProblem &problem() const { return *routing; }
  std::vector<RoutingView> views; ///< [W] views into `routing`
  RoutingSummary summary;         ///< summarizeRouting(views), no capacity
  /// Sum over all tokens of the number of distinct nodes other than the
  /// token's own that hold one of its (non-masked) experts: DESIGN §5.5's
  /// inter-node lower bound in rows. Computed directly from topk_idx, not
  /// from `summary`.
  int64_t remoteNodeCopies = 0;
};

/// Generates the routing of one group (workload::generateRouting with groups =
/// nodes for node-limited routing) - or reuses `reuse` when it is non-null
/// (a routing generated with the same options) - and summarizes it.
/// Errors: invalid_argument with one line (e.g. node-limited groups too
/// small for K).
llvm::Expected<RoutingGroup>
makeGroup(const workload::ModelConfig &config, const Cluster &topo,
          const workload::RoutingDist &dist, int64_t tokens, int64_t experts,
          uint64_t seed, const std::string &traceFile,
          std::shared_ptr<const workload::RoutingProblem> reuse = nullptr);

/// Whether the routing generated for `dist` depends on the node count (and
/// so cannot be shared between clusters of equal W and different G).
bool routingDependsOnNodes(const workload::RoutingDist &dist);

/// Payload bytes and messages summed over ranks and stages, by direction
/// (dispatch, combine) and link class (moecommLinkClass_t); copies to self
/// excluded (the runtime counters' definition).
struct TrafficTotals {
  int64_t bytes[2][2] = {{0, 0}, {0, 0}};
  int64_t messages[2][2] = {{0, 0}, {0, 0}};
};

/// Sums `traffic` into totals.
TrafficTotals totalsOf(const StrategyTraffic &traffic);

/// The three fixed strategies, in moecommStrategy_t order.
constexpr std::array<moecommStrategy_t, 3> kFixedStrategies = {
    moecommPerExpert, moecommFlat, moecommHierarchical};

/// Everything counted and modelled for one group and one wire dtype.
struct DtypeCounts {
  workload::PayloadType dtype = workload::PayloadType::BF16;
  int64_t dispatchRowBytes = 0;           ///< wireRowBytes(wire type, H)
  int64_t combineRowBytes = 0;            ///< wireRowBytes(data type, H)
  std::array<StrategyTraffic, 3> traffic; ///< indexed by moecommStrategy_t
  std::array<TrafficTotals, 3> totals;
  /// times[p][s]: preset p, fixed strategy s.
  std::vector<std::array<ModelledTime, 3>> times;
  /// What the runtime's `auto` picks under preset p (chooseStrategy).
  std::vector<moecommStrategy_t> autoChoice;
  /// What a static choice from the expected uniform traffic would pick
  /// (chooseStrategyUniform: the compiler's view without the routing).
  std::vector<moecommStrategy_t> staticChoice;
};

/// Counts and models `group` with wire dtype `dtype` on every preset.
DtypeCounts countDtype(const RoutingGroup &group, workload::PayloadType dtype,
                       const std::vector<LinkPreset> &presets);

/// Whether preset `p` models a cell with G ranks per node: its NVLink domain
/// (p.ranksPerNode) must hold a node.
bool presetApplies(const LinkPreset &p, const Cluster &topo);

/// The preset whose link model `auto` uses for a cluster (the runtime's link
/// model when measuring, the table's detailed columns, the plots): the auto
/// preset when it applies, else the applicable preset with the smallest
/// NVLink domain, else the auto preset.
size_t choicePreset(const std::vector<LinkPreset> &presets, size_t autoPreset,
                    const Cluster &topo);

} // namespace moecomm::bench

#endif // MOECOMM_TOOLS_BENCH_COUNT_H

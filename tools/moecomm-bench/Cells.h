//===- Cells.h - one row of moecomm-bench's results -------------*- C++ -*-===//
//
// A Cell is one (sweep, config, cluster, routing, tokens, wire dtype,
// strategy): exact traffic, the inter-node lower bound, the modelled time on
// every link preset, what `auto` chose, and - when the payload was moved - the
// measured time against the baseline and the runtime's own counters. The
// checks (Findings) are what makes moecomm-bench exit with status 1.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_BENCH_CELLS_H
#define MOECOMM_TOOLS_BENCH_CELLS_H

#include "Count.h"
#include "Measure.h"
#include "moecomm/Workload/RoutingProblem.h"

#include <optional>
#include <string>
#include <vector>

namespace moecomm::bench {

/// The modelled view of one cell under one link preset (all "modelled").
struct PresetResult {
  std::string preset;
  /// Whether the preset's NVLink domain holds a node of the cell
  /// (presetApplies); the numbers are filled in either way.
  bool applies = true;
  ModelledTime time; ///< this cell (auto: the strategy auto picks here)
  /// per_expert with a bf16 wire (Megatron's all-to-all dispatcher) on the
  /// same routing: the reference of every "vs baseline" ratio.
  double baselineSec = 0;
  moecommStrategy_t autoChoice = moecommPerExpert; ///< chooseStrategy
  moecommStrategy_t bestFixed = moecommPerExpert;  ///< least modelled time
  double bestFixedSec = 0;                         ///< same wire dtype
  /// The static choice from the expected uniform traffic
  /// (chooseStrategyUniform) and its modelled time on the actual routing.
  moecommStrategy_t staticChoice = moecommPerExpert;
  double staticSec = 0;
};

/// DeepEP's "algorithm bandwidth" of one measured cell, per rank: the unit
/// of DeepEP's and Hybrid-EP's tables (DeepEP tests/test_intranode.py and
/// test_internode.py, normal mode: dispatch_bf16_nvl_recv_bytes =
/// recv_x.numel() * 2, combine_bf16_nvl_send_bytes = the same, FP8 x
/// (1 + 4/128) / 2; GB/s = bytes / 1e9 / the rank's time). For rank r:
///   rows_r          = tokens of all ranks with at least one top-k expert on
///                     r (DeepEP's recv_x rows: one per (token, destination
///                     rank), the copy to self included) = sum over sources
///                     s of RoutingSummary::tokenRanks[s][r];
///   dispatchBytes_r = rows_r x the wire row bytes (bf16 2H; fp8_e4m3
///                     H + 4 ceil(H/128), DeepEP's factor; the others'
///                     wireRowBytes);
///   combineBytes_r  = rows_r x the data row bytes (bf16 2H, f32 4H);
///   GB/s            = bytes / 1e9 / the median over the timed iterations of
///                     rank r's own dispatch (combine) time.
/// These are algorithm bytes, independent of the strategy (what moecomm
/// actually sends is `counters`): a strategy that sends fewer rows shows as
/// a higher bandwidth for the same work, as in DeepEP's comparisons.
struct AlgorithmBandwidth {
  std::vector<int64_t> rows;                        ///< [W]
  std::vector<int64_t> dispatchBytes, combineBytes; ///< [W]
  std::vector<double> dispatchSec, combineSec;      ///< [W]
  double dispatchGBps(size_t r) const {
    return dispatchSec[r] > 0 ? dispatchBytes[r] / 1e9 / dispatchSec[r] : 0;
  }
  double combineGBps(size_t r) const {
    return combineSec[r] > 0 ? combineBytes[r] / 1e9 / combineSec[r] : 0;
  }
};

/// What the measuring path saw for one cell.
struct MeasuredResult {
  std::string backend;      ///< threads | mpi | nccl
  std::string baselineKind; ///< MPI_Alltoallv | moecommAllToAll
  int iterations = 0;
  /// Medians over the timed iterations of the max over ranks.
  double layoutSec = 0, dispatchSec = 0, combineSec = 0, totalSec = 0;
  double baselineSec = 0;
  /// Minima over the timed iterations of the max over ranks.
  double totalMinSec = 0, baselineMinSec = 0;
  /// The runtime's counters summed over ranks (payload bytes / messages).
  TrafficTotals counters;
  /// Every rank's counters equal countTraffic's rows for that rank, per
  /// direction, scope and link class, and its inter-node layout metadata
  /// bytes equal interNodeMetadataBytes.
  bool countersMatch = true;
  std::string mismatch; ///< the first difference, when !countersMatch
  moecommStrategy_t runtimeStrategy = moecommPerExpert;
  double payloadErr = 0;
  bool payloadOk = true;
  /// The GPU backend's per-rank bandwidth (nccl only; the CPU backends' wall
  /// time is only meaningful as a ratio, DESIGN.md §7).
  std::optional<AlgorithmBandwidth> algbw;
};

struct Cell {
  std::string sweep;
  std::string config, model;
  int64_t hidden = 0, configExperts = 0, experts = 0;
  int topk = 0;
  Cluster cluster;
  int64_t tokens = 0;
  uint64_t seed = 1;
  std::string routing;          ///< as requested
  std::string routingEffective; ///< as generated
  std::string routingOrigin;    ///< the generator's description
  workload::PayloadType dtype = workload::PayloadType::BF16;
  moecommStrategy_t strategy = moecommPerExpert;
  /// The strategy whose traffic this is: `strategy`, or for auto the choice
  /// under the link preset `autoLinkPreset` (the runtime's, when measured).
  moecommStrategy_t used = moecommPerExpert;
  /// Index of the preset `auto` chooses with (choicePreset()).
  size_t autoLinkPreset = 0;
  int64_t dispatchRowBytes = 0, combineRowBytes = 0;
  TrafficTotals traffic; ///< exact, countTraffic
  std::vector<moecommScope_t> dispatchScopes, combineScopes;
  int64_t lowerBound[2] = {0, 0};    ///< inter-node, [dispatch, combine]
  int64_t baselineInter[2] = {0, 0}; ///< per_expert bf16, [dispatch, combine]
  /// Per node, inter-node bytes its ranks send in one timed iteration:
  /// dispatch + combine payload + layout metadata (nodeInterBytes).
  std::vector<int64_t> nodeInterBytes;
  /// The same for the baseline (per_expert bf16 rows, no metadata: its
  /// counts are exchanged before the timed region).
  std::vector<int64_t> baselineNodeInterBytes;
  std::vector<PresetResult> models; ///< one per preset, in preset order
  std::optional<MeasuredResult> measured;

  /// Inter-node bytes of both directions.
  int64_t interBytes() const {
    return traffic.bytes[0][moecommLinkInterNode] +
           traffic.bytes[1][moecommLinkInterNode];
  }
  /// "config WxG routing dtype strategy" for messages.
  std::string label() const;
};

/// A (config, cluster, routing) that was not run, and why.
struct Skipped {
  std::string sweep, config, routing;
  Cluster cluster;
  std::string reason;
};

/// The checks over all cells.
struct Findings {
  /// Failed checks (exit status 1): counters != countTraffic, hierarchical
  /// inter-node bytes != lower bound, runtime auto != model auto, payload
  /// sanity, baseline traffic != per_expert traffic, auto gap > tolerance.
  std::vector<std::string> failures;
  double tolerance = 0.05;
  /// auto vs the best fixed strategy, over auto cells and applicable presets.
  double autoWorstGap = 0;
  std::string autoWorstCell;
  int autoChecked = 0;
  std::vector<std::string> autoViolations;
  /// The static (uniform-expectation) choice vs the best fixed strategy.
  double staticWorstGap = 0;
  std::string staticWorstCell;
};

/// Builds the cells of one group: every (dtype, strategy) requested. `counts`
/// holds one DtypeCounts per dtype in `dtypes` order; `bf16` the bf16 counts
/// (the baseline). `choice` indexes `presets`: the preset auto chooses
/// with (choicePreset()).
std::vector<Cell> makeCells(const std::string &sweep, const RoutingGroup &g,
                            const std::vector<workload::PayloadType> &dtypes,
                            const std::vector<moecommStrategy_t> &strategies,
                            const std::vector<DtypeCounts> &counts,
                            const DtypeCounts &bf16,
                            const std::vector<LinkPreset> &presets,
                            size_t choice);

/// Attaches a group's measurement to its cells (same dtype and strategy) and
/// checks it rank by rank against `counts` (countTraffic), the inter-node
/// layout metadata against interNodeMetadataBytes, and the auto choice;
/// problems go to `findings`.
void attachMeasurement(std::vector<Cell> &cells, const RoutingGroup &g,
                       const std::vector<workload::PayloadType> &dtypes,
                       const std::vector<DtypeCounts> &counts,
                       const DtypeCounts &bf16,
                       const GroupMeasurement &measurement, Findings &findings);

/// The checks that need no payload: hierarchical == lower bound, auto's gap
/// vs the best fixed strategy (applicable presets only).
void checkCells(const std::vector<Cell> &cells, Findings &findings);

/// The payload sanity tolerance for a wire dtype (relative to the row's
/// amax times sum |w|): the combine bound (moecomm/Reference/CombineBound.h)
/// of the worst strategy for bf16/f32, plus a rounding and e4m3's half-ulp
/// 2^-4 for fp8.
double payloadTolerance(workload::PayloadType dtype, int topk);

} // namespace moecomm::bench

#endif // MOECOMM_TOOLS_BENCH_CELLS_H

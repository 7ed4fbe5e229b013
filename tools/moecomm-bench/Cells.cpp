//===- Cells.cpp - one row of moecomm-bench's results ---------------------===//

#include "Cells.h"
#include "LinkLimit.h"

#include "moecomm/Reference/CombineBound.h"

#include "moecomm/Workload/RoutingProblem.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace llvm;

namespace moecomm::bench {

std::string Cell::label() const {
  return formatv("{0} {1}x{2} T={3} {4} {5} {6}", config, cluster.nodes,
                 cluster.ranksPerNode, tokens, routing,
                 workload::payloadTypeName(dtype), strategyName(strategy))
      .str();
}

double payloadTolerance(workload::PayloadType dtype, int topk) {
  // The worst strategy's combine bound (two-stage hierarchical); FP8 adds
  // one rounding (the dequantized row to bf16) and e4m3's half-ulp 2^-4, or
  // for mxfp8 its saturation: elements in [448, 512) x scale become 448 x
  // scale, up to 2^-3 off (OCP MX v1.0's floor scale rule, Fp8.h).
  if (workload::isFp8(dtype))
    return ref::combineBound(moecommBfloat16, topk,
                             ref::kMaxCombineRoundings + 1)
               .relative +
           (dtype == workload::PayloadType::MXFP8 ? 0x1.0p-3 : 0x1.0p-4);
  return ref::combineBound(workload::hostType(dtype), topk,
                           ref::kMaxCombineRoundings)
      .relative;
}

std::vector<Cell> makeCells(const std::string &sweep, const RoutingGroup &g,
                            const std::vector<workload::PayloadType> &dtypes,
                            const std::vector<moecommStrategy_t> &strategies,
                            const std::vector<DtypeCounts> &counts,
                            const DtypeCounts &bf16,
                            const std::vector<LinkPreset> &presets,
                            size_t choice) {
  std::vector<Cell> cells;
  const int W = g.topo.ranks(), G = g.topo.ranksPerNode;
  for (size_t i = 0; i < dtypes.size(); ++i) {
    const DtypeCounts &c = counts[i];
    for (moecommStrategy_t s : strategies) {
      Cell cell;
      cell.sweep = sweep;
      cell.config = g.config.name;
      cell.model = g.config.model;
      cell.hidden = g.config.hidden;
      cell.configExperts = g.config.numExperts;
      cell.experts = g.experts;
      cell.topk = g.config.topk;
      cell.cluster = g.topo;
      cell.tokens = g.tokens;
      cell.seed = g.seed;
      cell.routing = g.requested.spec;
      cell.routingEffective = g.effective.spec;
      cell.routingOrigin = g.problem().origin;
      cell.dtype = dtypes[i];
      cell.strategy = s;
      cell.used = s == moecommAuto ? c.autoChoice[choice] : s;
      cell.autoLinkPreset = choice;
      cell.dispatchRowBytes = c.dispatchRowBytes;
      cell.combineRowBytes = c.combineRowBytes;
      cell.traffic = c.totals[cell.used];
      cell.dispatchScopes =
          stageScopes(W, G, cell.used, moecommDirectionDispatch);
      cell.combineScopes =
          stageScopes(W, G, cell.used, moecommDirectionCombine);
      cell.lowerBound[0] = g.remoteNodeCopies * c.dispatchRowBytes;
      cell.lowerBound[1] = g.remoteNodeCopies * c.combineRowBytes;
      for (int d = 0; d < 2; ++d)
        cell.baselineInter[d] =
            bf16.totals[moecommPerExpert].bytes[d][moecommLinkInterNode];
      cell.nodeInterBytes =
          nodeInterBytes(g.summary, c.traffic[cell.used], true, s);
      cell.baselineNodeInterBytes = nodeInterBytes(
          g.summary, bf16.traffic[moecommPerExpert], false, moecommPerExpert);
      for (size_t p = 0; p < presets.size(); ++p) {
        PresetResult r;
        r.preset = presets[p].name;
        r.applies = presetApplies(presets[p], g.topo);
        r.autoChoice = c.autoChoice[p];
        r.time = c.times[p][s == moecommAuto ? r.autoChoice : s];
        r.baselineSec = bf16.times[p][moecommPerExpert].totalSec();
        r.bestFixed = moecommPerExpert;
        r.bestFixedSec = c.times[p][moecommPerExpert].totalSec();
        for (moecommStrategy_t f : kFixedStrategies)
          if (c.times[p][f].totalSec() < r.bestFixedSec) {
            r.bestFixed = f;
            r.bestFixedSec = c.times[p][f].totalSec();
          }
        r.staticChoice = c.staticChoice[p];
        r.staticSec = c.times[p][r.staticChoice].totalSec();
        cell.models.push_back(r);
      }
      cells.push_back(std::move(cell));
    }
  }
  return cells;
}

namespace {

/// Compares one rank's counters with countTraffic's rows of that rank.
/// Returns "" when equal, else the first difference.
std::string compareRank(const moecommTraffic_t &got,
                        const StrategyTraffic &want, int rank) {
  for (int dir = 0; dir < 3; ++dir) {
    int64_t bytes[3][2] = {}, msgs[3][2] = {};
    if (dir < 2) {
      const std::vector<StageTraffic> &stages =
          dir == 0 ? want.dispatch : want.combine;
      for (const StageTraffic &st : stages)
        for (int l = 0; l < 2; ++l) {
          bytes[st.scope][l] += st.ranks[rank].bytesSent[l];
          msgs[st.scope][l] += st.ranks[rank].messagesSent[l];
        }
    }
    const char *dirName = directionName(static_cast<moecommDirection_t>(dir));
    static const char *links[] = {"intra-node", "inter-node"};
    for (int sc = 0; sc < 3; ++sc) {
      const char *scName = scopeName(static_cast<moecommScope_t>(sc));
      for (int l = 0; l < 2; ++l) {
        if (got.bytes[dir][sc][l] != static_cast<uint64_t>(bytes[sc][l]))
          return formatv("rank {0} {1} {2} {3} bytes: counters {4}, "
                         "countTraffic {5}",
                         rank, dirName, scName, links[l], got.bytes[dir][sc][l],
                         bytes[sc][l]);
        if (got.messages[dir][sc][l] != static_cast<uint64_t>(msgs[sc][l]))
          return formatv("rank {0} {1} {2} {3} messages: counters {4}, "
                         "countTraffic {5}",
                         rank, dirName, scName, links[l],
                         got.messages[dir][sc][l], msgs[sc][l]);
      }
    }
  }
  return "";
}

} // namespace

void attachMeasurement(std::vector<Cell> &cells, const RoutingGroup &g,
                       const std::vector<workload::PayloadType> &dtypes,
                       const std::vector<DtypeCounts> &counts,
                       const DtypeCounts &bf16, const GroupMeasurement &m,
                       Findings &findings) {
  const int W = g.topo.ranks();
  const double baselineSec = median(m.baselineSec);

  // The threads baseline's own counters: each rank sends exactly the
  // per-expert rows (dispatch) and gets them back (combine).
  for (size_t r = 0; r < m.baselineTraffic.size(); ++r) {
    const StrategyTraffic &pe = bf16.traffic[moecommPerExpert];
    for (int l = 0; l < 2; ++l) {
      int64_t wantBytes = 0, wantMsgs = 0;
      for (const std::vector<StageTraffic> *dir : {&pe.dispatch, &pe.combine})
        for (const StageTraffic &st : *dir) {
          wantBytes += st.ranks[r].bytesSent[l];
          wantMsgs += st.ranks[r].messagesSent[l];
        }
      uint64_t gotBytes = 0, gotMsgs = 0;
      for (int sc = 0; sc < 3; ++sc) {
        gotBytes += m.baselineTraffic[r].bytes[moecommDirectionAllToAll][sc][l];
        gotMsgs +=
            m.baselineTraffic[r].messages[moecommDirectionAllToAll][sc][l];
      }
      if (gotBytes != static_cast<uint64_t>(wantBytes) ||
          gotMsgs != static_cast<uint64_t>(wantMsgs))
        findings.failures.push_back(formatv(
            "{0} {1}x{2} {3}: baseline rank {4} sent {5} B / {6} messages on "
            "link {7}, per_expert counts {8} B / {9}",
            g.config.name, g.topo.nodes, g.topo.ranksPerNode, g.requested.spec,
            r, gotBytes, gotMsgs, l, wantBytes, wantMsgs));
    }
  }

  for (const OpMeasurement &op : m.ops) {
    size_t di = 0;
    while (di < dtypes.size() && dtypes[di] != op.dtype)
      ++di;
    for (Cell &cell : cells) {
      if (cell.dtype != op.dtype || cell.strategy != op.strategy)
        continue;
      MeasuredResult mr;
      mr.backend = m.backend;
      mr.baselineKind = m.baselineKind;
      mr.iterations = static_cast<int>(op.totalSec.size());
      mr.layoutSec = median(op.layoutSec);
      mr.dispatchSec = median(op.dispatchSec);
      mr.combineSec = median(op.combineSec);
      mr.totalSec = median(op.totalSec);
      mr.baselineSec = baselineSec;
      mr.totalMinSec = minimum(op.totalSec);
      mr.baselineMinSec = minimum(m.baselineSec);
      mr.runtimeStrategy =
          op.rankStrategy.empty() ? cell.used : op.rankStrategy[0];
      for (moecommStrategy_t s : op.rankStrategy)
        if (s != mr.runtimeStrategy)
          findings.failures.push_back(cell.label() +
                                      ": ranks resolved different strategies");
      if (cell.strategy == moecommAuto && mr.runtimeStrategy != cell.used)
        findings.failures.push_back(formatv(
            "{0}: the runtime's auto chose {1}, chooseStrategy on the same "
            "routing and link model chose {2}",
            cell.label(), strategyName(mr.runtimeStrategy),
            strategyName(cell.used)));
      const StrategyTraffic &want = counts[di].traffic[mr.runtimeStrategy];
      for (int r = 0; r < W && r < static_cast<int>(op.rankTraffic.size());
           ++r) {
        const moecommTraffic_t &t = op.rankTraffic[r];
        for (int dir = 0; dir < 2; ++dir)
          for (int sc = 0; sc < 3; ++sc)
            for (int l = 0; l < 2; ++l) {
              mr.counters.bytes[dir][l] +=
                  static_cast<int64_t>(t.bytes[dir][sc][l]);
              mr.counters.messages[dir][l] +=
                  static_cast<int64_t>(t.messages[dir][sc][l]);
            }
        if (mr.countersMatch) {
          std::string diff = compareRank(t, want, r);
          const int64_t meta =
              interNodeMetadataBytes(g.summary, r, cell.strategy);
          if (diff.empty() && t.metadataBytes[moecommLinkInterNode] !=
                                  static_cast<uint64_t>(meta))
            diff = formatv("rank {0} inter-node layout metadata bytes: "
                           "counters {1}, interNodeMetadataBytes {2}",
                           r, t.metadataBytes[moecommLinkInterNode], meta);
          if (!diff.empty()) {
            mr.countersMatch = false;
            mr.mismatch = diff;
            findings.failures.push_back(
                cell.label() + ": runtime counters != countTraffic: " + diff);
          }
        }
      }
      if (m.backend == "nccl") {
        AlgorithmBandwidth bw;
        for (int r = 0; r < W; ++r) {
          int64_t rows = 0;
          for (int src = 0; src < W; ++src)
            rows += g.summary.tokenRanks[static_cast<size_t>(src) * W + r];
          bw.rows.push_back(rows);
          bw.dispatchBytes.push_back(rows * cell.dispatchRowBytes);
          bw.combineBytes.push_back(rows * cell.combineRowBytes);
        }
        bw.dispatchSec = op.rankDispatchSec;
        bw.combineSec = op.rankCombineSec;
        mr.algbw = std::move(bw);
      }
      mr.payloadErr = op.payloadErr;
      mr.payloadOk = op.payloadErr <= payloadTolerance(op.dtype, g.config.topk);
      if (!mr.payloadOk)
        findings.failures.push_back(formatv(
            "{0}: combine(dispatch(x)) with identity experts is off by {1:e} "
            "(relative), more than {2:e}",
            cell.label(), op.payloadErr,
            payloadTolerance(op.dtype, g.config.topk)));
      cell.measured = mr;
    }
  }
}

void checkCells(const std::vector<Cell> &cells, Findings &findings) {
  for (const Cell &c : cells) {
    if (c.used == moecommHierarchical)
      for (int d = 0; d < 2; ++d)
        if (c.traffic.bytes[d][moecommLinkInterNode] != c.lowerBound[d])
          findings.failures.push_back(formatv(
              "{0}: hierarchical {1} inter-node bytes {2} != lower bound {3}",
              c.label(), d == 0 ? "dispatch" : "combine",
              c.traffic.bytes[d][moecommLinkInterNode], c.lowerBound[d]));
    if (c.strategy != moecommAuto)
      continue;
    for (const PresetResult &p : c.models) {
      if (!p.applies)
        continue;
      ++findings.autoChecked;
      const double gap =
          p.bestFixedSec > 0 ? p.time.totalSec() / p.bestFixedSec - 1 : 0;
      const double staticGap =
          p.bestFixedSec > 0 ? p.staticSec / p.bestFixedSec - 1 : 0;
      const std::string where = c.label() + " [" + p.preset + "]";
      if (gap > findings.autoWorstGap || findings.autoWorstCell.empty()) {
        findings.autoWorstGap = std::max(gap, findings.autoWorstGap);
        findings.autoWorstCell = where;
      }
      if (staticGap > findings.staticWorstGap ||
          findings.staticWorstCell.empty()) {
        findings.staticWorstGap = std::max(staticGap, findings.staticWorstGap);
        findings.staticWorstCell = where;
      }
      if (gap > findings.tolerance) {
        std::string v = formatv("{0}: auto ({1}) is {2:f1}% slower than {3} "
                                "(modelled)",
                                where, strategyName(p.autoChoice), 100 * gap,
                                strategyName(p.bestFixed));
        findings.autoViolations.push_back(v);
        findings.failures.push_back(v);
      }
    }
  }
}

} // namespace moecomm::bench

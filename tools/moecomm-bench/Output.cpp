//===- Output.cpp - moecomm-bench's table, CSV and JSON -------------------===//

#include "Output.h"
#include "LinkLimit.h"

#include "moecomm/Workload/RoutingProblem.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

using namespace llvm;

namespace moecomm::bench {

std::string humanBytes(double bytes) {
  static const char *units[] = {"B", "kB", "MB", "GB", "TB", "PB"};
  int u = 0;
  while (bytes >= 1000 && u < 5) {
    bytes /= 1000;
    ++u;
  }
  if (u == 0)
    return formatv("{0} B", static_cast<int64_t>(bytes)).str();
  return formatv(bytes >= 100 ? "{0:f0} {1}" : "{0:f2} {1}", bytes, units[u])
      .str();
}

std::string shortestDouble(double value) {
  char buffer[40];
  std::snprintf(buffer, sizeof(buffer), "%.17g", value);
  return buffer;
}

int plotPreset(const BenchReport &report, const Cluster &cluster) {
  const size_t p = choicePreset(report.presets, report.autoPreset, cluster);
  return presetApplies(report.presets[p], cluster) ? static_cast<int>(p) : -1;
}

namespace {

std::string ms(double sec) { return formatv("{0:f3}", sec * 1e3).str(); }

/// `field` as an RFC 4180 CSV field: in double quotes, with each double quote
/// doubled, when it holds a comma, a double quote, CR or LF; else as is.
std::string csvField(StringRef field) {
  if (field.find_first_of(",\"\r\n") == StringRef::npos)
    return field.str();
  std::string quoted = "\"";
  for (char ch : field) {
    if (ch == '"')
      quoted += '"';
    quoted += ch;
  }
  return quoted + "\"";
}

/// Writes one CSV record: every field through csvField, so that no field
/// (config names and models are user text) can shift the columns.
void writeCsvRecord(raw_ostream &os, const std::vector<std::string> &fields) {
  for (size_t i = 0; i < fields.size(); ++i)
    os << (i ? "," : "") << csvField(fields[i]);
  os << "\n";
}

double ratio(double a, double b) { return b > 0 ? a / b : 0; }

/// Key of a table block: cells sharing one routing.
using GroupKey = std::tuple<std::string, std::string, int, int, std::string,
                            int64_t>; // sweep, config, nodes, G, routing, T

GroupKey groupKey(const Cell &c) {
  return {c.sweep,   c.config, c.cluster.nodes, c.cluster.ranksPerNode,
          c.routing, c.tokens};
}

std::string stagesText(const std::vector<double> &s) {
  if (s.empty())
    return "-";
  std::string out;
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? "+" : "") + ms(s[i]);
  return out;
}

void printScaling(raw_ostream &os, const BenchReport &report) {
  // Series: (config, G, routing, tokens, dtype) with >= 2 rank counts.
  using SeriesKey =
      std::tuple<std::string, int, std::string, int64_t, workload::PayloadType>;
  std::map<SeriesKey, std::map<int, std::vector<const Cell *>>> series;
  for (const Cell &c : report.cells)
    series[{c.config, c.cluster.ranksPerNode, c.routing, c.tokens, c.dtype}]
          [c.cluster.ranks()]
              .push_back(&c);
  bool header = false;
  for (const auto &[key, byRanks] : series) {
    if (byRanks.size() < 2)
      continue;
    const auto &[config, G, routing, tokens, dtype] = key;
    const Cell &any = *byRanks.begin()->second.front();
    const int p = plotPreset(report, any.cluster);
    if (!header) {
      os << "\nScaling with ranks (exact bytes of dispatch + combine; "
            "modelled time = dispatch + combine, alpha-beta model):\n";
      header = true;
    }
    os << formatv("\n  {0}, {1} ranks/node, {2}, {3} tokens/rank, {4} wire, "
                  "modelled on {5}\n",
                  config, G, routing, tokens, workload::payloadTypeName(dtype),
                  p < 0 ? std::string("(no preset applies)")
                        : std::string(report.presets[p].name));
    os << formatv("  {0,6} {1,6} {2,6} | {3,12} {4,12} {5,12} | {6,10} {7,10} "
                  "{8,10} {9,10} {10,-12}\n",
                  "ranks", "nodes", "E", "inter pe", "inter flat", "inter hier",
                  "ms pe", "ms flat", "ms hier", "ms auto", "auto picks");
    /// Per strategy: (bytes, modelled seconds, ranks) at the first rank count
    /// with inter-node traffic, and at the last.
    struct Point {
      double bytes = 0, sec = 0;
      int ranks = 0;
    };
    std::map<moecommStrategy_t, Point> first, last;
    for (const auto &[W, cells] : byRanks) {
      std::map<moecommStrategy_t, const Cell *> by;
      for (const Cell *c : cells)
        by[c->strategy] = c;
      auto bytesOf = [&](moecommStrategy_t s) {
        return by.count(s) ? humanBytes(by[s]->interBytes()) : std::string("-");
      };
      auto timeOf = [&](moecommStrategy_t s) {
        return by.count(s) && p >= 0 ? ms(by[s]->models[p].time.totalSec())
                                     : std::string("-");
      };
      for (const auto &[s, c] : by) {
        Point v{static_cast<double>(c->interBytes()),
                p >= 0 ? c->models[p].time.totalSec() : 0.0, W};
        if (!first.count(s) || first[s].bytes == 0)
          first[s] = v;
        last[s] = v;
      }
      const Cell &c0 = *cells.front();
      os << formatv("  {0,6} {1,6} {2,6} | {3,12} {4,12} {5,12} | {6,10} "
                    "{7,10} {8,10} {9,10} {10,-12}\n",
                    W, c0.cluster.nodes, c0.experts, bytesOf(moecommPerExpert),
                    bytesOf(moecommFlat), bytesOf(moecommHierarchical),
                    timeOf(moecommPerExpert), timeOf(moecommFlat),
                    timeOf(moecommHierarchical), timeOf(moecommAuto),
                    by.count(moecommAuto) && p >= 0
                        ? strategyName(by[moecommAuto]->models[p].autoChoice)
                        : "-");
    }
    os << "  growth:";
    for (const auto &[s, v] : last)
      os << formatv(" {0} {1} -> {2} ranks: bytes x{3:f1}, time x{4:f1};",
                    strategyName(s), first[s].ranks, v.ranks,
                    ratio(v.bytes, first[s].bytes), ratio(v.sec, first[s].sec));
    os << "\n";
  }
}

/// The replicated-experts table (--placements): one block per group.
void printPlacements(raw_ostream &os, const BenchReport &report) {
  if (!report.placementsWanted)
    return;
  os << "\nreplicated experts (--placements; counted): inter-node bytes of "
        "dispatch + combine per strategy over the physical routing each "
        "rank's replica choice gives; bound = sum over tokens of the fewest "
        "remote nodes holding a replica of each expert x row bytes; vs none "
        "= hierarchical / hierarchical without replicas; imbalance = max "
        "rows received per rank / mean\n";
  std::string last;
  for (const PlacementRow &r : report.placements) {
    std::string key =
        formatv("[{0}] {1} {2}x{3} {4}", r.sweep, r.config, r.cluster.nodes,
                r.cluster.ranksPerNode, r.routing)
            .str();
    if (key != last) {
      os << formatv("{0}: E={1}, {2} tokens/rank\n", key, r.experts, r.tokens);
      os << formatv("  {0,-14} {1,6} {2,-12} {3,-9} {4,-4} {5,10} {6,10} "
                    "{7,12} {8,10} {9,7} {10,7} {11,9}\n",
                    "placement", "slots", "eplb", "choice", "wire",
                    "per_expert", "flat", "hierarchical", "bound", "x bound",
                    "vs none", "imbalance");
      last = key;
    }
    const int64_t bound = r.lowerBound[0] + r.lowerBound[1];
    const int64_t hier = r.interBytes[moecommHierarchical];
    os << formatv(
        "  {0,-14} {1,6} {2,-12} {3,-9} {4,-4} {5,10} {6,10} {7,12} "
        "{8,10} {9,7} {10,7} {11,9:f3}\n",
        r.placement, r.slots, r.policy, r.choice,
        workload::payloadTypeName(r.dtype),
        humanBytes(r.interBytes[moecommPerExpert]),
        humanBytes(r.interBytes[moecommFlat]), humanBytes(hier),
        humanBytes(bound),
        bound ? formatv("{0:f3}", ratio(hier, bound)).str() : std::string("-"),
        r.noReplicaHierarchical
            ? formatv("{0:f3}", ratio(hier, r.noReplicaHierarchical)).str()
            : std::string("-"),
        r.imbalance);
  }
}

} // namespace

void printTable(raw_ostream &os, const BenchReport &report) {
  size_t measured = 0;
  for (const Cell &c : report.cells)
    measured += c.measured.has_value();
  os << formatv("moecomm-bench: {0} cells, {1} measured ({2}), {3:f1} s\n",
                report.cells.size(), measured, report.backend, report.seconds);
  os << "bytes: exact payload bytes of dispatch + combine summed over ranks "
        "(copies to self excluded); inter# = inter-node messages; "
        "x bound = inter-node / lower bound; "
        "x base = vs per_expert with a bf16 wire (Megatron's all-to-all), "
        "dispatch + combine and dispatch only (d)\n";
  os << "modelled: alpha-beta time (CostModel.h), NOT measured; presets:";
  for (const LinkPreset &p : report.presets)
    os << formatv(" {0} (NVLink domain {1}, {2:f0}/{3:f0} GB/s intra/inter)",
                  p.name, p.ranksPerNode, p.link.intraBetaBytesPerSec / 1e9,
                  p.link.interBetaBytesPerSec / 1e9);
  os << "\n";
  if (report.baselineKind == "none")
    os << "measured: none (counting only; no baseline)\n";
  else if (report.backend == "nccl")
    os << "measured: GPU time (host clock around the calls, each ended by a "
          "stream synchronize; median; layout + dispatch + combine), as a "
          "ratio to the baseline moecommAllToAll of the per-expert rows and "
          "back over NCCL, run in the same process; algbw = DeepEP's "
          "algorithm bandwidth per rank: tokens received (one row per (token, "
          "rank)) x row bytes / 1e9 / that rank's median time\n";
  else
    os << formatv("measured: CPU wall time on this machine (median; layout + "
                  "dispatch + combine), as a ratio to the baseline {0} of the "
                  "per-expert rows and back, run in the same process{1}\n",
                  report.baselineKind,
                  report.baselineKind == "moecommAllToAll"
                      ? " (threads backend: MPI_Alltoallv needs mpirun)"
                      : "");

  if (report.linkRateBitsPerSec > 0)
    os << formatv("link: {0:f3} Gbit/s per node egress; link ms = the slowest "
                  "node's inter-node bytes (payload + layout metadata) / "
                  "rate; x link = measured median / link ms\n",
                  report.linkRateBitsPerSec / 1e9);

  std::map<GroupKey, std::vector<const Cell *>> groups;
  std::vector<GroupKey> order;
  for (const Cell &c : report.cells) {
    GroupKey k = groupKey(c);
    if (!groups.count(k))
      order.push_back(k);
    groups[k].push_back(&c);
  }
  for (const GroupKey &k : order) {
    const std::vector<const Cell *> &cells = groups[k];
    const Cell &c0 = *cells.front();
    os << formatv("\n[{0}] {1} ({2}): {3} ranks = {4} nodes x {5}, E={6}{7} "
                  "K={8} H={9}, {10} tokens/rank, routing {11}\n",
                  c0.sweep, c0.config, c0.model, c0.cluster.ranks(),
                  c0.cluster.nodes, c0.cluster.ranksPerNode, c0.experts,
                  c0.experts != c0.configExperts
                      ? formatv(" (scaled from {0})", c0.configExperts).str()
                      : std::string(),
                  c0.topk, c0.hidden, c0.tokens, c0.routingOrigin);
    // The detailed modelled columns use the preset auto chooses with.
    const size_t dp = c0.autoLinkPreset;
    const char *dpName = report.presets[dp].name;
    // The wire column: 4 wide, wider for the group's longer dtype names
    // (fp8_e4m3_ue8m0).
    size_t wireWidth = 4;
    for (const Cell *c : cells)
      wireWidth =
          std::max(wireWidth, workload::payloadTypeName(c->dtype).size());
    auto wireColumn = [&](StringRef text) {
      return text.str() + std::string(wireWidth - text.size(), ' ');
    };
    os << formatv(
        "  {0,-24} {1} {2,10} {3,10} {4,8} {5,7} {6,6} {7,6} | "
        "modelled {8} ms: {9} {10,8} {11,6}",
        "strategy", wireColumn("wire"), "inter", "intra", "inter#", "x bound", "x base",
        "d", dpName,
        formatv("{0,-15} | {1,-15}", "dispatch stages", "combine stages"),
        "total", "x base");
    for (size_t p = 0; p < report.presets.size(); ++p)
      if (p != dp)
        os << formatv(" | {0,16}", report.presets[p].name);
    os << " | measured ms  x baseline   min ms";
    if (report.linkRateBitsPerSec > 0)
      os << "  link ms  x link";
    os << "\n";
    for (const Cell *c : cells) {
      std::string name = strategyName(c->strategy);
      if (c->strategy == moecommAuto)
        name += std::string(" -> ") + strategyName(c->used);
      const int64_t lb = c->lowerBound[0] + c->lowerBound[1];
      const int64_t base = c->baselineInter[0] + c->baselineInter[1];
      const PresetResult &m = c->models[dp];
      // Stage times joined by '+', dispatch and combine in their own columns.
      std::string stages = m.applies
                               ? formatv("{0,-15} | {1,-15}",
                                         stagesText(m.time.dispatchStageSec),
                                         stagesText(m.time.combineStageSec))
                                     .str()
                               : formatv("{0,-33}", "n/a").str();
      os << formatv(
          "  {0,-24} {1} {2,10} {3,10} {4,8} {5,7} {6,6} {7,6} | "
          "{8} {9} {10,8} {11,6}",
          name, wireColumn(workload::payloadTypeName(c->dtype)),
          humanBytes(c->interBytes()),
          humanBytes(c->traffic.bytes[0][0] + c->traffic.bytes[1][0]),
          c->traffic.messages[0][1] + c->traffic.messages[1][1],
          lb ? formatv("{0:f3}", ratio(c->interBytes(), lb)).str()
             : std::string("-"),
          base ? formatv("{0:f3}", ratio(c->interBytes(), base)).str()
               : std::string("-"),
          c->baselineInter[0] ? formatv("{0:f3}", ratio(c->traffic.bytes[0][1],
                                                        c->baselineInter[0]))
                                    .str()
                              : std::string("-"),
          std::string(std::strlen(dpName) + 13, ' '), stages,
          m.applies ? ms(m.time.totalSec()) : std::string("n/a"),
          m.applies && m.baselineSec > 0
              ? formatv("{0:f3}", ratio(m.time.totalSec(), m.baselineSec)).str()
              : std::string("-"));
      for (size_t p = 0; p < c->models.size(); ++p) {
        if (p == dp)
          continue;
        const PresetResult &o = c->models[p];
        os << formatv(" | {0,16}",
                      o.applies
                          ? formatv("{0} ({1:f2})", ms(o.time.totalSec()),
                                    ratio(o.time.totalSec(), o.baselineSec))
                                .str()
                          : std::string("n/a"));
      }
      if (c->measured)
        os << formatv(" | {0,11} {1,10:f2} {2,8}", ms(c->measured->totalSec),
                      ratio(c->measured->totalSec, c->measured->baselineSec),
                      ms(c->measured->totalMinSec));
      else
        os << " | " << formatv("{0,11} {1,10} {2,8}", "-", "-", "-");
      if (report.linkRateBitsPerSec > 0) {
        const double link =
            linkLimitedSec(c->nodeInterBytes, report.linkRateBitsPerSec);
        os << formatv(
            " {0,8} {1,7}", ms(link),
            c->measured && link > 0
                ? formatv("{0:f2}", c->measured->totalSec / link).str()
                : std::string("-"));
      }
      os << "\n";
    }
    for (const Cell *c : cells)
      if (c->measured && c->strategy == cells.front()->strategy &&
          c->dtype == cells.front()->dtype)
        os << formatv(
            "  baseline {0}: {1} ms (median of {2}, min {4} ms{5}); "
            "counters == countTraffic on every rank: {3}\n",
            c->measured->baselineKind, ms(c->measured->baselineSec),
            c->measured->iterations,
            [&] {
              for (const Cell *x : cells)
                if (x->measured && !x->measured->countersMatch)
                  return "NO";
              return "yes";
            }(),
            ms(c->measured->baselineMinSec),
            [&] {
              if (report.linkRateBitsPerSec <= 0)
                return std::string();
              const double link = linkLimitedSec(c->baselineNodeInterBytes,
                                                 report.linkRateBitsPerSec);
              return formatv("; link-limited {0} ms, x link {1}", ms(link),
                             link > 0 ? formatv("{0:f2}",
                                                c->measured->baselineSec / link)
                                            .str()
                                      : std::string("-"))
                  .str();
            }());
    for (const Cell *c : cells)
      if (c->measured && c->measured->algbw) {
        const AlgorithmBandwidth &bw = *c->measured->algbw;
        double minD = bw.dispatchGBps(0), minC = bw.combineGBps(0);
        for (size_t r = 1; r < bw.rows.size(); ++r) {
          minD = std::min(minD, bw.dispatchGBps(r));
          minC = std::min(minC, bw.combineGBps(r));
        }
        os << formatv("  algbw {0} {1}: dispatch {2:f2} GB/s, combine {3:f2} "
                      "GB/s (rank 0: {4} rows, {5} / {6}); min over ranks "
                      "{7:f2} / {8:f2} GB/s\n",
                      strategyName(c->strategy),
                      workload::payloadTypeName(c->dtype), bw.dispatchGBps(0),
                      bw.combineGBps(0), bw.rows[0],
                      humanBytes(bw.dispatchBytes[0]),
                      humanBytes(bw.combineBytes[0]), minD, minC);
      }
  }

  printScaling(os, report);
  printPlacements(os, report);

  const Findings &f = report.findings;
  os << formatv(
      "\nauto (the runtime's per-call choice, chooseStrategy on the "
      "layout it computed): {0} cell x preset checks, worst gap vs "
      "the best fixed strategy {1:f2}%{2}; violations (> {3:f0}%): "
      "{4}\n",
      f.autoChecked, 100 * f.autoWorstGap,
      f.autoWorstCell.empty() ? std::string() : " at " + f.autoWorstCell,
      100 * f.tolerance,
      f.autoViolations.empty() ? std::string("none")
                               : std::to_string(f.autoViolations.size()));
  // The violations themselves are failures, listed once under "checks:".
  os << formatv("static choice (chooseStrategyUniform: expected uniform "
                "traffic, no routing): worst gap {0:f2}%{1}\n",
                100 * f.staticWorstGap,
                f.staticWorstCell.empty() ? std::string()
                                          : " at " + f.staticWorstCell);
  for (const Skipped &s : report.skipped)
    os << formatv("skipped [{0}] {1} {2}x{3} {4}: {5}\n", s.sweep, s.config,
                  s.cluster.nodes, s.cluster.ranksPerNode, s.routing, s.reason);
  if (f.failures.empty())
    os << "checks: all passed\n";
  else {
    os << formatv("checks: {0} FAILED\n", f.failures.size());
    for (const std::string &e : f.failures)
      os << "  " << e << "\n";
  }
  for (const std::string &p : report.plots)
    os << "plot: " << p << "\n";
  if (report.plotsWanted && report.plots.empty())
    os << "plots: none (the cells at two or more rank counts were skipped)\n";
}

/// The CSV columns of a measurement, empty in a row that has none.
const char *const MeasuredColumns[] = {
    "measured_backend",
    "measured_iterations",
    "measured_layout_s",
    "measured_dispatch_s",
    "measured_combine_s",
    "measured_total_s",
    "baseline_kind",
    "baseline_s",
    "measured_vs_baseline",
    "counters_dispatch_intra_node_bytes",
    "counters_dispatch_inter_node_bytes",
    "counters_combine_intra_node_bytes",
    "counters_combine_inter_node_bytes",
    "counters_dispatch_intra_node_messages",
    "counters_dispatch_inter_node_messages",
    "counters_combine_intra_node_messages",
    "counters_combine_inter_node_messages",
    "counters_match",
    "runtime_strategy",
    "payload_max_err",
    "payload_ok",
};

/// The CSV columns of the minima and the link-limited time (LinkLimit.h),
/// after every other column; empty where they do not apply (min: not
/// measured; link: no --link-rate; x_link: not measured).
const char *const LinkColumns[] = {
    "measured_total_min_s",
    "baseline_min_s",
    "link_rate_bits_per_s",
    "node_inter_node_bytes_max",
    "link_limited_s",
    "x_link",
    "baseline_node_inter_node_bytes_max",
    "baseline_link_limited_s",
    "baseline_x_link",
};

void writeCsv(raw_ostream &os, const BenchReport &report) {
  std::vector<std::string> cols = {"sweep",
                                   "config",
                                   "model",
                                   "hidden",
                                   "config_experts",
                                   "experts",
                                   "topk",
                                   "nodes",
                                   "ranks_per_node",
                                   "ranks",
                                   "tokens_per_rank",
                                   "seed",
                                   "routing",
                                   "routing_effective",
                                   "dtype",
                                   "strategy",
                                   "strategy_used",
                                   "auto_link_preset",
                                   "dispatch_row_bytes",
                                   "combine_row_bytes",
                                   "dispatch_intra_node_bytes",
                                   "dispatch_inter_node_bytes",
                                   "combine_intra_node_bytes",
                                   "combine_inter_node_bytes",
                                   "dispatch_intra_node_messages",
                                   "dispatch_inter_node_messages",
                                   "combine_intra_node_messages",
                                   "combine_inter_node_messages",
                                   "dispatch_inter_node_lower_bound_bytes",
                                   "combine_inter_node_lower_bound_bytes",
                                   "inter_node_vs_lower_bound",
                                   "dispatch_inter_node_vs_baseline",
                                   "inter_node_vs_baseline",
                                   "dispatch_stages",
                                   "combine_stages"};
  for (const LinkPreset &p : report.presets)
    for (const char *f :
         {"applies", "modelled_dispatch_stage0_s", "modelled_dispatch_stage1_s",
          "modelled_combine_stage0_s", "modelled_combine_stage1_s",
          "modelled_dispatch_s", "modelled_combine_s", "modelled_total_s",
          "modelled_vs_baseline", "auto_choice", "best_fixed", "auto_gap",
          "static_choice", "static_gap"})
      cols.push_back(std::string(p.name) + "_" + f);
  cols.insert(cols.end(), std::begin(MeasuredColumns),
              std::end(MeasuredColumns));
  cols.insert(cols.end(), std::begin(LinkColumns), std::end(LinkColumns));
  writeCsvRecord(os, cols);

  auto num = [](double v) { return shortestDouble(v); };
  auto scopes = [](const std::vector<moecommScope_t> &v) {
    std::vector<std::string> names;
    for (moecommScope_t s : v)
      names.push_back(scopeName(s));
    return join(names, "+");
  };
  for (const Cell &c : report.cells) {
    std::vector<std::string> v = {c.sweep,
                                  c.config,
                                  c.model,
                                  std::to_string(c.hidden),
                                  std::to_string(c.configExperts),
                                  std::to_string(c.experts),
                                  std::to_string(c.topk),
                                  std::to_string(c.cluster.nodes),
                                  std::to_string(c.cluster.ranksPerNode),
                                  std::to_string(c.cluster.ranks()),
                                  std::to_string(c.tokens),
                                  std::to_string(c.seed),
                                  c.routing,
                                  c.routingEffective,
                                  workload::payloadTypeName(c.dtype).str(),
                                  strategyName(c.strategy),
                                  strategyName(c.used),
                                  report.presets[c.autoLinkPreset].name,
                                  std::to_string(c.dispatchRowBytes),
                                  std::to_string(c.combineRowBytes)};
    for (int d = 0; d < 2; ++d)
      for (int l = 0; l < 2; ++l)
        v.push_back(std::to_string(c.traffic.bytes[d][l]));
    for (int d = 0; d < 2; ++d)
      for (int l = 0; l < 2; ++l)
        v.push_back(std::to_string(c.traffic.messages[d][l]));
    v.push_back(std::to_string(c.lowerBound[0]));
    v.push_back(std::to_string(c.lowerBound[1]));
    const int64_t lb = c.lowerBound[0] + c.lowerBound[1];
    v.push_back(lb ? num(ratio(c.interBytes(), lb)) : "");
    v.push_back(c.baselineInter[0]
                    ? num(ratio(c.traffic.bytes[0][1], c.baselineInter[0]))
                    : "");
    const int64_t base = c.baselineInter[0] + c.baselineInter[1];
    v.push_back(base ? num(ratio(c.interBytes(), base)) : "");
    v.push_back(scopes(c.dispatchScopes));
    v.push_back(scopes(c.combineScopes));
    for (const PresetResult &p : c.models) {
      v.push_back(p.applies ? "1" : "0");
      for (const std::vector<double> *st :
           {&p.time.dispatchStageSec, &p.time.combineStageSec})
        for (size_t i = 0; i < 2; ++i)
          v.push_back(i < st->size() ? num((*st)[i]) : "");
      v.push_back(num(p.time.dispatchSec));
      v.push_back(num(p.time.combineSec));
      v.push_back(num(p.time.totalSec()));
      v.push_back(p.baselineSec > 0 ? num(p.time.totalSec() / p.baselineSec)
                                    : "");
      v.push_back(strategyName(p.autoChoice));
      v.push_back(strategyName(p.bestFixed));
      v.push_back(c.strategy == moecommAuto && p.bestFixedSec > 0
                      ? num(p.time.totalSec() / p.bestFixedSec - 1)
                      : "");
      v.push_back(strategyName(p.staticChoice));
      v.push_back(p.bestFixedSec > 0 ? num(p.staticSec / p.bestFixedSec - 1)
                                     : "");
    }
    if (c.measured) {
      const MeasuredResult &m = *c.measured;
      v.push_back(m.backend);
      v.push_back(std::to_string(m.iterations));
      v.push_back(num(m.layoutSec));
      v.push_back(num(m.dispatchSec));
      v.push_back(num(m.combineSec));
      v.push_back(num(m.totalSec));
      v.push_back(m.baselineKind);
      v.push_back(num(m.baselineSec));
      v.push_back(m.baselineSec > 0 ? num(m.totalSec / m.baselineSec) : "");
      for (int d = 0; d < 2; ++d)
        for (int l = 0; l < 2; ++l)
          v.push_back(std::to_string(m.counters.bytes[d][l]));
      for (int d = 0; d < 2; ++d)
        for (int l = 0; l < 2; ++l)
          v.push_back(std::to_string(m.counters.messages[d][l]));
      v.push_back(m.countersMatch ? "1" : "0");
      v.push_back(strategyName(m.runtimeStrategy));
      v.push_back(num(m.payloadErr));
      v.push_back(m.payloadOk ? "1" : "0");
    } else {
      v.insert(v.end(), std::size(MeasuredColumns), "");
    }
    const double rate = report.linkRateBitsPerSec;
    const double link = linkLimitedSec(c.nodeInterBytes, rate);
    const double baseLink = linkLimitedSec(c.baselineNodeInterBytes, rate);
    v.push_back(c.measured ? num(c.measured->totalMinSec) : "");
    v.push_back(c.measured ? num(c.measured->baselineMinSec) : "");
    v.push_back(rate > 0 ? num(rate) : "");
    v.push_back(std::to_string(maxNodeBytes(c.nodeInterBytes)));
    v.push_back(rate > 0 ? num(link) : "");
    v.push_back(rate > 0 && c.measured && link > 0
                    ? num(c.measured->totalSec / link)
                    : "");
    v.push_back(std::to_string(maxNodeBytes(c.baselineNodeInterBytes)));
    v.push_back(rate > 0 ? num(baseLink) : "");
    v.push_back(rate > 0 && c.measured && baseLink > 0
                    ? num(c.measured->baselineSec / baseLink)
                    : "");
    writeCsvRecord(os, v);
  }
}

/// The JSON's statement of measured.algbw (Cells.h, AlgorithmBandwidth).
constexpr const char *kAlgorithmBandwidthDefinition =
    "DeepEP's algorithm bandwidth (tests/test_intranode.py): per rank r, "
    "rows = tokens of all ranks with a top-k expert on r (self included); "
    "dispatch_bytes = rows x wire row bytes, combine_bytes = rows x data row "
    "bytes; gbps = bytes / 1e9 / the median over the timed iterations of "
    "rank r's dispatch (combine) seconds";

json::Value toJson(const BenchReport &report) {
  auto linkObj = [](const int64_t a[2][2], int d) {
    return json::Object{{"intra_node", a[d][0]}, {"inter_node", a[d][1]}};
  };
  auto dirObj = [&](const int64_t a[2][2]) {
    return json::Object{{"dispatch", linkObj(a, 0)},
                        {"combine", linkObj(a, 1)}};
  };
  auto scopes = [](const std::vector<moecommScope_t> &v) {
    json::Array a;
    for (moecommScope_t s : v)
      a.push_back(scopeName(s));
    return a;
  };
  json::Array presets;
  for (const LinkPreset &p : report.presets)
    presets.push_back(
        json::Object{{"name", p.name},
                     {"nvlink_domain", p.ranksPerNode},
                     {"intra_alpha_s", p.link.intraAlphaSec},
                     {"intra_beta_bytes_per_s", p.link.intraBetaBytesPerSec},
                     {"inter_alpha_s", p.link.interAlphaSec},
                     {"inter_beta_bytes_per_s", p.link.interBetaBytesPerSec}});
  json::Array cells;
  for (const Cell &c : report.cells) {
    json::Object modelled;
    for (const PresetResult &p : c.models) {
      json::Array ds, cs;
      for (double s : p.time.dispatchStageSec)
        ds.push_back(s);
      for (double s : p.time.combineStageSec)
        cs.push_back(s);
      modelled[p.preset] =
          json::Object{{"applies", p.applies},
                       {"dispatch_stage_s", std::move(ds)},
                       {"combine_stage_s", std::move(cs)},
                       {"dispatch_s", p.time.dispatchSec},
                       {"combine_s", p.time.combineSec},
                       {"total_s", p.time.totalSec()},
                       {"baseline_total_s", p.baselineSec},
                       {"vs_baseline", ratio(p.time.totalSec(), p.baselineSec)},
                       {"auto_choice", strategyName(p.autoChoice)},
                       {"best_fixed", strategyName(p.bestFixed)},
                       {"best_fixed_total_s", p.bestFixedSec},
                       {"static_choice", strategyName(p.staticChoice)},
                       {"static_total_s", p.staticSec}};
    }
    json::Object o{
        {"sweep", c.sweep},
        {"config", c.config},
        {"model", c.model},
        {"hidden", c.hidden},
        {"config_experts", c.configExperts},
        {"num_experts", c.experts},
        {"topk", c.topk},
        {"nodes", c.cluster.nodes},
        {"ranks_per_node", c.cluster.ranksPerNode},
        {"ranks", c.cluster.ranks()},
        {"tokens_per_rank", c.tokens},
        {"seed", static_cast<int64_t>(c.seed)},
        {"routing", c.routing},
        {"routing_effective", c.routingEffective},
        {"routing_origin", c.routingOrigin},
        {"dtype", workload::payloadTypeName(c.dtype)},
        {"strategy", strategyName(c.strategy)},
        {"strategy_used", strategyName(c.used)},
        {"auto_link_preset", report.presets[c.autoLinkPreset].name},
        {"row_bytes", json::Object{{"dispatch", c.dispatchRowBytes},
                                   {"combine", c.combineRowBytes}}},
        {"bytes", dirObj(c.traffic.bytes)},
        {"messages", dirObj(c.traffic.messages)},
        {"inter_node_bytes", c.interBytes()},
        {"inter_node_lower_bound_bytes",
         json::Object{{"dispatch", c.lowerBound[0]},
                      {"combine", c.lowerBound[1]}}},
        {"baseline_inter_node_bytes",
         json::Object{{"dispatch", c.baselineInter[0]},
                      {"combine", c.baselineInter[1]}}},
        {"stages", json::Object{{"dispatch", scopes(c.dispatchScopes)},
                                {"combine", scopes(c.combineScopes)}}},
        {"node_inter_node_bytes", json::Array(c.nodeInterBytes)},
        {"baseline_node_inter_node_bytes",
         json::Array(c.baselineNodeInterBytes)},
        {"modelled", std::move(modelled)},
        {"measured", nullptr},
        {"link", nullptr}};
    if (c.measured) {
      const MeasuredResult &m = *c.measured;
      o["measured"] = json::Object{
          {"backend", m.backend},
          {"iterations", m.iterations},
          {"layout_s", m.layoutSec},
          {"dispatch_s", m.dispatchSec},
          {"combine_s", m.combineSec},
          {"total_s", m.totalSec},
          {"baseline_kind", m.baselineKind},
          {"baseline_s", m.baselineSec},
          {"vs_baseline", ratio(m.totalSec, m.baselineSec)},
          {"counters", json::Object{{"bytes", dirObj(m.counters.bytes)},
                                    {"messages", dirObj(m.counters.messages)}}},
          {"counters_match", m.countersMatch},
          {"mismatch", m.mismatch},
          {"runtime_strategy", strategyName(m.runtimeStrategy)},
          {"payload_max_err", m.payloadErr},
          {"payload_ok", m.payloadOk},
          {"total_min_s", m.totalMinSec},
          {"baseline_min_s", m.baselineMinSec}};
      if (m.algbw) {
        const AlgorithmBandwidth &bw = *m.algbw;
        json::Array dGBps, cGBps;
        for (size_t r = 0; r < bw.rows.size(); ++r) {
          dGBps.push_back(bw.dispatchGBps(r));
          cGBps.push_back(bw.combineGBps(r));
        }
        o.getObject("measured")
            ->try_emplace(
                "algbw",
                json::Object{{"definition", kAlgorithmBandwidthDefinition},
                             {"rows", json::Array(bw.rows)},
                             {"dispatch_bytes", json::Array(bw.dispatchBytes)},
                             {"combine_bytes", json::Array(bw.combineBytes)},
                             {"dispatch_s", json::Array(bw.dispatchSec)},
                             {"combine_s", json::Array(bw.combineSec)},
                             {"dispatch_gbps", std::move(dGBps)},
                             {"combine_gbps", std::move(cGBps)}});
      }
    }
    if (const double rate = report.linkRateBitsPerSec; rate > 0) {
      const double link = linkLimitedSec(c.nodeInterBytes, rate);
      const double baseLink = linkLimitedSec(c.baselineNodeInterBytes, rate);
      auto xLink = [&](double sec, double limit) -> json::Value {
        if (!c.measured || limit <= 0)
          return nullptr;
        return sec / limit;
      };
      o["link"] = json::Object{
          {"rate_bits_per_s", rate},
          {"link_limited_s", link},
          {"x_link", xLink(c.measured ? c.measured->totalSec : 0, link)},
          {"baseline_link_limited_s", baseLink},
          {"baseline_x_link",
           xLink(c.measured ? c.measured->baselineSec : 0, baseLink)}};
    }
    cells.push_back(std::move(o));
  }
  json::Array placements;
  for (const PlacementRow &r : report.placements)
    placements.push_back(json::Object{
        {"sweep", r.sweep},
        {"config", r.config},
        {"routing", r.routing},
        {"dtype", workload::payloadTypeName(r.dtype)},
        {"nodes", r.cluster.nodes},
        {"ranks_per_node", r.cluster.ranksPerNode},
        {"ranks", r.cluster.ranks()},
        {"num_experts", r.experts},
        {"tokens_per_rank", r.tokens},
        {"placement", r.placement},
        {"inter_node_bytes",
         json::Object{{"per_expert", r.interBytes[moecommPerExpert]},
                      {"flat", r.interBytes[moecommFlat]},
                      {"hierarchical", r.interBytes[moecommHierarchical]}}},
        {"num_slots", r.slots},
        {"eplb_policy", r.policy},
        {"replica_choice", r.choice},
        {"inter_node_lower_bound_bytes",
         json::Object{{"dispatch", r.lowerBound[0]},
                      {"combine", r.lowerBound[1]}}},
        {"hierarchical_no_replicas_inter_node_bytes", r.noReplicaHierarchical},
        {"hierarchical_vs_no_replicas",
         ratio(r.interBytes[moecommHierarchical], r.noReplicaHierarchical)},
        {"receive_imbalance", r.imbalance}});
  json::Array skipped;
  for (const Skipped &s : report.skipped)
    skipped.push_back(json::Object{{"sweep", s.sweep},
                                   {"config", s.config},
                                   {"nodes", s.cluster.nodes},
                                   {"ranks_per_node", s.cluster.ranksPerNode},
                                   {"routing", s.routing},
                                   {"reason", s.reason}});
  const Findings &f = report.findings;
  json::Array failures, violations, plots;
  for (const std::string &s : f.failures)
    failures.push_back(s);
  for (const std::string &s : f.autoViolations)
    violations.push_back(s);
  for (const std::string &s : report.plots)
    plots.push_back(s);
  return json::Object{
      {"format", "moecomm-bench-v1"},
      {"command", report.command},
      {"backend", report.backend},
      {"align", report.align},
      {"baseline",
       json::Object{{"kind", report.baselineKind},
                    {"what", report.baselineKind == "none"
                                 ? "unavailable: nothing was measured"
                                 : "all-to-all of the per-expert rows "
                                   "(dispatch) and back (combine), bf16"}}},
      {"presets", std::move(presets)},
      {"auto_preset", report.presets[report.autoPreset].name},
      {"link_rate_bits_per_s", report.linkRateBitsPerSec > 0
                                   ? json::Value(report.linkRateBitsPerSec)
                                   : json::Value(nullptr)},
      {"cells", std::move(cells)},
      {"skipped", std::move(skipped)},
      {"placements", std::move(placements)},
      {"auto_check", json::Object{{"tolerance", f.tolerance},
                                  {"checked", f.autoChecked},
                                  {"worst_gap", f.autoWorstGap},
                                  {"worst_cell", f.autoWorstCell},
                                  {"violations", std::move(violations)},
                                  {"static_worst_gap", f.staticWorstGap},
                                  {"static_worst_cell", f.staticWorstCell}}},
      {"failures", std::move(failures)},
      {"plots", std::move(plots)},
      {"seconds", report.seconds}};
}

} // namespace moecomm::bench

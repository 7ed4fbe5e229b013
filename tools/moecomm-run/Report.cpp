//===- Report.cpp - moecomm-run's readable report and --json --------------===//

#include "Report.h"

#include "moecomm/Model/Placement.h"
#include "moecomm/Workload/RoutingProblem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstring>
#include <numeric>

using namespace llvm;
using namespace moecomm::workload;

namespace moecomm::run {

namespace {

constexpr size_t kMaxReportedFailures = 8;

void addFailure(RunReport &r, std::string message) {
  r.verified = false;
  if (r.failures.size() < kMaxReportedFailures)
    r.failures.push_back(std::move(message));
}

void accumulate(moecommTraffic_t &sum, const moecommTraffic_t &t) {
  for (int d = 0; d < 3; ++d)
    for (int s = 0; s < 3; ++s)
      for (int l = 0; l < 2; ++l) {
        sum.bytes[d][s][l] += t.bytes[d][s][l];
        sum.messages[d][s][l] += t.messages[d][s][l];
      }
  for (int l = 0; l < 2; ++l) {
    sum.metadataBytes[l] += t.metadataBytes[l];
    sum.metadataMessages[l] += t.metadataMessages[l];
  }
}

uint64_t messages(const moecommTraffic_t &t, moecommDirection_t d,
                  moecommLinkClass_t link) {
  uint64_t sum = 0;
  for (int s = 0; s < 3; ++s)
    sum += t.messages[d][s][link];
  return sum;
}

/// " (1.23 MB)" after an exact byte count of at least 1 kB, else "": decimal
/// units (1 MB = 10^6 bytes), as moecomm-bench and the docs use.
std::string human(uint64_t bytes) {
  const char *units[] = {"B", "kB", "MB", "GB", "TB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  return u == 0 ? std::string() : formatv(" ({0:f2} {1})", v, units[u]).str();
}

/// The directions a report lists: dispatch and combine, or for a path
/// without layouts the one its moecomm.all_to_all exchanges are counted as.
ArrayRef<moecommDirection_t> directions(bool layouts) {
  static constexpr moecommDirection_t withLayouts[] = {
      moecommDirectionDispatch, moecommDirectionCombine};
  static constexpr moecommDirection_t allToAll[] = {moecommDirectionAllToAll};
  if (layouts)
    return withLayouts;
  return allToAll;
}

/// The placement's figures (RunReport::replicaLowerBound,
/// receiveImbalance) from the routing and the reference's layout.
void placementFigures(const RoutingProblem &p, const ReferenceResult &ref,
                      int passes, RunReport &r) {
  if (p.slotExperts.empty() || static_cast<int>(ref.layout.size()) != p.ranks)
    return;
  const ReplicaTable table(ExpertPlacement{p.numExperts, p.slotExperts},
                           p.ranks, p.ranksPerNode);
  int64_t nodes = 0;
  std::vector<int64_t> rows(static_cast<size_t>(p.ranks), 0);
  for (int rank = 0; rank < p.ranks; ++rank) {
    RoutingView view;
    view.numTokens = p.numTokens[rank];
    view.topk = p.topk;
    view.topkIdx = p.topkIdx[rank].data();
    view.idxType = moecommInt64;
    nodes += minRemoteCopies(table, rank, view);
    for (int64_t n : ref.layout[rank].tokensPerExpert)
      rows[rank] += n;
  }
  r.replicaLowerBound = passes * nodes * ref.dispatchRowBytes;
  r.receiveImbalance = receiveImbalance(rows);
}

/// Whether the run observed the rows received: a graph whose exchanges are
/// only moecomm.all_to_all has no layout to count them and must return them
/// (LayerResult::recvRowsObserved).
bool recvRowsObserved(const RunInfo &info) {
  return info.layouts || info.observesDispatch;
}

} // namespace

RunReport analyzeRun(const RoutingProblem &p, const ReferenceResult &ref,
                     const RunSummary &run, int passes, bool layouts) {
  RunReport r;
  r.verified = true;
  r.passes = passes;
  r.dispatchLowerBound = passes * ref.dispatchLowerBound;
  r.combineLowerBound = passes * ref.combineLowerBound;
  r.dispatchRowBytes = ref.dispatchRowBytes;
  r.combineRowBytes = ref.combineRowBytes;
  placementFigures(p, ref, passes, r);
  if (!run.ranks.empty() && !run.ranks[0].empty()) {
    const IterationSummary &s = run.ranks[0][0];
    r.combineTolerance =
        moecomm::ref::combineBound(hostType(p.dtype), p.topk,
                                   combineRoundings(s.strategy, s.stages))
            .relative;
  }
  r.wallSeconds = run.wallSeconds;
  const int W = static_cast<int>(run.ranks.size());
  if (W != p.ranks) {
    addFailure(r, formatv("{0} ranks reported, expected {1}", W, p.ranks));
    return r;
  }
  size_t iterations = run.ranks[0].size();
  for (int rank = 0; rank < W; ++rank)
    if (run.ranks[rank].size() != iterations) {
      addFailure(r, formatv("rank {0} ran {1} iterations, rank 0 ran {2}", rank,
                            run.ranks[rank].size(), iterations));
      iterations = std::min(iterations, run.ranks[rank].size());
    }
  if (iterations == 0) {
    addFailure(r, "no iteration completed");
    return r;
  }

  r.strategy = run.ranks[0][0].strategy;
  moecommTraffic_t first{};
  for (size_t it = 0; it < iterations; ++it) {
    moecommTraffic_t global{};
    double slowest = 0;
    for (int rank = 0; rank < W; ++rank) {
      const IterationSummary &s = run.ranks[rank][it];
      accumulate(global, s.traffic);
      slowest = std::max(slowest, s.seconds);
      if (s.strategy != r.strategy)
        addFailure(r, formatv("iteration {0}: rank {1} used strategy {2}, "
                              "rank 0 used {3}",
                              it, rank, strategyName(s.strategy),
                              strategyName(r.strategy)));
      if (!s.check.ok)
        for (const std::string &f : s.check.failures)
          addFailure(r, formatv("iteration {0}: {1}", it, f));
      r.maxAbsErr = std::max(r.maxAbsErr, s.check.maxAbsErr);
      r.maxAbsErrVsReference =
          std::max(r.maxAbsErrVsReference, s.check.maxAbsErrVsReference);
      r.worstBoundRatio = std::max(r.worstBoundRatio, s.check.worstBoundRatio);
    }
    r.iterationSeconds.push_back(slowest);
    std::vector<std::string> lbFailures;
    if (!verifyLowerBound(r.dispatchLowerBound, r.combineLowerBound,
                          r.strategy, layouts, global, lbFailures))
      for (const std::string &f : lbFailures)
        addFailure(r, formatv("iteration {0}: {1}", it, f));
    if (it == 0)
      first = global;
    else if (std::memcmp(&first, &global, sizeof(global)) != 0)
      addFailure(r, formatv("iteration {0}: traffic differs from iteration 0 "
                            "(stale state between iterations?)",
                            it));
    r.traffic = global;
  }

  const size_t last = iterations - 1;
  r.tokensPerExpert.resize(W);
  r.droppedPerRank.resize(W);
  std::vector<StageInfo> stages = run.ranks[0][last].stages;
  for (StageInfo &st : stages)
    st.sendRows = st.recvRows = 0;
  for (int rank = 0; rank < W; ++rank) {
    const IterationSummary &s = run.ranks[rank][last];
    r.tokensPerExpert[rank] = s.tokensPerExpert;
    r.droppedPerRank[rank] = s.dropped;
    r.dropped += s.dropped;
    r.recvRows += s.recvRows;
    if (s.stages.size() != stages.size()) {
      addFailure(r, formatv("rank {0} has {1} stages, rank 0 has {2}", rank,
                            s.stages.size(), stages.size()));
      continue;
    }
    for (size_t i = 0; i < stages.size(); ++i) {
      stages[i].sendRows += s.stages[i].sendRows;
      stages[i].recvRows += s.stages[i].recvRows;
    }
  }
  r.stages = std::move(stages);
  return r;
}

void printReport(raw_ostream &os, const RoutingProblem &p, const RunInfo &info,
                 const RunReport &r) {
  const char *dtype = payloadTypeName(p.dtype).data();
  os << formatv("moecomm-run: {0} path ({1}), backend {2}, ", info.path,
                info.api, backendName(info.backend));
  // The host target is the default and not named (the line reads as it
  // always did).
  if (info.target == "cuda")
    os << "target cuda, ";
  if (!info.layouts)
    os << "exchanges moecomm.all_to_all only (no layout: no strategy applies)";
  else if (info.strategyFromLibrary)
    os << "strategy " << strategyName(r.strategy)
       << " (built into the library)";
  else if (r.strategy == info.requestedStrategy)
    os << "strategy " << strategyName(r.strategy);
  else // auto resolved
    os << "strategy " << strategyName(info.requestedStrategy) << " -> "
       << strategyName(r.strategy);
  os << formatv(", {0} chunk{1} per dispatch\n", info.chunks,
                info.chunks == 1 ? "" : "s");
  const std::string slots =
      p.slotExperts.empty()
          ? std::string()
          : formatv(" in {0} slots", p.slotExperts.size()).str();
  os << formatv(
      "  topology   {0} ranks = {1} nodes x {2}; {3} experts{8} ({4} per "
      "rank), top-{5}, hidden {6}, dtype {7}",
      p.ranks, p.numNodes(), p.ranksPerNode, p.numExperts, p.localExperts(),
      p.topk, p.hidden, dtype, slots);
  if (p.dtype == PayloadType::FP8)
    os << " (bf16 in/out, fp8 e4m3 + 1x128 scales on the wire)";
  else if (p.dtype == PayloadType::FP8UE8M0)
    os << " (bf16 in/out, fp8 e4m3 + 1x128 E8M0 scales on the wire)";
  else if (p.dtype == PayloadType::MXFP8)
    os << " (bf16 in/out, fp8 e4m3 + 1x32 E8M0 scales on the wire)";
  os << "\n";
  int64_t minT = p.numTokens.empty() ? 0 : *llvm::min_element(p.numTokens);
  int64_t maxT = p.numTokens.empty() ? 0 : *llvm::max_element(p.numTokens);
  os << formatv(
      "  routing    {0}; {1} tokens ({2}..{3} per rank); capacity {4}{5}\n",
      p.origin, p.totalTokens(), minT, maxT,
      p.capacity ? std::to_string(p.capacity) : std::string("none"),
      p.align > 1 ? formatv("; align {0}", p.align).str() : std::string());
  if (!p.slotExperts.empty())
    os << formatv("  placement  {0} slots for {1} logical experts, replica "
                  "choice {2}\n",
                  p.slotExperts.size(), p.numExperts,
                  replicaChoiceName(p.replicaChoice));
  os << formatv("  rows       {0}; row bytes: dispatch {1}, combine {2}\n",
                recvRowsObserved(info)
                    ? formatv("{0} received in total", r.recvRows).str()
                    : std::string("not observed (the graph "
                                  "exchanges moecomm.all_to_all only and "
                                  "returns no dispatch rows)"),
                r.dispatchRowBytes, r.combineRowBytes);
  if (info.experts.ffn())
    os << formatv("  experts    SwiGLU FFN, intermediate size {0}, f32 weights "
                  "of seed {1} (docs/moecomm-run.md)\n",
                  info.experts.intermediate, info.experts.seed);

  os << formatv("\ntraffic per iteration, summed over {0} ranks (payload bytes "
                "and messages sent)\n",
                p.ranks);
  os << formatv("  {0,-9} {1,-11} {2,-7} {3,12} {4,17} {5,8} {6,17} {7,8}\n",
                "direction", "scope", "stages", "rows sent", "intra-node B",
                "msgs", "inter-node B", "msgs");
  for (moecommDirection_t d : directions(info.layouts)) {
    bool any = false;
    for (moecommScope_t s :
         {moecommScopeGlobal, moecommScopeInterNode, moecommScopeIntraNode}) {
      std::string stageList;
      int64_t rows = 0;
      for (const StageInfo &st : r.stages)
        if (st.direction == d && st.scope == s) {
          stageList +=
              (stageList.empty() ? "" : ",") + std::to_string(st.stage);
          // Every pass along the layout, as the byte counters count.
          rows += r.passes * st.sendRows;
        }
      const uint64_t *b = r.traffic.bytes[d][s];
      const uint64_t *m = r.traffic.messages[d][s];
      if (stageList.empty() && !b[0] && !b[1] && !m[0] && !m[1])
        continue;
      any = true;
      os << formatv(
          "  {0,-9} {1,-11} {2,-7} {3,12} {4,17} {5,8} {6,17} {7,8}\n",
          directionName(d), scopeName(s), stageList.empty() ? "-" : stageList,
          // all_to_all rows are of any width (rows, weights, offsets): the
          // counters have their bytes only.
          d == moecommDirectionAllToAll ? std::string("-")
                                        : std::to_string(rows),
          b[0], m[0], b[1], m[1]);
    }
    if (!any)
      os << formatv("  {0,-9} (no exchange: single rank)\n", directionName(d));
    os << formatv("  {0,-9} {1,-11} {2,-7} {3,12} {4,17} {5,8} {6,17} {7,8}\n",
                  directionName(d), "total", "", "",
                  intraNodeBytes(r.traffic, d),
                  messages(r.traffic, d, moecommLinkIntraNode),
                  interNodeBytes(r.traffic, d),
                  messages(r.traffic, d, moecommLinkInterNode));
  }
  os << formatv("  {0,-9} {1,-11} {2,-7} {3,12} {4,17} {5,8} {6,17} {7,8}\n",
                "metadata", "", "", "", r.traffic.metadataBytes[0],
                r.traffic.metadataMessages[0], r.traffic.metadataBytes[1],
                r.traffic.metadataMessages[1]);

  auto vsBound = [](uint64_t got, int64_t bound) {
    if (bound == 0)
      return got == 0 ? std::string("= bound") : std::string("bound is 0");
    return formatv("{0:f3} x bound", static_cast<double>(got) / bound).str();
  };
  os << formatv(
      "\ninter-node lower bound  dispatch {0} B{1}, combine {2} B{3}\n",
      r.dispatchLowerBound, human(r.dispatchLowerBound), r.combineLowerBound,
      human(r.combineLowerBound));
  if (!p.slotExperts.empty())
    os << formatv("inter-node lower bound with replicas  dispatch {0} B{1} "
                  "(fewest remote nodes per token); receive imbalance {2:f3} "
                  "(max rows per rank / mean)\n",
                  r.replicaLowerBound, human(r.replicaLowerBound),
                  r.receiveImbalance);
  if (info.layouts) {
    const uint64_t dispatchInter =
        interNodeBytes(r.traffic, moecommDirectionDispatch);
    const uint64_t combineInter =
        interNodeBytes(r.traffic, moecommDirectionCombine);
    os << formatv("inter-node sent         dispatch {0} B ({1}), combine {2} "
                  "B ({3})\n",
                  dispatchInter, vsBound(dispatchInter, r.dispatchLowerBound),
                  combineInter, vsBound(combineInter, r.combineLowerBound));
  } else {
    // The all_to_all exchanges carry both directions' rows.
    const uint64_t inter = interNodeBytes(r.traffic, moecommDirectionAllToAll);
    os << formatv("inter-node sent         all_to_all {0} B ({1}, the bound: "
                  "dispatch + combine)\n",
                  inter,
                  vsBound(inter, r.dispatchLowerBound + r.combineLowerBound));
  }

  int64_t minE = INT64_MAX, maxE = 0, sum = 0, count = 0;
  for (const std::vector<int64_t> &v : r.tokensPerExpert)
    for (int64_t n : v) {
      minE = std::min(minE, n);
      maxE = std::max(maxE, n);
      sum += n;
      ++count;
    }
  if (count == 0)
    minE = 0;
  if (info.observesDispatch)
    os << formatv(
        "tokens per expert       min {0}, mean {1:f2}, max {2}; dropped "
        "{3}\n",
        minE, count ? static_cast<double>(sum) / count : 0.0, maxE, r.dropped);
  else
    os << formatv("tokens per expert       (not returned by the graph); "
                  "dropped {0}\n",
                  r.dropped);

  double mean = 0,
         best = r.iterationSeconds.empty() ? 0 : r.iterationSeconds[0];
  for (double s : r.iterationSeconds) {
    mean += s;
    best = std::min(best, s);
  }
  if (!r.iterationSeconds.empty())
    mean /= r.iterationSeconds.size();
  os << formatv(
      "wall time               {0:f3} s total; per iteration (slowest "
      "rank, CPU here, not a GPU estimate) mean {1:f3} ms, min {2:f3} "
      "ms over {3}\n",
      r.wallSeconds, mean * 1e3, best * 1e3, r.iterationSeconds.size());
  if (info.experts.ffn())
    os << formatv("max_abs_err             {0:e} ({1} vs the reference's SwiGLU "
                  "experts), {2:f3} of the FFN tolerance\n",
                  r.maxAbsErr,
                  info.experts.training ? "out and grad_x" : "out",
                  r.worstBoundRatio);
  else
    os << formatv("max_abs_err             {0:e} (combine vs x * sum of kept "
                  "weights); vs reference {1:e}, {2:f3} of the bound\n",
                  r.maxAbsErr, r.maxAbsErrVsReference, r.worstBoundRatio);
  os << formatv("verified                {0}", r.verified ? "yes" : "NO");
  if (r.verified)
    os << formatv(
        " ({0} iteration{1} x {2} ranks: {3}drops, {4}, lower bound{5})\n",
        info.iterations, info.iterations == 1 ? "" : "s", p.ranks,
        info.observesDispatch    ? "dispatch bitwise, sources, weights, "
                                   "tokens_per_expert, "
        : recvRowsObserved(info) ? "received row counts, "
                                 : "",
        info.experts.training ? "combine, grad_x" : "combine",
        info.observesDispatch ? "" : "; the graph returns no dispatch rows");
  else
    os << "\n";
  for (const std::string &f : r.failures)
    os << "  FAILED: " << f << "\n";
}

json::Value reportJson(const RoutingProblem &p, const RunInfo &info,
                       const RunReport &r) {
  auto linkPair = [](uint64_t intra, uint64_t inter) {
    return json::Object{{"intra_node", static_cast<int64_t>(intra)},
                        {"inter_node", static_cast<int64_t>(inter)}};
  };
  json::Object byDirection;
  json::Array traffic;
  for (moecommDirection_t d : directions(info.layouts)) {
    byDirection[directionName(d)] = json::Object{
        {"bytes",
         linkPair(intraNodeBytes(r.traffic, d), interNodeBytes(r.traffic, d))},
        {"messages", linkPair(messages(r.traffic, d, moecommLinkIntraNode),
                              messages(r.traffic, d, moecommLinkInterNode))}};
    for (moecommScope_t s :
         {moecommScopeGlobal, moecommScopeInterNode, moecommScopeIntraNode})
      traffic.push_back(
          json::Object{{"direction", directionName(d)},
                       {"scope", scopeName(s)},
                       {"bytes", linkPair(r.traffic.bytes[d][s][0],
                                          r.traffic.bytes[d][s][1])},
                       {"messages", linkPair(r.traffic.messages[d][s][0],
                                             r.traffic.messages[d][s][1])}});
  }
  json::Array stages;
  for (const StageInfo &st : r.stages)
    stages.push_back(json::Object{{"direction", directionName(st.direction)},
                                  {"stage", st.stage},
                                  {"scope", scopeName(st.scope)},
                                  {"send_rows", st.sendRows},
                                  {"recv_rows", st.recvRows}});
  json::Array tpe;
  int64_t minE = INT64_MAX, maxE = 0, sum = 0, count = 0;
  for (const std::vector<int64_t> &v : r.tokensPerExpert) {
    tpe.push_back(json::Array(v));
    for (int64_t n : v) {
      minE = std::min(minE, n);
      maxE = std::max(maxE, n);
      sum += n;
      ++count;
    }
  }
  json::Array failures;
  for (const std::string &f : r.failures)
    failures.push_back(f);
  json::Array seconds;
  for (double s : r.iterationSeconds)
    seconds.push_back(s);

  json::Object o{
      {"format", "moecomm-run-report-v1"},
      {"path", info.path},
      {"dispatch_observed", info.observesDispatch},
      {"api", info.api},
      {"strategy", !info.layouts ? "none"
                                 : strategyName(info.strategyFromLibrary
                                                    ? r.strategy
                                                    : info.requestedStrategy)},
      {"strategy_in_effect", info.layouts ? strategyName(r.strategy) : "none"},
      {"backend", backendName(info.backend)},
      {"target",
       info.target.empty() ? json::Value(nullptr) : json::Value(info.target)},
      {"ranks", p.ranks},
      {"ranks_per_node", p.ranksPerNode},
      {"nodes", p.numNodes()},
      {"num_experts", p.numExperts},
      {"local_experts", p.localExperts()},
      {"topk", p.topk},
      {"hidden", p.hidden},
      {"dtype", payloadTypeName(p.dtype)},
      {"capacity", p.capacity ? json::Value(p.capacity) : json::Value(nullptr)},
      {"align", p.align},
      {"routing", p.origin},
      {"tokens_per_rank", json::Array(p.numTokens)},
      {"iterations", info.iterations},
      {"chunks", info.chunks},
      {"tokens_per_expert", std::move(tpe)},
      {"tokens_per_expert_summary",
       json::Object{{"min", count ? minE : 0},
                    {"mean", count ? static_cast<double>(sum) / count : 0.0},
                    {"max", maxE}}},
      {"dropped", r.dropped},
      {"dropped_per_rank", json::Array(r.droppedPerRank)},
      {"recv_rows",
       recvRowsObserved(info) ? json::Value(r.recvRows) : json::Value(nullptr)},
      {"bytes", linkPair(intraNodeBytes(r.traffic, moecommDirectionDispatch),
                         interNodeBytes(r.traffic, moecommDirectionDispatch))},
      {"messages", linkPair(messages(r.traffic, moecommDirectionDispatch,
                                     moecommLinkIntraNode),
                            messages(r.traffic, moecommDirectionDispatch,
                                     moecommLinkInterNode))},
      {"bytes_by_direction", std::move(byDirection)},
      {"traffic", std::move(traffic)},
      {"stages", std::move(stages)},
      {"metadata_bytes",
       linkPair(r.traffic.metadataBytes[0], r.traffic.metadataBytes[1])},
      {"metadata_messages",
       linkPair(r.traffic.metadataMessages[0], r.traffic.metadataMessages[1])},
      {"row_bytes", json::Object{{"dispatch", r.dispatchRowBytes},
                                 {"combine", r.combineRowBytes}}},
      {"inter_node_lower_bound_bytes", r.dispatchLowerBound},
      {"combine_inter_node_lower_bound_bytes", r.combineLowerBound},
      {"verified", r.verified},
      {"failures", std::move(failures)},
      {"max_abs_err", errorToJson(r.maxAbsErr)},
      {"max_abs_err_vs_reference", errorToJson(r.maxAbsErrVsReference)},
      {"combine_bound_ratio", errorToJson(r.worstBoundRatio)},
      {"combine_tolerance", r.combineTolerance},
      {"wall_seconds", r.wallSeconds},
      {"iteration_seconds", std::move(seconds)},
      {"experts", info.experts.ffn() ? "swiglu" : "identity"},
  };
  if (!p.slotExperts.empty()) {
    o["placement"] = json::Object{
        {"num_slots", static_cast<int64_t>(p.slotExperts.size())},
        {"replica_choice", replicaChoiceName(p.replicaChoice)}};
    o["inter_node_lower_bound_with_replicas_bytes"] = r.replicaLowerBound;
    o["receive_imbalance"] = r.receiveImbalance;
  }
  if (info.experts.ffn())
    o["expert_ffn"] = json::Object{
        {"intermediate", info.experts.intermediate},
        {"weight_seed", info.experts.seed},
        {"max_abs_err", errorToJson(r.maxAbsErr)},
        {"tolerance_ratio", errorToJson(r.worstBoundRatio)}};
  return json::Value(std::move(o));
}

} // namespace moecomm::run

//===- Report.h - moecomm-run's readable report and --json ------*- C++ -*-===//
//
// Turns the per-rank summaries into the global verdict (every rank's checks,
// the inter-node lower bound, identical traffic and strategy on every
// iteration) and prints it: a readable report on stdout and the --json file
// (DESIGN.md §8 keys plus breakdowns).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_RUN_REPORT_H
#define MOECOMM_TOOLS_RUN_REPORT_H

#include "Backend.h"

#include "moecomm/Workload/RoutingProblem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

namespace moecomm::run {

/// How the run was set up (for the report header and JSON).
struct RunInfo {
  std::string path = "direct"; ///< execution path name
  std::string api = "oneshot"; ///< runtime entry points of the direct path
  BackendKind backend = BackendKind::Threads;
  /// Where a compiled graph ran: "host" or "cuda" (device buffers on the
  /// communicator's device, --target cuda); empty for --direct, which
  /// compiles nothing.
  std::string target;
  moecommStrategy_t requestedStrategy = moecommAuto;
  /// An --aot library runs the strategy it was built with; nothing was
  /// requested at run time.
  bool strategyFromLibrary = false;
  int iterations = 1;
  /// Token chunks each dispatch ran in (ExecutionPath::chunks).
  int chunks = 1;
  /// Whether the path returned the dispatch rows (ExecutionPath).
  bool observesDispatch = true;
  /// The routed experts applied (identity unless a graph takes weights).
  ExpertSpec experts;
  /// Whether the exchanges went through layouts (ExecutionPath::usesLayouts);
  /// false: only moecomm.all_to_all ran, and no strategy applies.
  bool layouts = true;
};

/// The global outcome of a run. All byte and message counts are per iteration
/// (iterations are checked to be identical), summed over ranks.
struct RunReport {
  bool verified = false;
  std::vector<std::string> failures; ///< first few problems, one line each
  moecommStrategy_t strategy = moecommFlat; ///< in effect (auto resolved)
  moecommTraffic_t traffic{};               ///< sum over ranks, last iteration
  std::vector<StageInfo> stages;            ///< rows summed over ranks
  /// Times each layout's rows move per iteration (2 for a training step:
  /// dispatch and cached_dispatch, two combines; ExecutionPath::passes).
  int passes = 1;
  int64_t dispatchLowerBound = 0;
  int64_t combineLowerBound = 0;
  /// With a placement (problem.slotExperts): the placement's own dispatch
  /// bound, Σ_tokens minRemoteNodes x dispatch row bytes (before capacity
  /// drops; any replica choice sends at least this), and the receive-load
  /// imbalance of the chosen replicas (receiveImbalance of the kept rows per
  /// rank: max / mean, 1 = balanced). Zero / 0.0 without one.
  int64_t replicaLowerBound = 0;
  double receiveImbalance = 0;
  int64_t dispatchRowBytes = 0;
  int64_t combineRowBytes = 0;
  std::vector<std::vector<int64_t>> tokensPerExpert; ///< [W][E/W]
  std::vector<int64_t> droppedPerRank;               ///< [W]
  int64_t dropped = 0;
  int64_t recvRows = 0; ///< sum over ranks
  double maxAbsErr = 0;
  double maxAbsErrVsReference = 0;
  double worstBoundRatio = 0;
  double combineTolerance = 0;
  /// Per iteration: the slowest rank's seconds.
  std::vector<double> iterationSeconds;
  double wallSeconds = 0;
};

/// Builds the global outcome from every rank's summaries; `passes` is the
/// number of dispatch+combine pairs per iteration (ExecutionPath::passes), by
/// which the lower bounds are multiplied; `layouts` as RunInfo::layouts
/// (it selects the lower-bound check, verifyLowerBound).
RunReport analyzeRun(const workload::RoutingProblem &problem,
                     const ReferenceResult &reference, const RunSummary &run,
                     int passes = 1, bool layouts = true);

/// The readable report.
void printReport(llvm::raw_ostream &os, const workload::RoutingProblem &problem,
                 const RunInfo &info, const RunReport &report);

/// The --json document: strategy, backend, target (null for --direct),
/// ranks, ranks_per_node, num_experts, topk, hidden, dtype,
/// tokens_per_expert (per rank), dropped, bytes
/// {intra_node, inter_node} (the dispatch's payload bytes; the combine's are
/// under bytes_by_direction), inter_node_lower_bound_bytes (dispatch),
/// verified, max_abs_err, plus per-direction/scope traffic, stages, metadata
/// bytes, with a placement `placement`,
/// inter_node_lower_bound_with_replicas_bytes and receive_imbalance,
/// failures, timings and the experts applied (`experts`, with SwiGLU
/// experts `expert_ffn`). See docs/moecomm-run.md for every key.
llvm::json::Value reportJson(const workload::RoutingProblem &problem,
                             const RunInfo &info, const RunReport &report);

} // namespace moecomm::run

#endif // MOECOMM_TOOLS_RUN_REPORT_H

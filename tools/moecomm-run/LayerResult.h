//===- LayerResult.h - what one rank's MoE layer produced -------*- C++ -*-===//
//
// The small interface between moecomm-run's parts:
//   Routing / RoutingGen  -> RoutingProblem      (what to run)
//   ExecutionPath         -> LayerResult per rank (how it ran: runtime-direct
//                                                  here; a compiled MLIR graph
//                                                  can plug in the same way)
//   Verify                -> RankCheck per rank   (against moecomm::ref)
//   Report / Dump         -> text, --json, --dump
// Backend.h runs an ExecutionPath on every rank of a threads, MPI or nccl
// backend.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_RUN_LAYERRESULT_H
#define MOECOMM_TOOLS_RUN_LAYERRESULT_H

#include "moecomm/Workload/RoutingProblem.h"

#include "moecomm/moecomm.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace moecomm::run {

/// One exchange stage of the layout (moecommLayoutStage).
struct StageInfo {
  moecommDirection_t direction = moecommDirectionDispatch;
  int stage = 0;
  moecommScope_t scope = moecommScopeGlobal;
  int64_t sendRows = 0; ///< rows this rank sends in the stage
  int64_t recvRows = 0; ///< rows this rank receives in the stage
};

/// Everything one rank's MoE layer (dispatch -> identity experts -> weighted
/// combine) produced in one iteration. Row data is f32 (bf16 values widened
/// exactly), row-major.
struct LayerResult {
  int rank = 0;
  int64_t hidden = 0;
  /// R: rows received by dispatch (over all of its chunks' layouts).
  int64_t recvRows = 0;
  /// Token chunks the dispatch ran in, a layout each (a compiled graph's
  /// overlap schedule; 1 otherwise).
  int chunks = 1;
  /// Whether recv, sources, recvWeights and tokensPerExpert were produced
  /// (a compiled graph may return only its combine output).
  bool dispatchObserved = true;
  /// Whether recvRows was observed: false for a compiled graph whose only
  /// exchanges are moecomm.all_to_all and that returns no dispatch outputs
  /// (no layout counts its rows, and its all_to_alls move rows of other
  /// kinds too, e.g. Megatron's per-expert counts).
  bool recvRowsObserved = true;
  /// [R][H] dispatch output, expert-major.
  std::vector<float> recv;
  /// [R][2] (source rank, source token) of each received row.
  std::vector<int64_t> sources;
  /// [R] routing weight of each received row.
  std::vector<float> recvWeights;
  /// [E/W] rows per local expert after capacity drops.
  std::vector<int64_t> tokensPerExpert;
  /// Rows dropped by capacity at this rank.
  int64_t dropped = 0;
  /// T_r: this rank's tokens.
  int64_t numTokens = 0;
  /// [T][H] weighted combine of the identity experts' outputs (y = recv).
  std::vector<float> combine;
  /// Whether the path ran a training step (gradX holds its T rows, none on
  /// a rank without tokens).
  bool training = false;
  /// [T][H] a training step's input gradient for grad_out = x (identity
  /// experts: equal to `combine` up to rounding); empty for forward-only
  /// paths.
  std::vector<float> gradX;
  /// The strategy in effect (moecommAuto resolved by the runtime).
  moecommStrategy_t strategy = moecommFlat;
  /// The layout's exchange stages, dispatch then combine.
  std::vector<StageInfo> stages;
  /// This rank's traffic counters for the iteration (what it sent).
  moecommTraffic_t traffic{};
  /// Seconds from the start of the layout to the end of combine on this rank.
  double seconds = 0;
};

/// Options every execution path honours.
struct PathOptions {
  moecommStrategy_t strategy = moecommAuto;
  /// Use moecommLinkModel_t overrides for moecommAuto (false = runtime
  /// default).
  bool setLinkModel = false;
  moecommLinkModel_t linkModel{};
};

/// A way to execute the MoE layer on one rank. Implementations run on the
/// rank's own thread (threads backend) or process (MPI backend), once per
/// iteration, and must be collective-safe: every rank calls runIteration with
/// the same problem, once per iteration.
class ExecutionPath {
public:
  virtual ~ExecutionPath();
  /// A short name for reports, e.g. "direct".
  virtual const char *name() const = 0;
  /// Dispatch+combine pairs per iteration (2 for a training step: forward,
  /// then the backward's cached dispatch and combine on the same layout).
  virtual int passes() const { return 1; }
  /// Whether runIteration fills the dispatch outputs (recv, sources,
  /// recvWeights, tokensPerExpert); see LayerResult::dispatchObserved.
  virtual bool observesDispatch() const { return true; }
  /// Token chunks each dispatch ran in (the overlap schedule of a compiled
  /// graph; 1 for the runtime-direct path), as observed by the last
  /// runIteration of this process.
  virtual int chunks() const { return 1; }
  /// Whether the exchanges go through layouts (dispatch and combine, with a
  /// strategy); false for a compiled graph whose only exchanges are
  /// moecomm.all_to_all (an imported JAX layer), whose bytes the runtime
  /// counts as direction all_to_all.
  virtual bool usesLayouts() const { return true; }
  /// Runs dispatch -> identity experts -> weighted combine for `rank` on
  /// `comm` and fills `out` (all fields). The runtime's traffic counters of
  /// `comm` are reset at the start. Errors: the runtime's failure as an
  /// llvm::StringError whose message is the runtime's last-error text and
  /// whose error code is invalid_argument for InvalidArgument / Mismatch /
  /// Unsupported results (bad input: exit status 2) and io_error otherwise.
  virtual llvm::Error runIteration(moecommComm_t comm,
                                   const workload::RoutingProblem &problem,
                                   int rank, LayerResult &out) = 0;

protected:
  /// What every runIteration does first: `out` emptied and given the rank,
  /// hidden size and token count of `rank` in `problem`; the traffic
  /// counters of `comm` reset. Errors as runIteration's.
  static llvm::Error startIteration(moecommComm_t comm,
                                    const workload::RoutingProblem &problem,
                                    int rank, LayerResult &out);
};

} // namespace moecomm::run

#endif // MOECOMM_TOOLS_RUN_LAYERRESULT_H

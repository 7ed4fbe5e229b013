//===- Verify.h - check moecomm-run results against the reference -*- C++
//-*-===//
//
// Every result is checked against moecomm::ref (runtime/include/moecomm/
// Reference.h), the single-process oracle, with DESIGN.md §5's oracles:
//   1. dispatch rows bitwise (expert-major), sources and routing weights
//      (of a layer run in token chunks, the row count: each chunk's layout
//      pads its own expert segments);
//   2. tokens_per_expert and capacity drops;
//   3. the weighted combine of identity experts: bit-exact for per_expert
//      (it reduces in the reference's order), within the combine bound for
//      the strategies that pre-reduce per rank or node; with SwiGLU experts
//      (a graph taking weights), the combine of the reference's experts
//      (moecomm/Reference/ExpertFfn.h) within the FFN tolerance;
//   5. inter-node bytes: hierarchical == the lower bound (dispatch and
//      combine), every other strategy >= it.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_TOOLS_RUN_VERIFY_H
#define MOECOMM_TOOLS_RUN_VERIFY_H

#include "LayerResult.h"

#include "moecomm/Model/Traffic.h"
#include "moecomm/Reference/CombineBound.h"
#include "moecomm/Reference/ExpertFfn.h"
#include "moecomm/Reference/Reference.h"

#include "moecomm/Workload/RoutingProblem.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moecomm::run {

/// The routed experts a run applies (a graph with weight arguments: the
/// SwiGLU FFN of ExpertFfn.h; otherwise identity).
struct ExpertSpec {
  /// I, the FFN's intermediate size; 0 = identity experts.
  int64_t intermediate = 0;
  /// The weights' seed (moecomm/Reference/ExpertWeights.h).
  uint64_t seed = 1;
  /// Whether the run is a training step (grad_x is checked too).
  bool training = false;
  bool ffn() const { return intermediate > 0; }
};

/// The reference results of a whole problem (all ranks).
struct ReferenceResult {
  ref::Problem problem;
  std::vector<ref::RankLayout> layout;            ///< [W]
  std::vector<std::vector<float>> x;              ///< [W][T_r*H] the payload
  std::vector<std::vector<float>> dispatch;       ///< [W][R_r*H]
  std::vector<std::vector<float>> combine;        ///< [W][T_r*H] weighted
  std::vector<std::vector<double>> combineAbsSum; ///< [W][T_r*H]
  std::vector<std::vector<bool>> kept;            ///< [W][T_r*K]
  int64_t dispatchRowBytes = 0; ///< wire bytes of one dispatched row
  int64_t combineRowBytes = 0;  ///< wire bytes of one combine row (host type)
  /// DESIGN.md §5.5's bound for dispatch and for combine, in bytes.
  int64_t dispatchLowerBound = 0;
  int64_t combineLowerBound = 0;
  /// With SwiGLU experts (experts.ffn()): the weighted combine of the
  /// reference experts' rows ([W][T_r*H]), its sum_k |w_k y_k| and
  /// sum_k |w_k| e_k (e the rows' bounds, ExpertRows::error); a training
  /// step's unweighted combine of the input gradients likewise.
  ExpertSpec experts;
  std::vector<std::vector<float>> ffnCombine, ffnGradX;
  std::vector<std::vector<double>> ffnCombineAbsSum, ffnCombineRowError;
  std::vector<std::vector<double>> ffnGradXAbsSum, ffnGradXRowError;
};

/// Converts a RoutingProblem to the reference's Problem (weights omitted when
/// the routing had none, so the reference applies its own 1.0 default).
ref::Problem toReferenceProblem(const workload::RoutingProblem &problem);

/// Computes everything the checks need. `problem` must be valid
/// (validateRouting). Cost: O(sum of rows * H) time and memory; with SwiGLU
/// `experts` O(sum of rows * H * I) time and one expert's weights more.
/// `onlyRank` >= 0 (one process per rank) computes the SwiGLU experts' rows
/// for that rank's tokens only (the other ranks' ffn* results are then not
/// to be checked), which divides that cost by the number of ranks.
ReferenceResult computeReference(const workload::RoutingProblem &problem,
                                 const ExpertSpec &experts = {},
                                 int onlyRank = -1);

/// The FFN tolerance of one output element (docs/moecomm-run.md): the
/// combine bound with K -> 2K and L -> L + 2 on `absSum` = sum_k |w_k y_k|,
/// plus 1.01 * `rowError` = sum_k |w_k| e_k. `roundings` is L.
double ffnTolerance(const workload::RoutingProblem &problem, int roundings,
                    double absSum, double rowError);

/// L of the combine bound (moecomm/Reference/CombineBound.h) for a run with
/// `strategy` in effect and the exchange stages `stages`: the dispatch stages
/// among them are counted.
int combineRoundings(moecommStrategy_t strategy,
                     llvm::ArrayRef<StageInfo> stages);

/// The outcome of checking one rank's LayerResult.
struct RankCheck {
  bool ok = true;
  /// Up to a few one-line descriptions of what failed (first ones first).
  std::vector<std::string> failures;
  /// max |combine - x * sum of kept weights| over the rank's elements: the
  /// end-to-end error of dispatch -> identity -> combine (for FP8 it includes
  /// the quantization error); with SwiGLU experts max |out - reference| over
  /// out and grad_x. A NaN output counts as an infinite error.
  double maxAbsErr = 0;
  /// max |combine - reference combine| (the communication error alone).
  double maxAbsErrVsReference = 0;
  /// max |combine - reference| / bound (<= 1 passes; 0 when exact); with
  /// SwiGLU experts / the FFN tolerance, over out and grad_x.
  double worstBoundRatio = 0;
  /// Received rows whose bits differ from the reference.
  int64_t dispatchRowMismatches = 0;

  void fail(std::string message);
};

/// An error of RankCheck as JSON: the number, or null when it is infinite
/// (JSON has no infinity). errorFromJson reads it back.
llvm::json::Value errorToJson(double error);
double errorFromJson(std::optional<double> value);

/// Checks one rank's result (checks 1-3 above).
RankCheck verifyRank(const workload::RoutingProblem &problem,
                     const ReferenceResult &ref, const LayerResult &result);

/// Summed inter-node payload bytes of `direction` in `traffic` (all scopes).
uint64_t interNodeBytes(const moecommTraffic_t &traffic,
                        moecommDirection_t direction);
/// Summed intra-node payload bytes of `direction` (all scopes).
uint64_t intraNodeBytes(const moecommTraffic_t &traffic,
                        moecommDirection_t direction);

/// Check 5 on traffic summed over all ranks for one iteration, against the
/// dispatch and combine lower bounds in bytes (the reference's, times the
/// passes per iteration). With `layouts` (dispatch and combine ran through
/// layouts, with `strategy`) each direction is checked against its bound,
/// hierarchical exactly. Without (a graph whose only exchanges are
/// moecomm.all_to_all, e.g. an imported JAX layer), the runtime counts them
/// as one direction, all_to_all, which carries both the dispatch's and the
/// combine's rows: its inter-node bytes must reach the sum of the bounds.
/// Appends failures to `failures`; returns true when it passes.
bool verifyLowerBound(int64_t dispatchBound, int64_t combineBound,
                      moecommStrategy_t strategy, bool layouts,
                      const moecommTraffic_t &globalTraffic,
                      std::vector<std::string> &failures);

} // namespace moecomm::run

#endif // MOECOMM_TOOLS_RUN_VERIFY_H

//===- StrategyCostAnalysis.h - modelled cost of each strategy --*- C++ -*-===//
//
// The static cost model of DESIGN.md §7 applied to the collective-level
// dispatches of a module: for each, what the IR fixes (topology, top-k,
// hidden size, static token count, wire format) and, for a link model and an
// assumed token count, the expected traffic and modelled time of every
// strategy under uniform routing and the cheapest. moecomm-select-strategy
// picks `auto` dispatches' strategies from it; moecomm-cost-report prints it.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_TRANSFORMS_STRATEGYCOSTANALYSIS_H
#define MOECOMM_TRANSFORMS_STRATEGYCOSTANALYSIS_H

#include "moecomm/Dialect/MoEComm/MoEComm.h"
#include "moecomm/Model/CostModel.h"

#include "mlir/Pass/AnalysisManager.h"

#include <optional>

namespace mlir::moecomm {

/// What the IR fixes of one dispatch (with its combine) for the cost model.
struct DispatchWorkload {
  /// The topology of the expert slots: numExperts = S with an expert
  /// placement (its replicas count as experts spread over the ranks; the
  /// replica choice is made at run time), else E.
  ::moecomm::Topology topology;
  /// The logical experts E (the range of topk ids).
  int64_t experts = 0;
  int topk = 1;
  int64_t hidden = 1;
  /// Tokens per rank when x's T is static.
  std::optional<int64_t> tokens;
  WireDtype wire = WireDtype::bf16;
  /// Bytes of one row on the wire: dispatch in the wire format, combine in
  /// x's dtype (wireRowBytes).
  int64_t dispatchRowBytes = 0;
  int64_t combineRowBytes = 0;

  /// Tokens per rank the model assumes: the static T, else `assumed`.
  int64_t tokensPerRank(int64_t assumed) const {
    return tokens ? *tokens : assumed;
  }
};

/// The modelled costs of every strategy for the dispatches of a module
/// (getAnalysis<StrategyCostAnalysis>() on the module or a function).
class StrategyCostAnalysis {
public:
  /// Records the workload of every moecomm.dispatch under `root`.
  explicit StrategyCostAnalysis(Operation *root);

  struct Dispatch {
    DispatchOp op;
    DispatchWorkload workload;
  };
  /// The dispatches in walk (post-)order.
  ArrayRef<Dispatch> getDispatches() const { return dispatches; }

  /// Expected traffic and modelled time of per_expert, flat and hierarchical
  /// for `workload` on `link`, with `assumedTokensPerRank` (>= 1) tokens per
  /// rank when T is dynamic, and the cheapest (ties go to the earlier).
  static ::moecomm::UniformCosts costs(const DispatchWorkload &workload,
                                       const moecommLinkModel_t &link,
                                       int64_t assumedTokensPerRank);

private:
  SmallVector<Dispatch> dispatches;
};

/// Checks the options of the cost model shared by moecomm-select-strategy,
/// moecomm-split-hierarchical and moecomm-cost-report (`pass`): `preset`
/// must name a link preset (returned in `link`), `tokensPerRank` be >= 1.
/// Emits an option error (OptionErrors.h) otherwise.
LogicalResult checkCostModelOptions(MLIRContext *context, StringRef pass,
                                    StringRef preset, int64_t tokensPerRank,
                                    const ::moecomm::LinkPreset *&link);

} // namespace mlir::moecomm

#endif // MOECOMM_TRANSFORMS_STRATEGYCOSTANALYSIS_H

//===- CostReport.cpp - modelled bytes and time per op and stage -----------===//
//
// Prints, for every collective-level dispatch (and its combine), the expected
// bytes per link class and the modelled time of each strategy and stage
// (StrategyCostAnalysis: DESIGN.md §7, expected traffic under uniform
// routing, alpha-beta time), and the strategy the static `auto` picks. The
// IR is unchanged.
//
//===----------------------------------------------------------------------===//

#include "Transforms/OptionErrors.h"
#include "Transforms/StrategyCostAnalysis.h"
#include "moecomm/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

#include "moecomm/Dialect/MoEComm/MoEComm.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::moecomm {
#define GEN_PASS_DEF_MOECOMMCOSTREPORT
#include "moecomm/Transforms/Passes.h.inc"
} // namespace mlir::moecomm

using namespace mlir;
using namespace mlir::moecomm;

namespace {

/// `value` with `decimals` decimals, every digit: formatv's own double
/// formatting writes into a fixed buffer and cuts values of 10^27 and more.
std::string fixedPoint(double value, int decimals) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.*f", decimals, value);
  return text;
}

struct CostReportPass
    : public WithOptionErrors<
          mlir::moecomm::impl::MoECommCostReportBase<CostReportPass>> {
  using WithOptionErrors::WithOptionErrors;

  // Options are checked once, before any IR is touched (OptionErrors.h).
  LogicalResult initialize(MLIRContext *context) override {
    return checkCostModelOptions(context, getArgument(), preset,
                                 tokensPerRank, link);
  }

  void runOnOperation() override {
    // stderr, like --print-op-stats: the IR on stdout stays pipeable.
    llvm::raw_ostream &os = llvm::errs();
    for (const StrategyCostAnalysis::Dispatch &d :
         getAnalysis<StrategyCostAnalysis>().getDispatches())
      report(d, os);
    os.flush();
    markAllAnalysesPreserved();
  }

  const ::moecomm::LinkPreset *link = nullptr;

  void report(const StrategyCostAnalysis::Dispatch &d, llvm::raw_ostream &os) {
    const DispatchWorkload &w = d.workload;
    int64_t tokens = w.tokensPerRank(tokensPerRank);
    os << llvm::formatv(
        "moecomm-cost-report: dispatch at {0}\n  ranks={1} ranks_per_node={2} "
        "experts={3} topk={4} hidden={5} wire={6} tokens/rank={7} ({8}), "
        "link model {9} (modelled, uniform routing)\n",
        DispatchOp(d.op).getLoc(), w.topology.ranks, w.topology.ranksPerNode,
        w.experts, w.topk, w.hidden, stringifyWireDtype(w.wire), tokens,
        w.tokens ? "static" : "assumed", link->name);
    // The model counts traffic under uniform routing, not from a routing,
    // so it has no per-token bound to give for the placement.
    TopologyAttr topo = DispatchOp(d.op).getTopology();
    if (topo.getPlacement())
      os << llvm::formatv(
          "  expert placement: {0} slots ({1} per rank) for {2} experts, "
          "replica_choice={3}; replicas are chosen at run time, the model "
          "counts the {0} slots as experts\n",
          topo.getSlots(), topo.getLocalExperts(), topo.getExperts(),
          stringifyReplicaChoice(topo.getReplicaChoice()));
    // Each right-aligned column is a space and the field: values wider than
    // their column still stay apart.
    os << llvm::formatv("  {0,-13}{1,-10}{2,-6}{3,-12} {4,15} {5,15} {6,13}\n",
                        "strategy", "direction", "stage", "scope",
                        "inter-node MB", "intra-node MB", "modelled us");
    ::moecomm::UniformCosts costs =
        StrategyCostAnalysis::costs(w, link->link, tokensPerRank);
    for (moecommStrategy_t s :
         {moecommPerExpert, moecommFlat, moecommHierarchical}) {
      const ::moecomm::ExpectedTraffic &traffic = costs.traffic[s];
      const ::moecomm::ModelledTime &time = costs.time[s];
      const char *name = stringifyStrategy(static_cast<Strategy>(s)).data();
      auto printStages = [&](const char *direction,
                             ArrayRef<::moecomm::ExpectedStage> stages,
                             ArrayRef<double> seconds) {
        for (auto [i, stage] : llvm::enumerate(stages))
          os << llvm::formatv(
              "  {0,-13}{1,-10}{2,-6}{3,-12} {4,15} {5,15} {6,13}\n", name,
              direction, i, ::moecomm::scopeName(stage.scope),
              fixedPoint(stage.bytesSent[moecommLinkInterNode] *
                             w.topology.ranks / 1e6,
                         3),
              fixedPoint(stage.bytesSent[moecommLinkIntraNode] *
                             w.topology.ranks / 1e6,
                         3),
              fixedPoint(seconds[i] * 1e6, 1));
      };
      printStages("dispatch", traffic.dispatch, time.dispatchStageSec);
      printStages("combine", traffic.combine, time.combineStageSec);
      os << llvm::formatv("  {0,-13}{1,-10} {2,63}\n", name, "total",
                          fixedPoint(time.totalSec() * 1e6, 1));
    }
    os << "  auto picks: "
       << stringifyStrategy(static_cast<Strategy>(costs.best)) << "\n";
  }
};

} // namespace

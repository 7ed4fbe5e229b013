//===- CostReport.cpp - modelled bytes and time per op and stage -----------===//
//
// Prints, for every collective-level dispatch (and its combine), the expected
// bytes per link class and the modelled time of each strategy and stage
// (DESIGN.md §7; expected traffic under uniform routing, alpha-beta time),
// and the strategy the static `auto` picks. The IR is unchanged.
//
//===----------------------------------------------------------------------===//

#include "Transforms/OptionErrors.h"
#include "moecomm/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"

#include "moecomm/Model/CostModel.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::moecomm {
#define GEN_PASS_DEF_MOECOMMCOSTREPORT
#include "moecomm/Transforms/Passes.h.inc"
} // namespace mlir::moecomm

using namespace mlir;
using namespace mlir::moecomm;

namespace {

/// The runtime's data type of `elt` rows (the verifier allows f32 and bf16).
moecommDataType_t dataTypeOf(Type elt) {
  return elt.isF32() ? moecommFloat32 : moecommBfloat16;
}

struct CostReportPass
    : public WithOptionErrors<
          mlir::moecomm::impl::MoECommCostReportBase<CostReportPass>> {
  using WithOptionErrors::WithOptionErrors;

  // Options are checked once, before any IR is touched (OptionErrors.h).
  LogicalResult initialize(MLIRContext *context) override {
    link = ::moecomm::findLinkPreset(preset);
    if (!link)
      return emitOptionError(context, getArgument())
             << "unknown preset '" << preset
             << "'; expected h100-dgx, h200-dgx or gb200-nvl72";
    if (tokensPerRank < 1)
      return emitOptionError(context, getArgument())
             << "tokens-per-rank must be >= 1, got "
             << static_cast<int64_t>(tokensPerRank);
    return success();
  }

  void runOnOperation() override {
    // stderr, like --print-op-stats: the IR on stdout stays pipeable.
    llvm::raw_ostream &os = llvm::errs();
    getOperation().walk([&](DispatchOp op) { report(op, *link, os); });
    os.flush();
  }

  const ::moecomm::LinkPreset *link = nullptr;

  void report(DispatchOp op, const ::moecomm::LinkPreset &link,
              llvm::raw_ostream &os) {
    TopologyAttr topo = op.getTopology();
    RankedTensorType x = op.getX().getType();
    int64_t hidden = x.getDimSize(1);
    int topk = static_cast<int>(op.getTopkIdx().getType().getDimSize(1));
    bool staticTokens = !x.isDynamicDim(0);
    int64_t tokens = staticTokens ? x.getDimSize(0) : tokensPerRank;
    bool fp8 = op.getWireDtype() == WireDtype::fp8_e4m3;
    moecommDataType_t data = dataTypeOf(x.getElementType());
    int64_t dispatchRow =
        ::moecomm::wireRowBytes(fp8 ? moecommFloat8E4M3 : data, hidden);
    int64_t combineRow = ::moecomm::wireRowBytes(data, hidden);
    int ranks = static_cast<int>(topo.getRanks());
    int perNode = static_cast<int>(topo.getRanksPerNode());

    os << llvm::formatv(
        "moecomm-cost-report: dispatch at {0}\n  ranks={1} ranks_per_node={2} "
        "experts={3} topk={4} hidden={5} wire={6} tokens/rank={7} ({8}), "
        "link model {9} (modelled, uniform routing)\n",
        op.getLoc(), ranks, perNode, topo.getExperts(), topk, hidden,
        stringifyWireDtype(op.getWireDtype()), tokens,
        staticTokens ? "static" : "assumed", link.name);
    // Each right-aligned column is a space and the field: values wider than
    // their column still stay apart.
    os << llvm::formatv("  {0,-13}{1,-10}{2,-6}{3,-12} {4,15} {5,15} {6,13}\n",
                        "strategy", "direction", "stage", "scope",
                        "inter-node MB", "intra-node MB", "modelled us");
    double best = 0;
    moecommStrategy_t chosen = moecommPerExpert;
    for (moecommStrategy_t s :
         {moecommPerExpert, moecommFlat, moecommHierarchical}) {
      ::moecomm::ExpectedTraffic traffic = ::moecomm::expectedTrafficUniform(
          ranks, perNode, topo.getExperts(), topk, static_cast<double>(tokens),
          s, dispatchRow, combineRow);
      ::moecomm::ModelledTime time = ::moecomm::modelTime(traffic, link.link);
      const char *name = stringifyStrategy(static_cast<Strategy>(s)).data();
      auto printStages = [&](const char *direction,
                             ArrayRef<::moecomm::ExpectedStage> stages,
                             ArrayRef<double> seconds) {
        for (auto [i, stage] : llvm::enumerate(stages))
          os << llvm::formatv(
              "  {0,-13}{1,-10}{2,-6}{3,-12} {4,15:F3} {5,15:F3} {6,13:F1}\n",
              name, direction, i, ::moecomm::scopeName(stage.scope),
              stage.bytesSent[moecommLinkInterNode] * ranks / 1e6,
              stage.bytesSent[moecommLinkIntraNode] * ranks / 1e6,
              seconds[i] * 1e6);
      };
      printStages("dispatch", traffic.dispatch, time.dispatchStageSec);
      printStages("combine", traffic.combine, time.combineStageSec);
      os << llvm::formatv("  {0,-13}{1,-10} {2,63:F1}\n", name, "total",
                          time.totalSec() * 1e6);
      if (s == moecommPerExpert || time.totalSec() < best) {
        best = time.totalSec();
        chosen = s;
      }
    }
    os << "  auto picks: "
       << stringifyStrategy(static_cast<Strategy>(chosen)) << "\n";
  }
};

} // namespace

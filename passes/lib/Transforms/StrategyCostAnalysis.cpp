//===- StrategyCostAnalysis.cpp - modelled cost of each strategy ----------===//

#include "Transforms/StrategyCostAnalysis.h"

#include "Transforms/OptionErrors.h"

#include "moecomm/Model/WireFormat.h"

using namespace mlir;
using namespace mlir::moecomm;

StrategyCostAnalysis::StrategyCostAnalysis(Operation *root) {
  root->walk([&](DispatchOp op) {
    TopologyAttr topo = op.getTopology();
    RankedTensorType x = op.getX().getType();
    DispatchWorkload w;
    w.topology.ranks = static_cast<int>(topo.getRanks());
    w.topology.ranksPerNode = static_cast<int>(topo.getRanksPerNode());
    w.topology.numExperts = topo.getNumSlots();
    w.experts = topo.getExperts();
    w.topk = static_cast<int>(op.getTopkIdx().getType().getDimSize(1));
    w.hidden = x.getDimSize(1);
    if (!x.isDynamicDim(0))
      w.tokens = x.getDimSize(0);
    w.wire = op.getWireDtype();
    moecommDataType_t data =
        x.getElementType().isF32() ? moecommFloat32 : moecommBfloat16;
    w.dispatchRowBytes =
        ::moecomm::wireRowBytes(getWireDataType(w.wire), w.hidden);
    w.combineRowBytes = ::moecomm::wireRowBytes(data, w.hidden);
    dispatches.push_back({op, w});
  });
}

::moecomm::UniformCosts
StrategyCostAnalysis::costs(const DispatchWorkload &w,
                            const moecommLinkModel_t &link,
                            int64_t assumedTokensPerRank) {
  return ::moecomm::uniformCosts(
      w.topology.ranks, w.topology.ranksPerNode, w.topology.numExperts, w.topk,
      static_cast<double>(w.tokensPerRank(assumedTokensPerRank)),
      w.dispatchRowBytes, w.combineRowBytes, link);
}

LogicalResult mlir::moecomm::checkCostModelOptions(
    MLIRContext *context, StringRef pass, StringRef preset,
    int64_t tokensPerRank, const ::moecomm::LinkPreset *&link) {
  link = ::moecomm::findLinkPreset(preset.str());
  if (!link)
    return emitOptionError(context, pass)
           << "unknown preset '" << preset
           << "'; expected h100-dgx, h200-dgx or gb200-nvl72";
  if (tokensPerRank >= 1)
    return success();
  return emitOptionError(context, pass)
         << "tokens-per-rank must be >= 1, got " << tokensPerRank;
}

//===- SplitHierarchical.cpp - collective level -> staged level ------------===//
//
// moecomm-split-hierarchical is the composition of the three single-purpose
// passes, with their options: moecomm-configure-collectives (ranks,
// ranks-per-node, wire-dtype, capacity, align), moecomm-select-strategy
// (strategy, preset, tokens-per-rank) and moecomm-lower-collectives (strategy,
// for handles that do not come from a dispatch). moecomm-pipeline runs it.
//
//===----------------------------------------------------------------------===//

#include "Transforms/ConfigureCollectives.h"
#include "Transforms/OptionErrors.h"
#include "Transforms/StrategyCostAnalysis.h"
#include "moecomm/Transforms/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"

namespace mlir::moecomm {
#define GEN_PASS_DEF_MOECOMMSPLITHIERARCHICAL
#include "moecomm/Transforms/Passes.h.inc"
} // namespace mlir::moecomm

using namespace mlir;
using namespace mlir::moecomm;

namespace {

struct SplitHierarchicalPass
    : public WithOptionErrors<
          mlir::moecomm::impl::MoECommSplitHierarchicalBase<SplitHierarchicalPass>> {
  using WithOptionErrors::WithOptionErrors;

  // Options are checked once, before any IR is touched, and reported under
  // this pass's name (OptionErrors.h).
  LogicalResult initialize(MLIRContext *context) override {
    // The steps keep what the checks return; here they only check.
    const ::moecomm::LinkPreset *link;
    if (failed(checkCostModelOptions(context, getArgument(), preset,
                                     tokensPerRank, link)) ||
        failed(checkConfigureOptions(context, getArgument(), ranks,
                                     ranksPerNode, experts, capacity, align)))
      return failure();
    MoECommConfigureCollectivesOptions configure;
    configure.ranks = ranks;
    configure.ranksPerNode = ranksPerNode;
    configure.experts = experts;
    configure.wireDtype = wireDtype;
    configure.capacity = capacity;
    configure.align = align;
    MoECommSelectStrategyOptions select;
    select.strategy = strategy;
    select.preset = preset;
    select.tokensPerRank = tokensPerRank;
    MoECommLowerCollectivesOptions lower;
    lower.strategy = strategy;
    steps = OpPassManager(ModuleOp::getOperationName());
    steps.addPass(createMoECommConfigureCollectives(configure));
    steps.addPass(createMoECommSelectStrategy(select));
    steps.addPass(createMoECommLowerCollectives(lower));
    return success();
  }

  void runOnOperation() override {
    if (failed(runPipeline(steps, getOperation())))
      signalPassFailure();
  }

  OpPassManager steps{ModuleOp::getOperationName()};
};

} // namespace

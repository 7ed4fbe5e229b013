//===- SelectStrategy.cpp - pick each dispatch's strategy -----------------===//
//
// moecomm-select-strategy: every collective-level dispatch gets a concrete
// strategy (its own, the pass option, or the static cost model's choice from
// StrategyCostAnalysis), recorded in its handle type and carried through
// function arguments and results so that combines in other functions agree
// (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "Transforms/OptionErrors.h"
#include "Transforms/SignaturePropagation.h"
#include "Transforms/StrategyCostAnalysis.h"
#include "moecomm/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"

namespace mlir::moecomm {
#define GEN_PASS_DEF_MOECOMMSELECTSTRATEGY
#include "moecomm/Transforms/Passes.h.inc"
} // namespace mlir::moecomm

using namespace mlir;
using namespace mlir::moecomm;

namespace {

/// propagateType for a handle whose strategy is now known.
LogicalResult propagateHandleType(Value value, HandleType type,
                                  SymbolTableCollection &symbols) {
  auto checkValue = [&](Value v) -> LogicalResult {
    std::optional<Strategy> current =
        cast<HandleType>(v.getType()).getStrategy();
    if (!current || current == type.getStrategy())
      return success();
    return emitError(v.getLoc())
           << "this handle receives layouts planned with different strategies ("
           << stringifyStrategy(*current) << " and "
           << stringifyStrategy(*type.getStrategy())
           << "); give the dispatches the same strategy<...>";
  };
  auto checkUse = [&](OpOperand &use) -> LogicalResult {
    Operation *user = use.getOwner();
    if (isa<MoECommDialect>(user->getDialect()))
      return success();
    if (auto call = dyn_cast<func::CallOp>(user))
      return call.emitError()
             << "cannot record this handle's strategy in the signature of "
                "the external function @"
             << call.getCallee() << "; define it in this module, or declare "
             << "its argument #" << use.getOperandNumber()
             << " with strategy = " << stringifyStrategy(*type.getStrategy())
             << " and give the dispatch strategy<"
             << stringifyStrategy(*type.getStrategy()) << ">";
    return user->emitError()
           << "cannot carry a moecomm handle through '" << user->getName()
           << "'; pass it directly between dispatch, combine, func.call and "
              "func.return";
  };
  return propagateType(value, type, symbols, {checkValue, checkUse});
}

struct SelectStrategyPass
    : public WithOptionErrors<
          mlir::moecomm::impl::MoECommSelectStrategyBase<SelectStrategyPass>> {
  using WithOptionErrors::WithOptionErrors;

  // Options are checked once, before any IR is touched (OptionErrors.h).
  LogicalResult initialize(MLIRContext *context) override {
    return checkCostModelOptions(context, getArgument(), preset,
                                 tokensPerRank, link);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTableCollection symbols;
    const auto &costs = getAnalysis<StrategyCostAnalysis>();
    for (const StrategyCostAnalysis::Dispatch &d : costs.getDispatches()) {
      DispatchOp op = d.op;
      Strategy chosen = strategy;
      if (std::optional<Strategy> own = op.getStrategy())
        chosen = *own;
      if (chosen == Strategy::automatic)
        chosen = static_cast<Strategy>(
            StrategyCostAnalysis::costs(d.workload, link->link, tokensPerRank)
                .best);
      op.setStrategyAttr(StrategyAttr::get(op.getContext(), chosen));
      auto type = cast<HandleType>(op.getHandle().getType());
      if (failed(propagateHandleType(op.getHandle(),
                                     type.withStrategy(chosen), symbols)))
        return signalPassFailure();
    }
    if (failed(checkSignatures(module, symbols)))
      return signalPassFailure();
    // The workloads do not depend on the strategies.
    markAnalysesPreserved<StrategyCostAnalysis>();
  }

  const ::moecomm::LinkPreset *link = nullptr;
};

} // namespace

llvm::cl::ValuesClass mlir::moecomm::strategyOptionValues() {
  return llvm::cl::values(
      clEnumValN(Strategy::per_expert, "per_expert",
                 "one copy per (token, expert), one global exchange"),
      clEnumValN(Strategy::flat, "flat",
                 "one copy per (token, rank), one global exchange"),
      clEnumValN(Strategy::hierarchical, "hierarchical",
                 "inter-node exchange once per (token, node), then intra-node"),
      clEnumValN(Strategy::automatic, "auto",
                 "the static cost model picks per dispatch"));
}

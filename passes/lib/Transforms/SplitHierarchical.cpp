//===- SplitHierarchical.cpp - collective level -> staged level ------------===//
//
// Rewrites moecomm.dispatch / moecomm.combine into layout, permute, exchange
// stages (see Passes.td for the scheme and its sources). The strategy of each
// dispatch is resolved first (op attribute, pass option, or the static cost
// model), recorded in its handle type and propagated through function
// arguments and results so combines in other functions agree.
//
//===----------------------------------------------------------------------===//

#include "Transforms/OptionErrors.h"
#include "moecomm/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"

#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "moecomm/Model/CostModel.h"

namespace mlir::moecomm {
#define GEN_PASS_DEF_MOECOMMSPLITHIERARCHICAL
#include "moecomm/Transforms/Passes.h.inc"
} // namespace mlir::moecomm

using namespace mlir;
using namespace mlir::moecomm;

namespace {

/// Bytes of one row of `hidden` elements on the wire (FP8: H bytes plus one
/// f32 scale per 128 elements).
int64_t wireRowBytes(WireDtype wire, int64_t hidden) {
  switch (wire) {
  case WireDtype::f32:
    return 4 * hidden;
  case WireDtype::bf16:
    return 2 * hidden;
  case WireDtype::fp8_e4m3:
    return hidden + 4 * getNumScaleBlocks(hidden);
  }
  llvm_unreachable("unknown wire dtype");
}

/// The static cost model's choice for `op` (DESIGN.md §7, uniform routing).
Strategy chooseStatically(DispatchOp op, const moecommLinkModel_t &link,
                          int64_t tokensPerRank) {
  TopologyAttr topo = op.getTopology();
  RankedTensorType x = op.getX().getType();
  int64_t tokens = x.isDynamicDim(0) ? tokensPerRank : x.getDimSize(0);
  int64_t hidden = x.getDimSize(1);
  int64_t combineRowBytes = wireRowBytes(
      x.getElementType().isF32() ? WireDtype::f32 : WireDtype::bf16, hidden);
  int topk = static_cast<int>(op.getTopkIdx().getType().getDimSize(1));
  moecommStrategy_t chosen = ::moecomm::chooseStrategyUniform(
      static_cast<int>(topo.getRanks()), static_cast<int>(topo.getRanksPerNode()),
      topo.getExperts(), topk, static_cast<double>(tokens),
      wireRowBytes(op.getWireDtype(), hidden), combineRowBytes, link);
  return static_cast<Strategy>(chosen);
}

/// How a changed type may flow through the module: `checkValue` is asked
/// about every value it reaches before the value's type changes, `checkUse`
/// about every use other than func.return and a func.call of a function
/// defined in the module.
struct TypeFlow {
  function_ref<LogicalResult(Value)> checkValue;
  function_ref<LogicalResult(OpOperand &)> checkUse;
};

LogicalResult propagateType(Value value, Type type,
                            SymbolTableCollection &symbols,
                            const TypeFlow &flow);

/// Follows `value`'s (new) type through func.return (into the function's
/// results and every call's results) and func.call (into the callee's
/// arguments).
LogicalResult propagateUses(Value value, SymbolTableCollection &symbols,
                            const TypeFlow &flow) {
  Type type = value.getType();
  for (OpOperand &use : llvm::make_early_inc_range(value.getUses())) {
    Operation *user = use.getOwner();
    unsigned index = use.getOperandNumber();
    if (auto ret = dyn_cast<func::ReturnOp>(user)) {
      auto func = ret->getParentOfType<func::FuncOp>();
      SmallVector<Type> results(func.getResultTypes());
      results[index] = type;
      func.setType(FunctionType::get(func.getContext(), func.getArgumentTypes(),
                                     results));
      ModuleOp module = func->getParentOfType<ModuleOp>();
      if (auto uses = SymbolTable::getSymbolUses(func, module))
        for (SymbolTable::SymbolUse symbolUse : *uses)
          if (auto call = dyn_cast<func::CallOp>(symbolUse.getUser()))
            if (failed(
                    propagateType(call.getResult(index), type, symbols, flow)))
              return failure();
      continue;
    }
    auto call = dyn_cast<func::CallOp>(user);
    auto callee = call ? symbols.lookupNearestSymbolFrom<func::FuncOp>(
                             call, call.getCalleeAttr())
                       : func::FuncOp();
    // An external function's signature is not this module's to change.
    if (!callee || callee.isExternal()) {
      if (failed(flow.checkUse(use)))
        return failure();
      continue;
    }
    if (failed(propagateType(callee.getArgument(index), type, symbols, flow)))
      return failure();
    SmallVector<Type> inputs(callee.getArgumentTypes());
    inputs[index] = type;
    callee.setType(FunctionType::get(callee.getContext(), inputs,
                                     callee.getResultTypes()));
  }
  return success();
}

/// Sets `value`'s type to `type` and propagates it (propagateUses).
LogicalResult propagateType(Value value, Type type,
                            SymbolTableCollection &symbols,
                            const TypeFlow &flow) {
  if (value.getType() == type)
    return success();
  if (failed(flow.checkValue(value)))
    return failure();
  value.setType(type);
  return propagateUses(value, symbols, flow);
}

/// Whether `op` still verifies, without reporting why not. A terminator's
/// types are checked by the op owning its region, which is verified too.
bool stillVerifies(Operation *op) {
  ScopedDiagnosticHandler quiet(op->getContext(),
                                [](Diagnostic &) { return success(); });
  if (failed(verify(op, /*verifyRecursively=*/false)))
    return false;
  return !op->hasTrait<OpTrait::IsTerminator>() ||
         succeeded(verify(op->getParentOp(), /*verifyRecursively=*/false));
}

/// `type` with every dimension dynamic.
RankedTensorType dynamicShape(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return tensor.clone(
      SmallVector<int64_t>(tensor.getRank(), ShapedType::kDynamic));
}

/// Checks that every call and return agrees with the signatures the type
/// propagation changed: a value the propagation does not reach (e.g. a
/// function argument no dispatch feeds) may still carry the old type.
LogicalResult checkSignatures(ModuleOp module, SymbolTableCollection &symbols) {
  auto mismatch = [](Operation *op, unsigned index, Type got, Type expected,
                     func::FuncOp func) {
    bool call = isa<func::CallOp>(op);
    op->emitError() << "cannot retype this " << op->getName() << ": "
                    << (call ? "operand" : "result") << " #" << index << " is "
                    << got << " but another "
                    << (call ? "call made @" : "return made @")
                    << func.getSymName() << (call ? " take " : " return ")
                    << expected;
  };
  WalkResult result = module.walk([&](Operation *op) {
    // A function taken by value keeps the type it was taken with.
    if (auto constant = dyn_cast<func::ConstantOp>(op)) {
      auto func = symbols.lookupNearestSymbolFrom<func::FuncOp>(
          constant, constant.getValueAttr());
      if (func && constant.getType() != func.getFunctionType()) {
        constant.emitError()
            << "cannot retype @" << func.getSymName()
            << " taken by value here: it becomes " << func.getFunctionType()
            << "; call it directly with func.call";
        return WalkResult::interrupt();
      }
    } else if (auto call = dyn_cast<func::CallOp>(op)) {
      auto callee = symbols.lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      for (auto [i, operand, expected] :
           llvm::enumerate(call.getOperandTypes(), callee.getArgumentTypes()))
        if (operand != expected) {
          mismatch(call, i, operand, expected, callee);
          return WalkResult::interrupt();
        }
    } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      auto func = ret->getParentOfType<func::FuncOp>();
      for (auto [i, operand, expected] :
           llvm::enumerate(ret.getOperandTypes(), func.getResultTypes()))
        if (operand != expected) {
          mismatch(ret, i, operand, expected, func);
          return WalkResult::interrupt();
        }
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

struct SplitHierarchicalPass
    : public WithOptionErrors<mlir::moecomm::impl::MoECommSplitHierarchicalBase<
          SplitHierarchicalPass>> {
  using WithOptionErrors::WithOptionErrors;

  LogicalResult initialize(MLIRContext *context) override;
  void runOnOperation() override;

private:
  void configureCollectives(ModuleOp module);
  LogicalResult retargetTopology(ModuleOp module,
                                 SymbolTableCollection &symbols);
  LogicalResult resolveStrategies(ModuleOp module,
                                  SymbolTableCollection &symbols);
  LogicalResult propagateHandleType(Value value, HandleType type,
                                    SymbolTableCollection &symbols);
  void splitDispatch(DispatchOp op);
  LogicalResult splitCachedDispatch(CachedDispatchOp op);
  LogicalResult splitCombine(CombineOp op);
  FailureOr<Strategy> handleStrategy(Operation *op, Value handle);

  std::optional<Strategy> optionStrategy;
  std::optional<WireDtype> optionWire;
  const ::moecomm::LinkPreset *linkPreset = nullptr;
};

// Options are checked once, before any IR is touched (OptionErrors.h).
LogicalResult SplitHierarchicalPass::initialize(MLIRContext *context) {
  auto error = [&] { return emitOptionError(context, getArgument()); };
  optionStrategy = symbolizeStrategy(strategy);
  if (!optionStrategy)
    return error() << "unknown strategy '" << strategy
                   << "'; expected per_expert, flat, hierarchical or auto";
  linkPreset = ::moecomm::findLinkPreset(preset);
  if (!linkPreset)
    return error() << "unknown preset '" << preset
                   << "'; expected h100-dgx, h200-dgx or gb200-nvl72";
  if (tokensPerRank < 1)
    return error() << "tokens-per-rank must be >= 1, got "
                   << static_cast<int64_t>(tokensPerRank);
  if (ranks < 0 || ranksPerNode < 0)
    return error() << "ranks and ranks-per-node must be >= 0 (0: keep the "
                      "IR's), got "
                   << static_cast<int64_t>(ranks) << " and "
                   << static_cast<int64_t>(ranksPerNode);
  if (!wireDtype.empty()) {
    // "fp8" is the tools' spelling (moecomm-run, moecomm-bench).
    optionWire = symbolizeWireDtype(
        wireDtype == "fp8" ? StringRef("fp8_e4m3") : StringRef(wireDtype));
    if (!optionWire)
      return error() << "unknown wire-dtype '" << wireDtype
                     << "'; expected f32, bf16 or fp8_e4m3 (or fp8)";
  }
  if (capacity < 0)
    return error() << "capacity must be >= 0 rows, got "
                   << static_cast<int64_t>(capacity);
  return success();
}

void SplitHierarchicalPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTableCollection symbols;
  configureCollectives(module);
  if (failed(retargetTopology(module, symbols)) ||
      failed(resolveStrategies(module, symbols)) ||
      failed(checkSignatures(module, symbols)))
    return signalPassFailure();

  SmallVector<DispatchOp> dispatches;
  SmallVector<Operation *> consumers;
  module.walk([&](Operation *op) {
    if (auto d = dyn_cast<DispatchOp>(op))
      dispatches.push_back(d);
    else if (isa<CombineOp, CachedDispatchOp>(op))
      consumers.push_back(op);
  });
  // Handle consumers first: they only read the handle, whose producer is
  // replaced below by a layout op with the same type.
  for (Operation *op : consumers) {
    LogicalResult split =
        isa<CombineOp>(op) ? splitCombine(cast<CombineOp>(op))
                           : splitCachedDispatch(cast<CachedDispatchOp>(op));
    if (failed(split))
      return signalPassFailure();
  }
  for (DispatchOp op : dispatches)
    splitDispatch(op);
}

/// Applies the `wire-dtype` and `capacity` overrides.
void SplitHierarchicalPass::configureCollectives(ModuleOp module) {
  // A bf16/f32 override applies to the dispatches of that dtype only; fp8
  // applies to all (cached dispatches included).
  auto setWire = [&](Operation *op, RankedTensorType x) {
    if (optionWire &&
        (*optionWire == WireDtype::fp8_e4m3 ||
         (*optionWire == WireDtype::f32) == x.getElementType().isF32()))
      op->setAttr("wire", WireDtypeAttr::get(op->getContext(), *optionWire));
  };
  module.walk([&](Operation *op) {
    if (auto cached = dyn_cast<CachedDispatchOp>(op))
      setWire(op, cached.getX().getType());
    auto dispatch = dyn_cast<DispatchOp>(op);
    if (!dispatch)
      return;
    setWire(op, dispatch.getX().getType());
    if (capacity > 0)
      dispatch.setCapacityAttr(Builder(op).getI64IntegerAttr(capacity));
  });
}

/// Retargets every topology and handle type of the module to `ranks` ranks
/// and/or `ranks-per-node` ranks per node, then re-infers the moecomm result
/// types that depend on them (tokens_per_expert is [E/W], all_to_all's
/// recv_counts [W]) and carries them through function signatures.
LogicalResult
SplitHierarchicalPass::retargetTopology(ModuleOp module,
                                        SymbolTableCollection &symbols) {
  if (ranks == 0 && ranksPerNode == 0)
    return success();
  int64_t newRanks = ranks, newPerNode = ranksPerNode;
  auto target = [&](int64_t w, int64_t g) {
    return std::make_pair(newRanks > 0 ? newRanks : w,
                          newPerNode > 0 ? newPerNode : g);
  };

  // Every topology and handle type, wherever it appears (function signatures
  // included), must pass its own verifier once retargeted: a retarget is
  // all or nothing.
  Operation *current = nullptr;
  auto retargetError = [&](int64_t w, int64_t g) {
    return [&current, w, g, wg = target(w, g)] {
      return current->emitError()
             << "cannot retarget " << w << " ranks x " << g << " per node to "
             << wg.first << " ranks x " << wg.second << " per node: ";
    };
  };
  AttrTypeWalker checker;
  checker.addWalk([&](TopologyAttr topo) {
    auto [w, g] = target(topo.getRanks(), topo.getRanksPerNode());
    return WalkResult(TopologyAttr::verify(
        retargetError(topo.getRanks(), topo.getRanksPerNode()), w, g,
        topo.getExperts()));
  });
  checker.addWalk([&](HandleType type) {
    auto [w, g] = target(type.getRanks(), type.getRanksPerNode());
    return WalkResult(HandleType::verify(
        retargetError(type.getRanks(), type.getRanksPerNode()), w, g,
        type.getExperts(), type.getStrategy()));
  });
  // Staged IR (layout, permute, pack, exchange, unpack) was planned for its
  // topology: its stage numbers and scopes follow getNumStages and
  // getStageScope there. It can follow a retarget only when that plan is the
  // same on the new topology (then the staged IR is what splitting the
  // collective IR there would give); otherwise the stages are stale.
  auto checkStagedPlan = [&](Operation *op) -> LogicalResult {
    if (!isa<LayoutOp, PermuteOp, PackOp, UnpackOp, ExchangeOp,
             ExchangeStartOp>(op))
      return success();
    SmallVector<Type> types(op->getOperandTypes());
    llvm::append_range(types, op->getResultTypes());
    for (Type t : types) {
      auto type = dyn_cast<HandleType>(t);
      if (!type || !type.getStrategy())
        continue;
      Strategy s = *type.getStrategy();
      int64_t w = type.getRanks(), g = type.getRanksPerNode();
      auto [nw, ng] = target(w, g);
      if (nw == w && ng == g)
        continue;
      auto plan = [&](int64_t ranks, int64_t perNode) {
        SmallVector<Scope> scopes;
        for (Direction d : {Direction::dispatch, Direction::combine})
          for (int64_t i = 0, e = getNumStages(s, ranks, perNode); i < e; ++i)
            scopes.push_back(getStageScope(s, ranks, perNode, d, i));
        return scopes;
      };
      SmallVector<Scope> before = plan(w, g), after = plan(nw, ng);
      if (before == after)
        continue;
      InFlightDiagnostic diag = op->emitError();
      diag << "cannot retarget staged IR planned for "
           << stringifyStrategy(s) << " on " << w << " ranks x " << g
           << " per node to " << nw << " ranks x " << ng << " per node: its ";
      auto describe = [&](ArrayRef<Scope> scopes) -> InFlightDiagnostic & {
        if (scopes.empty())
          return diag << "no exchange stage";
        diag << scopes.size() / 2 << " exchange stage(s) (";
        llvm::interleaveComma(scopes.take_front(scopes.size() / 2), diag,
                              [&](Scope sc) { diag << stringifyScope(sc); });
        return diag << ")";
      };
      describe(before) << " would become ";
      describe(after)
          << "; retarget the collective IR (dispatch/combine, before "
             "moecomm-split-hierarchical) instead";
      return failure();
    }
    return success();
  };

  SmallVector<std::pair<AllToAllOp, int64_t>> allToAlls;
  WalkResult bad = module.walk([&](Operation *op) {
    current = op;
    if (failed(checkStagedPlan(op)))
      return WalkResult::interrupt();
    if (auto a2a = dyn_cast<AllToAllOp>(op))
      allToAlls.push_back({a2a, a2a.getTopology().getRanks()});
    SmallVector<Type> types(op->getResultTypes());
    for (Region &region : op->getRegions())
      for (Block &block : region)
        llvm::append_range(types, block.getArgumentTypes());
    if (checker.walk(op->getAttrDictionary()).wasInterrupted() ||
        llvm::any_of(types, [&](Type type) {
          return checker.walk(type).wasInterrupted();
        }))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (bad.wasInterrupted())
    return failure();

  AttrTypeReplacer replacer;
  replacer.addReplacement([&](TopologyAttr topo) {
    auto [w, g] = target(topo.getRanks(), topo.getRanksPerNode());
    return TopologyAttr::get(topo.getContext(), w, g, topo.getExperts());
  });
  replacer.addReplacement([&](HandleType type) {
    auto [w, g] = target(type.getRanks(), type.getRanksPerNode());
    return HandleType::get(type.getContext(), w, g, type.getExperts(),
                           type.getStrategy());
  });
  replacer.recursivelyReplaceElementsIn(module, /*replaceAttrs=*/true,
                                        /*replaceLocs=*/false,
                                        /*replaceTypes=*/true);

  // Every re-inferred type is set before any is propagated, so that the uses
  // checked below see their operands and results consistent.
  SmallVector<std::pair<Value, Type>> retyped;
  module.walk([&](Operation *op) {
    auto infer = dyn_cast<InferTypeOpInterface>(op);
    if (!infer || !isa<MoECommDialect>(op->getDialect()))
      return;
    SmallVector<Type> types;
    if (failed(infer.inferReturnTypes(
            op->getContext(), op->getLoc(), op->getOperands(),
            op->getRawDictionaryAttrs(), op->getPropertiesStorage(),
            op->getRegions(), types)))
      return;
    for (auto [result, type] : llvm::zip(op->getResults(), types)) {
      if (result.getType() == type)
        continue;
      retyped.push_back({result, result.getType()});
      result.setType(type);
    }
  });
  for (auto &entry : retyped) {
    Value value = entry.first;
    Type type = value.getType(), oldType = entry.second;
    auto checkValue = [&](Value v) -> LogicalResult {
      if (v.getType() == oldType)
        return success();
      return emitError(v.getLoc())
             << "this value would be both " << v.getType() << " and " << type
             << " once retargeted to " << newRanks
             << " ranks; tensor.cast the values reaching it to "
             << dynamicShape(type);
    };
    // Other uses keep the new type when they still verify with it, e.g. a
    // tensor.cast to a dynamic shape; but an op that indexes into the value
    // (index operands, or static offsets) still verifies with fewer elements
    // and would read past them.
    auto checkUse = [&](OpOperand &use) -> LogicalResult {
      Operation *user = use.getOwner();
      auto call = dyn_cast<func::CallOp>(user);
      const bool indexes = !isa<tensor::DimOp>(user) &&
                           (isa<OffsetSizeAndStrideOpInterface>(user) ||
                            llvm::any_of(user->getOperandTypes(),
                                         [](Type t) { return t.isIndex(); }));
      if (!call && !indexes && stillVerifies(user))
        return success();
      InFlightDiagnostic diag = user->emitError();
      diag << "cannot retarget to " << newRanks << " ranks: operand #"
           << use.getOperandNumber() << " becomes " << type << " (was "
           << oldType << "), which ";
      if (call)
        diag << "the external function @" << call.getCallee()
             << " does not take";
      else if (indexes)
        diag << "'" << user->getName()
             << "' indexes into with positions written for the old shape";
      else
        diag << "'" << user->getName() << "' does not accept";
      return diag << "; tensor.cast it to " << dynamicShape(type)
                  << " before this use";
    };
    if (failed(propagateUses(value, symbols, {checkValue, checkUse})))
      return failure();
  }

  // A count operand of static shape [W] cannot follow the retarget.
  for (auto [op, oldRanks] : allToAlls) {
    auto counts = cast<RankedTensorType>(op.getSendCounts().getType());
    if (counts.isDynamicDim(0) ||
        counts.getDimSize(0) == op.getTopology().getRanks())
      continue;
    return op.emitError() << "cannot retarget this all_to_all from " << oldRanks
                          << " to " << op.getTopology().getRanks()
                          << " ranks: its send_counts have the static shape "
                          << counts << "; give them a dynamic shape ("
                          << dynamicShape(counts)
                          << ", checked against the ranks at run time)";
  }
  return success();
}

/// Picks each dispatch's strategy and records it in its handle type.
LogicalResult
SplitHierarchicalPass::resolveStrategies(ModuleOp module,
                                         SymbolTableCollection &symbols) {
  WalkResult result = module.walk([&](DispatchOp op) {
    Strategy chosen = *optionStrategy;
    if (auto attr = op.getStrategy())
      chosen = *attr;
    if (chosen == Strategy::automatic)
      chosen = chooseStatically(op, linkPreset->link, tokensPerRank);
    op.setStrategyAttr(StrategyAttr::get(op.getContext(), chosen));
    auto type = cast<HandleType>(op.getHandle().getType());
    if (failed(propagateHandleType(op.getHandle(), type.withStrategy(chosen),
                                   symbols)))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// propagateType for a handle whose strategy is now known.
LogicalResult
SplitHierarchicalPass::propagateHandleType(Value value, HandleType type,
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

/// Rows of `x` moved along `handle`'s plan (`strategy` on its topology):
/// per stage permute -> exchange (FP8: quantize -> exchange -> dequantize per
/// hop), then a permute into expert-major order.
Value emitDispatchRows(OpBuilder &b, Location loc, Value x, Value handle,
                       Strategy strategy, bool fp8) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<HandleType>(handle.getType());
  int64_t ranks = type.getRanks(), perNode = type.getRanksPerNode();
  auto dispatch = DirectionAttr::get(ctx, Direction::dispatch);
  auto xType = cast<RankedTensorType>(x.getType());
  auto dequantize = [&](Value q, Value scales) -> Value {
    auto qType = cast<RankedTensorType>(q.getType());
    auto type = RankedTensorType::get(qType.getShape(), xType.getElementType());
    return DequantizeOp::create(b, loc, type, q, scales).getOut();
  };
  int64_t stages = getNumStages(strategy, ranks, perNode);
  if (fp8 && stages == 0) {
    // No wire hop, but the semantics of an FP8 wire still hold.
    auto quant = QuantizeOp::create(b, loc, x);
    auto permute = PermuteOp::create(b, loc, quant.getQ(), quant.getScales(),
                                     handle, dispatch, IntegerAttr());
    return dequantize(permute.getOut(), permute.getOutScales());
  }
  Value rows = x;
  for (int64_t stage = 0; stage < stages; ++stage) {
    auto stageAttr = b.getI64IntegerAttr(stage);
    auto scope = ScopeAttr::get(ctx, getStageScope(strategy, ranks, perNode,
                                                   Direction::dispatch, stage));
    Value send =
        PermuteOp::create(b, loc, rows, Value(), handle, dispatch, stageAttr)
            .getOut();
    if (!fp8) {
      rows = ExchangeOp::create(b, loc, send, Value(), handle, dispatch,
                                stageAttr, scope)
                 .getRecv();
      continue;
    }
    auto quant = QuantizeOp::create(b, loc, send);
    auto exchange = ExchangeOp::create(b, loc, quant.getQ(), quant.getScales(),
                                       handle, dispatch, stageAttr, scope);
    rows = dequantize(exchange.getRecv(), exchange.getRecvScales());
  }
  return PermuteOp::create(b, loc, rows, Value(), handle, dispatch,
                           IntegerAttr())
      .getOut();
}

/// Dispatch: a layout, then its rows (emitDispatchRows).
void SplitHierarchicalPass::splitDispatch(DispatchOp op) {
  OpBuilder b(op);
  MLIRContext *ctx = op.getContext();
  auto layout = LayoutOp::create(b, op.getLoc(), op.getTopkIdx(),
                                 op.getTopkWeights(), op.getTopology(),
                                 StrategyAttr::get(ctx, *op.getStrategy()),
                                 op.getCapacityAttr());
  Value recv = emitDispatchRows(b, op.getLoc(), op.getX(), layout.getHandle(),
                                *op.getStrategy(),
                                op.getWireDtype() == WireDtype::fp8_e4m3);
  op.getRecv().replaceAllUsesWith(recv);
  op.getRecvWeights().replaceAllUsesWith(layout.getRecvWeights());
  op.getTokensPerExpert().replaceAllUsesWith(layout.getTokensPerExpert());
  op.getHandle().replaceAllUsesWith(layout.getHandle());
  op.erase();
}

/// Cached dispatch: the same rows along the existing layout.
LogicalResult SplitHierarchicalPass::splitCachedDispatch(CachedDispatchOp op) {
  FailureOr<Strategy> strategy = handleStrategy(op, op.getHandle());
  if (failed(strategy))
    return failure();
  OpBuilder b(op);
  Value recv = emitDispatchRows(b, op.getLoc(), op.getX(), op.getHandle(),
                                *strategy,
                                op.getWireDtype() == WireDtype::fp8_e4m3);
  op.getRecv().replaceAllUsesWith(recv);
  op.erase();
  return success();
}

/// The strategy a consumer of `handle` must follow: the handle type's, or
/// the pass option when it is concrete.
FailureOr<Strategy> SplitHierarchicalPass::handleStrategy(Operation *op,
                                                          Value handle) {
  std::optional<Strategy> strategy =
      cast<HandleType>(handle.getType()).getStrategy();
  if (!strategy && optionStrategy != Strategy::automatic)
    strategy = optionStrategy;
  if (!strategy)
    return op->emitError()
           << "cannot tell which strategy this handle was planned with (it "
              "does not come from a dispatch in this module); set strategy= "
              "or the handle type's strategy";
  return *strategy;
}

/// Combine: per stage a summing permute -> exchange (reverse scope order),
/// then a summing permute into out[T, H].
LogicalResult SplitHierarchicalPass::splitCombine(CombineOp op) {
  FailureOr<Strategy> strategy = handleStrategy(op, op.getHandle());
  if (failed(strategy))
    return failure();
  auto type = cast<HandleType>(op.getHandle().getType());
  OpBuilder b(op);
  Location loc = op.getLoc();
  MLIRContext *ctx = op.getContext();
  auto combine = DirectionAttr::get(ctx, Direction::combine);
  UnitAttr weighted = op.getWeightedAttr();
  Value handle = op.getHandle();
  int64_t ranks = type.getRanks(), perNode = type.getRanksPerNode();
  Value rows = op.getY();
  for (int64_t stage = 0, e = getNumStages(*strategy, ranks, perNode);
       stage < e; ++stage) {
    auto stageAttr = b.getI64IntegerAttr(stage);
    auto scope = ScopeAttr::get(
        ctx, getStageScope(*strategy, ranks, perNode, Direction::combine, stage));
    Value send = PermuteOp::create(b, loc, rows, Value(), handle, combine,
                                   stageAttr, weighted)
                     .getOut();
    rows = ExchangeOp::create(b, loc, send, Value(), handle, combine, stageAttr,
                              scope)
               .getRecv();
  }
  Value out = PermuteOp::create(b, loc, rows, Value(), handle, combine,
                                IntegerAttr(), weighted)
                  .getOut();
  if (out.getType() != op.getOut().getType())
    out = tensor::CastOp::create(b, loc, op.getOut().getType(), out);
  op.getOut().replaceAllUsesWith(out);
  op.erase();
  return success();
}

} // namespace

//===- ConfigureCollectives.cpp - retarget and override collectives -------===//
//
// moecomm-configure-collectives: the wire-dtype, capacity and align
// overrides, and the retarget of every topology and handle type to other
// ranks / ranks per node / experts with the re-inferred types carried through
// function signatures (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "Transforms/ConfigureCollectives.h"

#include "Transforms/OptionErrors.h"
#include "Transforms/SignaturePropagation.h"
#include "moecomm/Model/Limits.h"
#include "moecomm/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::moecomm {
#define GEN_PASS_DEF_MOECOMMCONFIGURECOLLECTIVES
#include "moecomm/Transforms/Passes.h.inc"
} // namespace mlir::moecomm

using namespace mlir;
using namespace mlir::moecomm;

LogicalResult mlir::moecomm::checkConfigureOptions(
    MLIRContext *context, StringRef pass, int64_t ranks, int64_t ranksPerNode,
    int64_t experts, int64_t capacity, int64_t align) {
  if (ranks < 0 || ranksPerNode < 0)
    return emitOptionError(context, pass)
           << "ranks and ranks-per-node must be >= 0 (0: keep the IR's), got "
           << ranks << " and " << ranksPerNode;
  if (experts < 0)
    return emitOptionError(context, pass)
           << "experts must be >= 0 (0: keep the IR's), got " << experts;
  if (capacity < 0)
    return emitOptionError(context, pass)
           << "capacity must be >= 0 rows, got " << capacity;
  if (align != 0 && !::moecomm::isValidAlign(align))
    return emitOptionError(context, pass)
           << "align must be 0 (keep the IR's) or a power of two in [1, "
           << ::moecomm::kMaxAlign << "] rows, got " << align;
  return success();
}

llvm::cl::ValuesClass mlir::moecomm::wireDtypeOptionValues() {
  return llvm::cl::values(
      clEnumValN(WireDtypeOption::keep, "", "keep the IR's wire dtypes"),
      clEnumValN(WireDtypeOption::f32, "f32", "f32 rows"),
      clEnumValN(WireDtypeOption::bf16, "bf16", "bf16 rows"),
      clEnumValN(WireDtypeOption::fp8_e4m3, "fp8_e4m3",
                 "FP8 E4M3 rows with per-block scales"),
      // The tools' spelling (moecomm-run, moecomm-bench).
      clEnumValN(WireDtypeOption::fp8_e4m3, "fp8", "same as fp8_e4m3"),
      clEnumValN(WireDtypeOption::fp8_e4m3_ue8m0, "fp8_e4m3_ue8m0",
                 "FP8 E4M3 rows with 1x128 power-of-two E8M0 scales"),
      clEnumValN(WireDtypeOption::mxfp8, "mxfp8",
                 "OCP MXFP8 rows: E4M3 with 1x32 E8M0 scales"));
}

/// The wire dtype `option` sets; none for keep.
static std::optional<WireDtype> overriddenWireDtype(WireDtypeOption option) {
  switch (option) {
  case WireDtypeOption::keep:
    return std::nullopt;
  case WireDtypeOption::f32:
    return WireDtype::f32;
  case WireDtypeOption::bf16:
    return WireDtype::bf16;
  case WireDtypeOption::fp8_e4m3:
    return WireDtype::fp8_e4m3;
  case WireDtypeOption::fp8_e4m3_ue8m0:
    return WireDtype::fp8_e4m3_ue8m0;
  case WireDtypeOption::mxfp8:
    return WireDtype::mxfp8;
  }
  llvm_unreachable("unknown wire-dtype option");
}

namespace {

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

/// Applies the `wire-dtype`, `capacity` and `align` overrides.
void overrideDispatchOptions(ModuleOp module, std::optional<WireDtype> wire,
                             int64_t capacity, int64_t align) {
  // A bf16/f32 override applies to the dispatches of that dtype only; fp8
  // applies to all (cached dispatches included).
  auto setWire = [&](Operation *op, RankedTensorType x) {
    if (wire && (isFp8Wire(*wire) ||
                 (*wire == WireDtype::f32) == x.getElementType().isF32()))
      op->setAttr("wire", WireDtypeAttr::get(op->getContext(), *wire));
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
    if (align > 0)
      dispatch.setAlignAttr(Builder(op).getI64IntegerAttr(align));
  });
}

/// What a retarget sets (0: keep the IR's).
struct RetargetTo {
  int64_t ranks, perNode, experts;
  /// (W, G, E) retargeted.
  std::tuple<int64_t, int64_t, int64_t> apply(int64_t w, int64_t g,
                                              int64_t e) const {
    return {ranks > 0 ? ranks : w, perNode > 0 ? perNode : g,
            experts > 0 ? experts : e};
  }
  /// "8 ranks", "16 experts" or "8 ranks and 16 experts", for diagnostics
  /// about the types that change (those depend on W and E only).
  std::string describe() const {
    std::string s;
    llvm::raw_string_ostream os(s);
    if (ranks > 0)
      os << ranks << " ranks";
    if (ranks > 0 && experts > 0)
      os << " and ";
    if (experts > 0)
      os << experts << " experts";
    return s;
  }
};

/// Retargets every topology and handle type of the module to `to`'s ranks,
/// ranks per node and/or experts, then re-infers the moecomm result types
/// that depend on them (tokens_per_expert is [E/W], or [S/W] with an expert
/// placement, all_to_all's recv_counts [W]) and carries them through
/// function signatures. Expert placements are kept (see Passes.td).
LogicalResult retarget(ModuleOp module, const RetargetTo &to,
                       SymbolTableCollection &symbols) {
  if (to.ranks == 0 && to.perNode == 0 && to.experts == 0)
    return success();

  // Every topology and handle type, wherever it appears (function signatures
  // included), must pass its own verifier once retargeted: a retarget is
  // all or nothing.
  Operation *current = nullptr;
  auto retargetError = [&](int64_t w, int64_t g, int64_t e) {
    return [&current, &to, w, g, e] {
      auto [nw, ng, ne] = to.apply(w, g, e);
      InFlightDiagnostic diag = current->emitError();
      diag << "cannot retarget " << w << " ranks x " << g << " per node";
      if (ne != e)
        diag << " (" << e << " experts)";
      diag << " to " << nw << " ranks x " << ng << " per node";
      if (ne != e)
        diag << " (" << ne << " experts)";
      diag << ": ";
      return diag;
    };
  };
  // A placement's slots hold logical expert ids: they cannot follow another
  // expert count.
  auto placementExperts = [&](int64_t e, int64_t slots) -> LogicalResult {
    if (slots == 0 || to.experts == 0 || to.experts == e)
      return success();
    return current->emitError()
           << "cannot retarget " << e << " experts to " << to.experts
           << ": the expert placement's " << slots
           << " slots hold logical experts of [0, " << e
           << "); write a placement for " << to.experts << " experts instead";
  };
  AttrTypeWalker checker;
  checker.addWalk([&](TopologyAttr topo) {
    auto [w, g, e] = to.apply(topo.getRanks(), topo.getRanksPerNode(),
                              topo.getExperts());
    if (failed(placementExperts(topo.getExperts(),
                                topo.getPlacement() ? topo.getSlots() : 0)))
      return WalkResult::interrupt();
    // The placement is kept when it is valid for the new ranks (its
    // verifier's message names it otherwise): see Passes.td.
    return WalkResult(TopologyAttr::verify(
        retargetError(topo.getRanks(), topo.getRanksPerNode(),
                      topo.getExperts()),
        w, g, e, topo.getSlots(), topo.getPlacement(),
        topo.getReplicaChoice()));
  });
  checker.addWalk([&](HandleType type) {
    auto [w, g, e] = to.apply(type.getRanks(), type.getRanksPerNode(),
                              type.getExperts());
    if (failed(placementExperts(type.getExperts(), type.getSlots())))
      return WalkResult::interrupt();
    return WalkResult(HandleType::verify(
        retargetError(type.getRanks(), type.getRanksPerNode(),
                      type.getExperts()),
        w, g, e, type.getSlots(), type.getStrategy()));
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
      // The plan depends on the ranks only.
      auto [nw, ng, e] = to.apply(w, g, type.getExperts());
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
    auto [w, g, e] = to.apply(topo.getRanks(), topo.getRanksPerNode(),
                              topo.getExperts());
    return TopologyAttr::get(topo.getContext(), w, g, e, topo.getSlots(),
                             topo.getPlacement(), topo.getReplicaChoice());
  });
  replacer.addReplacement([&](HandleType type) {
    auto [w, g, e] = to.apply(type.getRanks(), type.getRanksPerNode(),
                              type.getExperts());
    return HandleType::get(type.getContext(), w, g, e, type.getSlots(),
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
             << " once retargeted to " << to.describe()
             << "; tensor.cast the values reaching it to "
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
      diag << "cannot retarget to " << to.describe() << ": operand #"
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
struct ConfigureCollectivesPass
    : public WithOptionErrors<mlir::moecomm::impl::MoECommConfigureCollectivesBase<
          ConfigureCollectivesPass>> {
  using WithOptionErrors::WithOptionErrors;

  // Options are checked once, before any IR is touched (OptionErrors.h).
  LogicalResult initialize(MLIRContext *context) override {
    return checkConfigureOptions(context, getArgument(), ranks, ranksPerNode,
                                 experts, capacity, align);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTableCollection symbols;
    overrideDispatchOptions(module, overriddenWireDtype(wireDtype), capacity,
                            align);
    if (failed(retarget(module, {ranks, ranksPerNode, experts}, symbols)) ||
        failed(checkSignatures(module, symbols)))
      return signalPassFailure();
  }
};

} // namespace

//===- ConvertMoECommToRuntime.cpp - staged level -> runtime level ---------===//
//
// One-shot module bufferization with moecomm's BufferizableOpInterface models
// (which emit the runtime calls), then handles/requests become !llvm.ptr in
// function signatures, calls and returns (MLIR's type-conversion patterns,
// MoECommToRuntime.h), every layout that does not leave its function is
// released after its last use, and with `deallocate` the buffers are freed
// (moecomm-buffer-deallocation).
//
//===----------------------------------------------------------------------===//

#include "Conversion/MoECommToRuntime/RuntimeAbi.h"
#include "Transforms/OptionErrors.h"
#include "moecomm/Conversion/MoECommToRuntime.h"
#include "moecomm/Conversion/Passes.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"
#include "moecomm/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::moecomm {
#define GEN_PASS_DEF_CONVERTMOECOMMTORUNTIME
#include "moecomm/Conversion/Passes.h.inc"
} // namespace mlir::moecomm

using namespace mlir;
using namespace mlir::moecomm;

namespace {

bool isRuntimeObject(Type type) { return isa<HandleType, RequestType>(type); }

/// Bufferizes each tensor.empty filled by a chain of tensor.insert_slice
/// whose intermediate results only feed the next insert (how
/// moecomm-schedule-overlap reassembles chunk outputs): one allocation, each
/// insert a copy into its subview where the insert was, the last result a
/// to_tensor of the allocation. Nothing else sees the partial results, so
/// this is what One-Shot Analysis would decide; but the chain is one alias
/// set it checks in full for every insert, cubic in the number of chunks.
LogicalResult
bufferizeInsertChains(ModuleOp module,
                      const bufferization::BufferizationOptions &options) {
  SmallVector<tensor::EmptyOp> empties;
  module.walk([&](tensor::EmptyOp empty) { empties.push_back(empty); });
  for (tensor::EmptyOp empty : empties) {
    // Rank-reducing inserts would need rank-reducing subviews; the chunk
    // outputs are never rank-reduced.
    auto isChainLink = [&](Value dest) -> tensor::InsertSliceOp {
      if (!dest.hasOneUse())
        return {};
      auto insert = dyn_cast<tensor::InsertSliceOp>(*dest.getUsers().begin());
      if (!insert || insert.getDest() != dest ||
          insert->getBlock() != empty->getBlock() ||
          insert.getSourceType().getRank() != insert.getDestType().getRank())
        return {};
      return insert;
    };
    SmallVector<tensor::InsertSliceOp> chain;
    for (tensor::InsertSliceOp insert = isChainLink(empty); insert;
         insert = isChainLink(insert.getResult()))
      chain.push_back(insert);
    if (chain.empty())
      continue;

    OpBuilder b(empty);
    auto type = MemRefType::get(empty.getType().getShape(),
                                empty.getType().getElementType());
    FailureOr<Value> buffer =
        options.createAlloc(b, empty.getLoc(), type, empty.getDynamicSizes());
    if (failed(buffer))
      return failure();
    for (tensor::InsertSliceOp insert : chain) {
      b.setInsertionPoint(insert);
      Value slice = memref::SubViewOp::create(
          b, insert.getLoc(), *buffer, insert.getMixedOffsets(),
          insert.getMixedSizes(), insert.getMixedStrides());
      bufferization::MaterializeInDestinationOp::create(
          b, insert.getLoc(), Type(), insert.getSource(), slice,
          /*restrict=*/true, /*writable=*/true);
    }
    tensor::InsertSliceOp last = chain.back();
    b.setInsertionPoint(last);
    last.replaceAllUsesWith(bufferization::ToTensorOp::create(
                                b, last.getLoc(), last.getType(), *buffer,
                                /*restrict=*/true, /*writable=*/true)
                                .getResult());
    for (tensor::InsertSliceOp insert : llvm::reverse(chain))
      insert.erase();
    empty.erase();
  }
  return success();
}

/// For each function of the module, the results that are handles: a call of
/// it returns a layout, which its caller owns unless the callee returns an
/// argument unchanged (returnedArgument).
DenseMap<Operation *, SmallVector<unsigned>> handleResults(ModuleOp module) {
  DenseMap<Operation *, SmallVector<unsigned>> results;
  module.walk([&](func::FuncOp func) {
    for (auto [index, type] : llvm::enumerate(func.getResultTypes()))
      if (isa<HandleType>(type))
        results[func].push_back(index);
  });
  return results;
}

/// Handles and requests become !llvm.ptr in function signatures, calls and
/// returns (RuntimeTypeConverter and its patterns); the unrealized casts the
/// bufferization models and the conversion left around them then fold.
/// Appends to `owned` the call results that were handles: the caller owns a
/// layout a callee returns.
LogicalResult lowerRuntimeObjectTypes(ModuleOp module,
                                      SmallVectorImpl<Value> &owned) {
  DenseMap<Operation *, SmallVector<unsigned>> returnsHandles =
      handleResults(module);
  MLIRContext *ctx = module.getContext();
  RuntimeTypeConverter converter(ctx);
  RewritePatternSet patterns(ctx);
  populateMoECommToRuntimeConversionPatterns(converter, patterns);
  ConversionTarget target(*ctx);
  populateMoECommToRuntimeLegality(converter, target);
  ConversionConfig config;
  // Plain unrealized_conversion_casts bridge the old and new types; they
  // fold below.
  config.buildMaterializations = false;
  if (failed(applyPartialConversion(module, target, std::move(patterns),
                                    config)))
    return failure();

  SymbolTableCollection symbols;
  module.walk([&](func::CallOp call) {
    auto callee = symbols.lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    for (unsigned index : returnsHandles.lookup(callee))
      owned.push_back(call.getResult(index));
  });

  SmallVector<UnrealizedConversionCastOp> casts;
  module.walk([&](UnrealizedConversionCastOp cast) { casts.push_back(cast); });
  SmallVector<UnrealizedConversionCastOp> remaining;
  reconcileUnrealizedCasts(casts, &remaining);
  // The first such cast in the module, not in the order they are left in.
  DenseSet<Operation *> left;
  for (UnrealizedConversionCastOp cast : remaining)
    if (llvm::any_of(cast->getResultTypes(), isRuntimeObject) ||
        llvm::any_of(cast->getOperandTypes(), isRuntimeObject))
      left.insert(cast);
  WalkResult first = module.walk([&](UnrealizedConversionCastOp cast) {
    if (!left.contains(cast))
      return WalkResult::advance();
    cast.emitError() << "a moecomm handle or request is still used by an op "
                        "the runtime lowering does not know";
    return WalkResult::interrupt();
  });
  return failure(first.wasInterrupted());
}

/// The argument a function defined in the module returns unchanged as
/// result `index` of `call` (every return of it agrees), if any: that result
/// is the caller's own value again, not a layout the callee hands over.
std::optional<unsigned> returnedArgument(func::CallOp call, unsigned index,
                                         SymbolTableCollection &symbols) {
  auto callee =
      symbols.lookupNearestSymbolFrom<func::FuncOp>(call, call.getCalleeAttr());
  if (!callee || callee.isExternal())
    return std::nullopt;
  std::optional<unsigned> argument;
  bool agree = true;
  callee.walk([&](func::ReturnOp ret) {
    auto arg = dyn_cast<BlockArgument>(ret.getOperand(index));
    std::optional<unsigned> here;
    if (arg && arg.getOwner()->isEntryBlock())
      here = arg.getArgNumber();
    if (!argument && agree)
      argument = here;
    agree &= argument == here;
  });
  return agree ? argument : std::nullopt;
}

/// A call of the runtime that creates a layout (moecomm_rt_layout_i32/i64,
/// which return it), as opposed to moecomm_rt_layout_release.
bool isLayoutCreation(func::CallOp call) {
  return call.getCallee().starts_with("moecomm_rt_layout_") &&
         call.getNumResults() == 1;
}

/// The runtime calls already in the module before this run (IR lowered
/// before): their layouts are released already.
DenseSet<Operation *> layoutCreations(ModuleOp module) {
  DenseSet<Operation *> calls;
  module.walk([&](func::CallOp call) {
    if (isLayoutCreation(call))
      calls.insert(call);
  });
  return calls;
}

/// Releases every layout a function owns (it created it, or a call returned
/// one the callee owned) after its last use in the block that holds it,
/// unless the function returns it: then its caller owns it. Passing a layout
/// to a call lends it; a call that returns it unchanged extends its uses.
void releaseLayouts(ModuleOp module, ArrayRef<Value> ownedCallResults,
                    const DenseSet<Operation *> &earlierCalls) {
  SymbolTableCollection symbols;
  SmallVector<Value> owned;
  for (Value result : ownedCallResults)
    if (!returnedArgument(cast<func::CallOp>(result.getDefiningOp()),
                          cast<OpResult>(result).getResultNumber(), symbols))
      owned.push_back(result);
  module.walk([&](func::CallOp call) {
    if (isLayoutCreation(call) && !earlierCalls.contains(call))
      owned.push_back(call.getResult(0));
  });
  for (Value ptr : owned) {
    Operation *def = ptr.getDefiningOp();
    Block *block = def->getBlock();
    Operation *last = def;
    bool escapes = false;
    SmallVector<Value> aliases = {ptr};
    while (!aliases.empty() && !escapes) {
      Value alias = aliases.pop_back_val();
      for (OpOperand &use : alias.getUses()) {
        Operation *user = use.getOwner();
        Operation *ancestor = block->findAncestorOpInBlock(*user);
        auto call = dyn_cast<func::CallOp>(user);
        if (!call || !ancestor) {
          escapes = true;
          break;
        }
        if (last->isBeforeInBlock(ancestor))
          last = ancestor;
        for (OpResult result : call->getResults())
          if (returnedArgument(call, result.getResultNumber(), symbols) ==
              use.getOperandNumber())
            aliases.push_back(result);
      }
    }
    if (escapes)
      continue;
    OpBuilder b(last->getContext());
    b.setInsertionPointAfter(last);
    RuntimeAbi(b, def->getLoc(), def).call("moecomm_rt_layout_release", {ptr});
  }
}

/// Whether `attr` is or holds a moecomm attribute or type.
bool mentionsMoEComm(Attribute attr) {
  auto inMoEComm = [](auto element) {
    return isa<MoECommDialect>(element.getDialect()) ? WalkResult::interrupt()
                                                     : WalkResult::advance();
  };
  return attr.walk([&](Attribute a) { return inMoEComm(a); },
                   [&](Type t) { return inMoEComm(t); })
      .wasInterrupted();
}

/// `attrs` (per-argument or per-result dictionaries) without the entries
/// that mention moecomm; null when nothing is left.
ArrayAttr withoutMoEComm(ArrayAttr attrs) {
  if (!attrs || !mentionsMoEComm(attrs))
    return attrs;
  SmallVector<Attribute> dicts;
  bool any = false;
  for (auto dict : attrs.getAsRange<DictionaryAttr>()) {
    SmallVector<NamedAttribute> kept;
    llvm::copy_if(dict, std::back_inserter(kept), [](NamedAttribute entry) {
      return !mentionsMoEComm(entry.getValue());
    });
    any |= !kept.empty();
    dicts.push_back(DictionaryAttr::get(attrs.getContext(), kept));
  }
  return any ? ArrayAttr::get(attrs.getContext(), dicts) : ArrayAttr();
}

/// Drops the moecomm attributes and types that the ops left in other ops'
/// attributes (a function attribute naming a topology, an argument
/// attribute holding a handle type): nothing below the runtime level reads
/// them, and mlir-translate, which has no moecomm dialect, cannot parse the
/// lowered module while they are there.
void stripMoECommAttributes(ModuleOp module) {
  module.walk([](Operation *op) {
    for (NamedAttribute attr : llvm::to_vector(op->getDiscardableAttrs()))
      if (mentionsMoEComm(attr.getValue()))
        op->removeDiscardableAttr(attr.getName());
    if (auto withArgs = dyn_cast<ArgAndResultAttrsOpInterface>(op)) {
      withArgs.setArgAttrsAttr(withoutMoEComm(withArgs.getArgAttrsAttr()));
      withArgs.setResAttrsAttr(withoutMoEComm(withArgs.getResAttrsAttr()));
    }
  });
}

struct ConvertMoECommToRuntimePass
    : public WithOptionErrors<mlir::moecomm::impl::ConvertMoECommToRuntimeBase<
          ConvertMoECommToRuntimePass>> {
  using WithOptionErrors::WithOptionErrors;

  void getDependentDialects(DialectRegistry &registry) const override {
    Base::getDependentDialects(registry);
    registry.insert<MoECommDialect>();
    registerConvertMoECommToRuntimeInterfaces(registry);
    // The buffer freeing that `deallocate` runs as a nested pipeline.
    createMoECommBufferDeallocation()->getDependentDialects(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    bufferization::OneShotBufferizationOptions options;
    options.bufferizeFunctionBoundaries = true;
    // Layers in an scf.for carry their activations as iter_args: each
    // iteration's combine output is a new buffer.
    options.allowReturnAllocsFromLoops = true;
    options.setFunctionBoundaryTypeConversion(
        bufferization::LayoutMapOption::IdentityLayoutMap);
    // linalg.copy lowers to loops; memref.copy of strided views (chunk
    // outputs into the assembled result) would need MLIR's C runner library.
    options.memCpyFn = [](OpBuilder &b, Location loc, Value from, Value to) {
      linalg::CopyOp::create(b, loc, from, to);
      return success();
    };
    bufferization::BufferizationState state;
    SmallVector<Value> ownedHandles;
    DenseSet<Operation *> earlierCalls = layoutCreations(module);
    if (failed(bufferizeInsertChains(module, options)) ||
        failed(
            bufferization::runOneShotModuleBufferize(module, options, state)) ||
        failed(checkRuntimeDeclarations(module)) ||
        failed(lowerRuntimeObjectTypes(module, ownedHandles)))
      return signalPassFailure();
    releaseLayouts(module, ownedHandles, earlierCalls);
    stripMoECommAttributes(module);
    if (!deallocate)
      return;
    OpPassManager freeBuffers(ModuleOp::getOperationName());
    freeBuffers.addPass(createMoECommBufferDeallocation());
    if (failed(runPipeline(freeBuffers, module)))
      return signalPassFailure();
  }
};

} // namespace

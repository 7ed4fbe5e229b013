//===- ConvertMoECommToRuntime.cpp - staged level -> runtime level ---------===//
//
// One-shot module bufferization with moecomm's BufferizableOpInterface models
// (which emit the runtime calls), then handles/requests become !llvm.ptr in
// function signatures, calls and returns, and every layout that does not
// leave its function is released after its last use.
//
//===----------------------------------------------------------------------===//

#include "Transforms/Deallocation.h"
#include "Transforms/OptionErrors.h"
#include "Conversion/MoECommToRuntime/RuntimeAbi.h"
#include "moecomm/Conversion/Passes.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"
#include "moecomm/Conversion/BufferizableOpInterfaceImpl.h"

#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotAnalysis.h"
#include "mlir/Dialect/Bufferization/Transforms/OneShotModuleBufferize.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
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

/// Handles and requests become !llvm.ptr at function boundaries; the
/// unrealized casts the bufferization models left around them then fold.
/// Appends to `owned` the call results that were handles: the caller owns a
/// layout a callee returns.
LogicalResult lowerRuntimeObjectTypes(ModuleOp module,
                                      SmallVectorImpl<Value> &owned) {
  MLIRContext *ctx = module.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  OpBuilder b(ctx);
  auto castTo = [&](Type type, Value value) {
    return UnrealizedConversionCastOp::create(b, value.getLoc(), type, value)
        .getResult(0);
  };
  auto lowered = [&](TypeRange types) {
    return llvm::map_to_vector(types, [&](Type t) {
      return isRuntimeObject(t) ? ptr : t;
    });
  };

  module.walk([&](func::FuncOp func) {
    if (!func.isExternal()) {
      Block &entry = func.front();
      b.setInsertionPointToStart(&entry);
      for (BlockArgument arg : entry.getArguments()) {
        if (!isRuntimeObject(arg.getType()))
          continue;
        Type old = arg.getType();
        arg.setType(ptr);
        Value cast = castTo(old, arg);
        arg.replaceAllUsesExcept(cast, cast.getDefiningOp());
      }
    }
    func.setType(FunctionType::get(ctx, lowered(func.getArgumentTypes()),
                                   lowered(func.getResultTypes())));
  });
  module.walk([&](Operation *op) {
    if (!isa<func::ReturnOp, func::CallOp>(op))
      return;
    b.setInsertionPoint(op);
    for (OpOperand &operand : op->getOpOperands())
      if (isRuntimeObject(operand.get().getType()))
        operand.set(castTo(ptr, operand.get()));
    b.setInsertionPointAfter(op);
    for (OpResult result : op->getResults()) {
      if (!isRuntimeObject(result.getType()))
        continue;
      if (isa<HandleType>(result.getType()))
        owned.push_back(result);
      Type old = result.getType();
      result.setType(ptr);
      Value cast = castTo(old, result);
      result.replaceAllUsesExcept(cast, cast.getDefiningOp());
    }
  });

  SmallVector<UnrealizedConversionCastOp> casts;
  module.walk([&](UnrealizedConversionCastOp cast) { casts.push_back(cast); });
  SmallVector<UnrealizedConversionCastOp> remaining;
  reconcileUnrealizedCasts(casts, &remaining);
  for (UnrealizedConversionCastOp cast : remaining)
    if (llvm::any_of(cast->getResultTypes(), isRuntimeObject) ||
        llvm::any_of(cast->getOperandTypes(), isRuntimeObject))
      return cast.emitError()
             << "a moecomm handle or request is still used by an op the "
                "runtime lowering does not know";
  return success();
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

/// Releases every layout a function owns (it created it, or a call returned
/// one the callee owned) after its last use in the block that holds it,
/// unless the function returns it: then its caller owns it. Passing a layout
/// to a call lends it; a call that returns it unchanged extends its uses.
void releaseLayouts(ModuleOp module, ArrayRef<Value> ownedCallResults) {
  SymbolTableCollection symbols;
  SmallVector<Value> owned;
  for (Value result : ownedCallResults)
    if (!returnedArgument(cast<func::CallOp>(result.getDefiningOp()),
                          cast<OpResult>(result).getResultNumber(), symbols))
      owned.push_back(result);
  module.walk([&](func::CallOp call) {
    if (call.getCallee().starts_with("moecomm_rt_layout_"))
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
    moecomm::registerBufferizableOpInterfaceExternalModels(registry);
    arith::registerBufferizableOpInterfaceExternalModels(registry);
    bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
        registry);
    linalg::registerBufferizableOpInterfaceExternalModels(registry);
    scf::registerBufferizableOpInterfaceExternalModels(registry);
    tensor::registerBufferizableOpInterfaceExternalModels(registry);
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
    if (failed(bufferizeInsertChains(module, options)) ||
        failed(
            bufferization::runOneShotModuleBufferize(module, options, state)) ||
        failed(lowerRuntimeObjectTypes(module, ownedHandles)))
      return signalPassFailure();
    releaseLayouts(module, ownedHandles);
    stripMoECommAttributes(module);
    if (deallocate &&
        failed(deallocateBuffers(module, [&](OpPassManager &pm, Operation *op) {
          return runPipeline(pm, op);
        })))
      return signalPassFailure();
  }
};

} // namespace

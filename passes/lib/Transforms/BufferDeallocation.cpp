//===- BufferDeallocation.cpp - moecomm-buffer-deallocation ---------------===//
//
// MLIR's ownership-based deallocation frees every buffer at the end of its
// block and simplifies with pairwise alias queries: for a training step of
// many MoE layers (thousands of buffers in one block) that keeps every
// intermediate buffer alive until the end and costs seconds of compile time.
// The bufferized form of moecomm graphs is simple enough to do better:
// straight-line code where buffers flow only through views, runtime calls,
// linalg ops and copies. For such functions each buffer that does not escape
// is freed right after its last use; any other function goes through the
// upstream buffer-deallocation pipeline, whose dealloc lowering runs on the
// module (it may add a library function there). Which ABI the functions keep
// and why: the pass description (Passes.td).
//
//===----------------------------------------------------------------------===//

#include "Transforms/RootBuffer.h"
#include "moecomm/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace mlir::moecomm {
#define GEN_PASS_DEF_MOECOMMBUFFERDEALLOCATION
#include "moecomm/Transforms/Passes.h.inc"
} // namespace mlir::moecomm

using namespace mlir;
using mlir::moecomm::rootBuffer;

namespace {

bool isRuntimeCall(Operation *op, StringRef prefix = "moecomm_rt_") {
  auto call = dyn_cast<func::CallOp>(op);
  return call && call.getCallee().starts_with(prefix);
}

/// Straight-line functions whose only region-holding ops are linalg ops
/// (their bodies see scalars, not buffers). Calls borrow their memref
/// arguments: a function never frees a buffer it receives.
bool isStraightLine(func::FuncOp func) {
  if (!func.getBody().hasOneBlock())
    return false;
  for (Operation &op : func.getBody().front())
    if (op.getNumRegions() && !isa<linalg::LinalgOp>(op))
      return false;
  return true;
}

/// Whether `call` (not of the runtime) borrows its memref arguments and
/// hands over its memref results: a call of a function defined in the
/// module. Every such function keeps that ABI once this pass is done: the
/// straight-line ones through copyBorrowedResults, the others through
/// upstream ownership-based deallocation, whose function boundary ABI it is.
bool isOwningCall(func::CallOp call, SymbolTableCollection &symbols) {
  auto callee =
      symbols.lookupNearestSymbolFrom<func::FuncOp>(call, call.getCalleeAttr());
  return callee && !callee.isExternal();
}

/// How a buffer is used: the ops of the block that read or write it (through
/// any view), or that it escapes (returned, passed to an unknown op or to a
/// call that may return it).
struct BufferUses {
  SmallVector<Operation *> uses;
  bool escapes = false;
};

BufferUses collectUses(Value buffer, SymbolTableCollection &symbols) {
  BufferUses result;
  SmallVector<Value> aliases = {buffer};
  while (!aliases.empty() && !result.escapes) {
    Value value = aliases.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      auto view = dyn_cast<ViewLikeOpInterface>(user);
      if (isa<memref::CastOp>(user) ||
          (view && view.getViewSource() == value)) {
        for (Value r : user->getResults())
          if (isa<BaseMemRefType>(r.getType()))
            aliases.push_back(r);
        continue;
      }
      // A runtime call, or a call of a function of the module, borrows its
      // memref arguments.
      auto call = dyn_cast<func::CallOp>(user);
      bool knownUse =
          (call && (isRuntimeCall(call) || isOwningCall(call, symbols))) ||
          isa<linalg::LinalgOp, memref::CopyOp, memref::DimOp,
              memref::ExtractStridedMetadataOp, memref::LoadOp>(user) ||
          (isa<memref::StoreOp>(user) &&
           cast<memref::StoreOp>(user).getMemRef() == value);
      if (!knownUse) {
        result.escapes = true;
        break;
      }
      result.uses.push_back(user);
    }
  }
  return result;
}

/// A buffer handed to exchange_start is read/written by the runtime until the
/// matching wait: the wait is a use too.
void extendToWaits(BufferUses &buffer) {
  SmallVector<Operation *> waits;
  for (Operation *use : buffer.uses)
    if (isRuntimeCall(use, "moecomm_rt_exchange_start_"))
      for (Operation *user : use->getResult(0).getUsers())
        if (isRuntimeCall(user, "moecomm_rt_wait"))
          waits.push_back(user);
  llvm::append_range(buffer.uses, waits);
}

/// The caller owns every memref a function returns, each a distinct buffer
/// (the function boundary ABI of MLIR's ownership-based deallocation, which
/// the other functions go through): a result that aliases an argument, a
/// global or another result is returned as a fresh copy. Calls of functions
/// of the module count as fresh; this runs on every function before any
/// deallocation, so that holds once it is done.
void copyBorrowedResults(func::FuncOp func, SymbolTableCollection &symbols) {
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  DenseSet<Value> returnedRoots;
  OpBuilder b(ret);
  for (OpOperand &operand : ret->getOpOperands()) {
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    if (!type)
      continue;
    Value root = rootBuffer(operand.get());
    Operation *def = root.getDefiningOp();
    auto call = dyn_cast_or_null<func::CallOp>(def);
    bool owned = isa_and_nonnull<memref::AllocOp>(def) ||
                 (call && isOwningCall(call, symbols));
    if (owned && returnedRoots.insert(root).second)
      continue;
    Location loc = operand.get().getLoc();
    SmallVector<Value> dynamicSizes;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (type.isDynamicDim(d))
        dynamicSizes.push_back(memref::DimOp::create(b, loc, operand.get(), d));
    auto copyType =
        MemRefType::get(type.getShape(), type.getElementType(),
                        MemRefLayoutAttrInterface(), type.getMemorySpace());
    Value copy = memref::AllocOp::create(b, loc, copyType, dynamicSizes);
    // linalg.copy, as bufferization's memCpyFn (ConvertMoECommToRuntime.cpp):
    // memref.copy of a strided view needs MLIR's C runner library.
    linalg::CopyOp::create(b, loc, operand.get(), copy);
    if (copyType != type)
      copy = memref::CastOp::create(b, loc, type, copy);
    operand.set(copy);
  }
}

/// Frees the non-escaping buffers of a straight-line function after their
/// last use: its allocations and the buffers its calls return (the caller
/// owns what a function returns).
void freeAfterLastUse(func::FuncOp func, SymbolTableCollection &symbols) {
  Block &block = func.getBody().front();
  SmallVector<Value> owned;
  for (Operation &op : block) {
    auto call = dyn_cast<func::CallOp>(op);
    if (isa<memref::AllocOp>(op) || (call && isOwningCall(call, symbols)))
      for (Value result : op.getResults())
        if (isa<MemRefType>(result.getType()))
          owned.push_back(result);
  }
  OpBuilder b(func.getContext());
  for (Value buffer : owned) {
    BufferUses uses = collectUses(buffer, symbols);
    if (uses.escapes)
      continue;
    extendToWaits(uses);
    Operation *last = buffer.getDefiningOp();
    for (Operation *use : uses.uses) {
      Operation *op = block.findAncestorOpInBlock(*use);
      if (last->isBeforeInBlock(op))
        last = op;
    }
    b.setInsertionPointAfter(last);
    memref::DeallocOp::create(b, buffer.getLoc(), buffer);
  }
}

struct MoECommBufferDeallocationPass
    : public mlir::moecomm::impl::MoECommBufferDeallocationBase<
          MoECommBufferDeallocationPass> {
  void runOnOperation() override;
};

} // namespace

void MoECommBufferDeallocationPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTableCollection symbols;
  for (func::FuncOp func : module.getOps<func::FuncOp>())
    if (!func.isExternal() && isStraightLine(func))
      copyBorrowedResults(func, symbols);
  // The other functions get bufferization::buildBufferDeallocationPipeline,
  // in three parts: its lowering of bufferization.dealloc runs on the module,
  // where it can add the library function (dealloc_helper) that a dealloc of
  // several buffers with retained values lowers to (a loop that carries a
  // buffer and a handle-dependent one, e.g. combine + cached_dispatch);
  // nested on a function it can only fail.
  SmallVector<func::FuncOp> upstream;
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    if (isStraightLine(func)) {
      freeAfterLastUse(func, symbols);
      continue;
    }
    OpPassManager pm(func::FuncOp::getOperationName());
    memref::ExpandReallocPassOptions expandRealloc;
    expandRealloc.emitDeallocs = false;
    pm.addPass(memref::createExpandReallocPass(expandRealloc));
    pm.addPass(createCanonicalizerPass());
    pm.addPass(bufferization::createOwnershipBasedBufferDeallocationPass());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(bufferization::createBufferDeallocationSimplificationPass());
    if (failed(runPipeline(pm, func)))
      return signalPassFailure();
    upstream.push_back(func);
  }
  if (upstream.empty())
    return;
  OpPassManager lower(ModuleOp::getOperationName());
  lower.addPass(bufferization::createLowerDeallocationsPass());
  if (failed(runPipeline(lower, module)))
    return signalPassFailure();
  for (func::FuncOp func : upstream) {
    OpPassManager pm(func::FuncOp::getOperationName());
    pm.addPass(createCSEPass());
    pm.addPass(createCanonicalizerPass());
    if (failed(runPipeline(pm, func)))
      return signalPassFailure();
  }
}

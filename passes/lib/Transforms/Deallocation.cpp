//===- Deallocation.cpp - free runtime-call buffers after their last use ---===//
//
// MLIR's ownership-based deallocation frees every buffer at the end of its
// block and simplifies with pairwise alias queries: for a training step of
// many MoE layers (thousands of buffers in one block) that keeps every
// intermediate buffer alive until the end and costs seconds of compile time.
// The bufferized form of moecomm graphs is simple enough to do better:
// straight-line code where buffers flow only through views, runtime calls,
// linalg ops and copies. For such functions each buffer that does not escape
// is freed right after its last use; any other function goes through the
// upstream buffer-deallocation pipeline unchanged.
//
//===----------------------------------------------------------------------===//

#include "Deallocation.h"

#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;

namespace {

bool isRuntimeCall(Operation *op, StringRef prefix = "moecomm_rt_") {
  auto call = dyn_cast<func::CallOp>(op);
  return call && call.getCallee().starts_with(prefix);
}

/// Straight-line functions whose only region-holding ops are linalg ops
/// (their bodies see scalars, not buffers).
bool isStraightLine(func::FuncOp func) {
  if (!func.getBody().hasOneBlock())
    return false;
  for (Operation &op : func.getBody().front())
    if (op.getNumRegions() && !isa<linalg::LinalgOp>(op))
      return false;
  return true;
}

/// How a buffer is used: the ops of the block that read or write it (through
/// any view), or that it escapes (returned, passed to an unknown op).
struct BufferUses {
  SmallVector<Operation *> uses;
  bool escapes = false;
};

BufferUses collectUses(memref::AllocOp alloc) {
  BufferUses result;
  SmallVector<Value> aliases = {alloc.getResult()};
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
      bool knownUse =
          isRuntimeCall(user) ||
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

/// Frees the non-escaping buffers of a straight-line function after their
/// last use.
void freeAfterLastUse(func::FuncOp func) {
  Block &block = func.getBody().front();
  SmallVector<memref::AllocOp> allocs(block.getOps<memref::AllocOp>());
  OpBuilder b(func.getContext());
  for (memref::AllocOp alloc : allocs) {
    BufferUses buffer = collectUses(alloc);
    if (buffer.escapes)
      continue;
    extendToWaits(buffer);
    Operation *last = alloc;
    for (Operation *use : buffer.uses) {
      Operation *op = block.findAncestorOpInBlock(*use);
      if (last->isBeforeInBlock(op))
        last = op;
    }
    b.setInsertionPointAfter(last);
    memref::DeallocOp::create(b, alloc.getLoc(), alloc.getResult());
  }
}

} // namespace

LogicalResult mlir::moecomm::deallocateBuffers(
    ModuleOp module, function_ref<LogicalResult(OpPassManager &, Operation *)>
                         runPipeline) {
  for (func::FuncOp func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    if (isStraightLine(func)) {
      freeAfterLastUse(func);
      continue;
    }
    OpPassManager pm(func::FuncOp::getOperationName());
    bufferization::buildBufferDeallocationPipeline(pm);
    if (failed(runPipeline(pm, func)))
      return failure();
  }
  return success();
}

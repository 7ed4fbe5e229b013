//===- DeviceBuffers.cpp - moecomm-device-buffers: buffers on the device --===//
//
// The buffer half of the cuda target (Passes.td): allocations, frees, copies
// and zero fills of a bufferized graph become runtime calls, which place the
// buffers on the thread's bound device and order the work on its stream. The
// collectives themselves need no rewrite: the same ABI entry points take
// device rows on a device-bound thread (moecomm_compiled.h).
//
//===----------------------------------------------------------------------===//

#include "Conversion/MoECommToRuntime/RuntimeAbi.h"
#include "Transforms/RootBuffer.h"
#include "moecomm/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::moecomm {
#define GEN_PASS_DEF_MOECOMMDEVICEBUFFERS
#include "moecomm/Conversion/Passes.h.inc"
} // namespace mlir::moecomm

using namespace mlir;
using namespace mlir::moecomm;

namespace {

/// The runtime's buffer calls (moecomm_compiled.h).
constexpr StringLiteral kAlloc = "moecomm_rt_alloc";
constexpr StringLiteral kFree = "moecomm_rt_free";

/// Which buffers stay in host memory: the per-expert metadata the graph's
/// host code reads, and bookkeeping buffers (index / i1 elements).
class Placement {
public:
  explicit Placement(ModuleOp module) {
    module.walk([&](func::CallOp call) {
      StringRef callee = call.getCallee();
      if ((callee == "moecomm_rt_tokens_per_expert" ||
           callee == "moecomm_rt_expert_offsets") &&
          call.getNumOperands() == 2)
        hostRoots.insert(rootBuffer(call.getOperand(1)));
    });
    // Copies of host metadata are host metadata (a cast to a dynamic shape
    // can copy it): iterate to a fixed point.
    for (bool grew = true; grew;) {
      grew = false;
      module.walk([&](Operation *op) {
        auto [src, dst] = copyOperands(op);
        if (src && hostRoots.contains(rootBuffer(src)) &&
            hostRoots.insert(rootBuffer(dst)).second)
          grew = true;
      });
    }
  }

  /// Whether `buffer` (any view of it) is host memory.
  bool isHost(Value buffer) const {
    Type element = cast<BaseMemRefType>(buffer.getType()).getElementType();
    if (isa<IndexType>(element) || element.isInteger(1))
      return true;
    Value root = rootBuffer(buffer);
    return hostRoots.contains(root) ||
           isa_and_nonnull<memref::GetGlobalOp>(root.getDefiningOp());
  }

  /// Source and destination of a copy (memref.copy, linalg.copy on
  /// buffers), nulls for other ops.
  static std::pair<Value, Value> copyOperands(Operation *op) {
    if (auto copy = dyn_cast<memref::CopyOp>(op))
      return {copy.getSource(), copy.getTarget()};
    auto copy = dyn_cast<linalg::CopyOp>(op);
    if (copy && copy.hasPureBufferSemantics())
      return {copy.getInputs()[0], copy.getOutputs()[0]};
    return {};
  }

private:
  DenseSet<Value> hostRoots;
};

/// Whether `value` is the constant zero of its type with all bits clear
/// (not -0.0).
bool isZeroBits(Value value) {
  return matchPattern(value, m_PosZeroFloat()) || matchPattern(value, m_Zero());
}

/// Whether the host runs `op` over a device buffer: a load, a store, or a
/// linalg op the device does not run (anything but the f32 matmul the
/// device GEMM takes; copies and zero fills are rewritten before).
bool hostComputeOnDevice(Operation *op, const Placement &placement) {
  auto onDevice = [&](Value v) {
    return isa<BaseMemRefType>(v.getType()) && !placement.isHost(v);
  };
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return onDevice(load.getMemRef());
  if (auto store = dyn_cast<memref::StoreOp>(op))
    return onDevice(store.getMemRef());
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || !linalgOp.hasPureBufferSemantics())
    return false;
  // Rewritten into runtime calls (rewriteCopiesAndFills).
  auto fill = dyn_cast<linalg::FillOp>(op);
  if (isa<linalg::CopyOp>(op) || (fill && isZeroBits(fill.getInputs()[0])))
    return false;
  if (isa<linalg::MatmulOp>(op) &&
      llvm::all_of(op->getOperandTypes(), [](Type t) {
        return cast<MemRefType>(t).getElementType().isF32();
      }))
    return false;
  return llvm::any_of(op->getOperands(), onDevice);
}

/// Warns, once per function, about host compute on device buffers.
void warnHostCompute(ModuleOp module, const Placement &placement) {
  module.walk([&](func::FuncOp func) {
    Operation *first = nullptr;
    int64_t count = 0;
    func.walk([&](Operation *op) {
      if (!hostComputeOnDevice(op, placement))
        return;
      if (!first)
        first = op;
      ++count;
    });
    if (!first)
      return;
    InFlightDiagnostic warning = first->emitWarning()
                                 << "target=cuda: @" << func.getSymName()
                                 << " runs '" << first->getName() << "'";
    if (count > 1)
      warning << " and " << (count - 1) << " more op(s)";
    warning << " on the host over device buffers: this works on the host "
               "device (CPU tests) but not on a GPU, where compute on device "
               "buffers must be stream work (docs/pipeline.md, \"The cuda "
               "target\")";
  });
}

/// `value` as an unranked memref (the copy / fill entry points' operand).
Value unranked(OpBuilder &b, Location loc, Value value) {
  auto type = cast<MemRefType>(value.getType());
  auto target =
      UnrankedMemRefType::get(type.getElementType(), type.getMemorySpace());
  return memref::CastOp::create(b, loc, target, value);
}

/// Constants (memref.get_global, e.g. a dense weight) live in the host
/// image: each one that device work uses is copied into a device buffer
/// after it is read, freed after its last use in that block. Plain memref
/// ops, which the rewrites below then place and lower. A mutable global
/// (device writes would land in the copy) and a constant that leaves its
/// block (yielded or returned: its copy's lifetime is not this block's) are
/// errors.
LogicalResult copyConstantsToDevice(ModuleOp module) {
  SmallVector<memref::GetGlobalOp> reads;
  module.walk([&](memref::GetGlobalOp op) { reads.push_back(op); });
  SymbolTableCollection symbols;
  for (memref::GetGlobalOp read : reads) {
    MemRefType type = read.getType();
    // Host reads (loads) and globals the runtime cannot copy stay as they
    // are; index / i1 globals are host bookkeeping.
    bool deviceUse = llvm::any_of(read->getUsers(), [](Operation *user) {
      return !isa<memref::LoadOp>(user);
    });
    if (!deviceUse || RuntimeAbi::bufferSuffix(type.getElementType()).empty() ||
        !type.getLayout().isIdentity() || type.getMemorySpace())
      continue;
    auto global = symbols.lookupNearestSymbolFrom<memref::GlobalOp>(
        read, read.getNameAttr());
    if (global && !global.getConstant())
      return read.emitError()
             << "target=cuda: @" << read.getName()
             << " is a mutable global, which device work cannot use (it "
                "would work on a device copy and drop its writes); pass the "
                "buffer as an argument";
    // The last op of the block that uses the constant, through any view.
    Block *block = read->getBlock();
    Operation *last = read;
    SmallVector<Value> aliases = {read.getResult()};
    while (!aliases.empty()) {
      Value value = aliases.pop_back_val();
      for (Operation *user : value.getUsers()) {
        // A use in another block (a successor) or by the terminator
        // (yield, return) outlives the block.
        Operation *inBlock = block->findAncestorOpInBlock(*user);
        if (!inBlock || inBlock->hasTrait<OpTrait::IsTerminator>())
          return read.emitError()
                 << "target=cuda: the constant @" << read.getName()
                 << " leaves its block ('"
                 << (inBlock ? inBlock : user)->getName()
                 << "'), so its device copy has no place to be freed; use it "
                    "where it is read";
        if (last->isBeforeInBlock(inBlock))
          last = inBlock;
        if (isa<memref::CastOp, ViewLikeOpInterface>(user))
          llvm::append_range(aliases, user->getResults());
      }
    }
    OpBuilder b(read->getContext());
    b.setInsertionPointAfter(read);
    Location loc = read.getLoc();
    Value copy = memref::AllocOp::create(b, loc, type);
    read.getResult().replaceAllUsesWith(copy);
    memref::CopyOp::create(b, loc, read.getResult(), copy);
    // `last` is a user (deviceUse), so it follows the copy.
    b.setInsertionPointAfter(last);
    memref::DeallocOp::create(b, loc, copy);
  }
  return success();
}

/// Copies and zero fills that touch device memory become runtime calls.
LogicalResult rewriteCopiesAndFills(ModuleOp module,
                                    const Placement &placement) {
  SmallVector<Operation *> ops;
  module.walk([&](Operation *op) {
    if (Placement::copyOperands(op).first)
      ops.push_back(op);
    else if (auto fill = dyn_cast<linalg::FillOp>(op);
             fill && fill.hasPureBufferSemantics() &&
             !placement.isHost(fill.getOutputs()[0]) &&
             isZeroBits(fill.getInputs()[0]))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    auto [src, dst] = Placement::copyOperands(op);
    if (src && placement.isHost(src) && placement.isHost(dst))
      continue;
    Value target = src ? dst : cast<linalg::FillOp>(op).getOutputs()[0];
    auto type = dyn_cast<MemRefType>(target.getType());
    StringRef suffix =
        type ? RuntimeAbi::bufferSuffix(type.getElementType()) : "";
    if (suffix.empty() ||
        (src && cast<BaseMemRefType>(src.getType()).getElementType() !=
                    type.getElementType()))
      return op->emitError()
             << "target=cuda: the runtime cannot " << (src ? "copy" : "clear")
             << " device buffers of " << target.getType()
             << " (it takes bf16, f32, i32, i64, i8, "
             << "f8E4M3FN and f8E8M0FNU elements)";
    OpBuilder b(op);
    Location loc = op->getLoc();
    RuntimeAbi abi(b, loc, op);
    if (src)
      abi.call(("moecomm_rt_copy_" + suffix).str(),
               {unranked(b, loc, src), unranked(b, loc, dst)});
    else
      abi.call(("moecomm_rt_fill_zero_" + suffix).str(),
               {unranked(b, loc, target)});
    op->erase();
  }
  return success();
}

/// memref.alloc -> moecomm_rt_alloc(bytes, device) viewed as the buffer.
LogicalResult rewriteAllocs(ModuleOp module, const Placement &placement) {
  // Placed before any rewrite: the placement knows the buffers by value.
  SmallVector<std::pair<memref::AllocOp, bool>> allocs;
  module.walk([&](memref::AllocOp alloc) {
    allocs.emplace_back(alloc, placement.isHost(alloc.getResult()));
  });
  DataLayout layout(module);
  for (auto [alloc, host] : allocs) {
    MemRefType type = alloc.getType();
    if (std::optional<uint64_t> align = alloc.getAlignment();
        align && *align > 256)
      return alloc.emitError() << "target=cuda: an alignment of " << *align
                               << " bytes is above the runtime's 256";
    if (!type.getLayout().isIdentity() || type.getMemorySpace())
      return alloc.emitError()
             << "target=cuda: cannot place a buffer of " << type
             << " (the runtime's buffers are viewed with memref.view: an "
                "identity layout in the default memory space)";
    OpBuilder b(alloc);
    Location loc = alloc.getLoc();
    RuntimeAbi abi(b, loc, alloc);
    // Bytes = element size x elements, in index arithmetic.
    int64_t staticBytes =
        layout.getTypeSize(type.getElementType()).getFixedValue();
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (!type.isDynamicDim(d))
        staticBytes *= type.getDimSize(d);
    Value bytes = arith::ConstantIndexOp::create(b, loc, staticBytes);
    for (Value size : alloc.getDynamicSizes())
      bytes = arith::MulIOp::create(b, loc, bytes, size);
    Value bytes64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), bytes);
    auto raw = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
    Value buffer = abi.call(kAlloc, {bytes64, abi.i32(host ? 0 : 1)}, raw)[0];
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    alloc.replaceAllUsesWith(memref::ViewOp::create(b, loc, type, buffer, zero,
                                                    alloc.getDynamicSizes())
                                 .getResult());
    alloc.erase();
  }
  return success();
}

/// memref.dealloc -> moecomm_rt_free(the buffer's aligned address).
LogicalResult rewriteDeallocs(ModuleOp module) {
  SmallVector<memref::DeallocOp> deallocs;
  module.walk([&](memref::DeallocOp op) { deallocs.push_back(op); });
  for (memref::DeallocOp op : deallocs) {
    if (!isa<MemRefType>(op.getMemref().getType()))
      return op.emitError("target=cuda: cannot free an unranked buffer");
    OpBuilder b(op);
    Location loc = op.getLoc();
    RuntimeAbi abi(b, loc, op);
    Value address =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, op.getMemref());
    Value address64 =
        arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
    Value pointer = LLVM::IntToPtrOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), address64);
    abi.call(kFree, {pointer});
    op.erase();
  }
  return success();
}

struct MoECommDeviceBuffersPass
    : public mlir::moecomm::impl::MoECommDeviceBuffersBase<
          MoECommDeviceBuffersPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(copyConstantsToDevice(module)))
      return signalPassFailure();
    Placement placement(module);
    warnHostCompute(module, placement);
    if (failed(rewriteCopiesAndFills(module, placement)) ||
        failed(rewriteAllocs(module, placement)) ||
        failed(rewriteDeallocs(module)) ||
        failed(checkRuntimeDeclarations(module)))
      signalPassFailure();
  }
};

} // namespace

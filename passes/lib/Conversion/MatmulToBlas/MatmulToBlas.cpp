//===- MatmulToBlas.cpp - f32 linalg.matmul -> moecomm_rt_matmul_f32 ------===//
//
// `moecomm-matmul-to-blas` (Passes.td): the experts' GEMMs of a bufferized
// graph become calls of the runtime's OpenBLAS entry point instead of the
// loops convert-linalg-to-loops would make of them. A rewrite the runtime
// could not take (element type, indexing maps, an inner stride that is not
// 1) is skipped: the loops compute it as before.
//
//===----------------------------------------------------------------------===//

#include "Conversion/MoECommToRuntime/RuntimeAbi.h"
#include "moecomm/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/AffineMap.h"

namespace mlir::moecomm {
#define GEN_PASS_DEF_MOECOMMMATMULTOBLAS
#include "moecomm/Conversion/Passes.h.inc"
} // namespace mlir::moecomm

using namespace mlir;
using namespace mlir::moecomm;

namespace {

/// The runtime function (moecomm_compiled.h): (transposeB i32, A, B, C).
constexpr StringLiteral kMatmulF32 = "moecomm_rt_matmul_f32";

/// Whether `value` is an f32 memref whose rows the runtime can hand to
/// cblas_sgemm: rank 2 with a static unit inner stride and a row stride not
/// statically below the row length (any offset). A static row stride below
/// it (a broadcast row, stride 0) is no leading dimension the runtime
/// accepts, so such a matmul stays with the loops.
bool blasOperand(Value value) {
  auto type = dyn_cast<MemRefType>(value.getType());
  if (!type || type.getRank() != 2 || !type.getElementType().isF32())
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || strides[1] != 1)
    return false;
  return ShapedType::isDynamic(strides[0]) || type.isDynamicDim(1) ||
         strides[0] >= std::max<int64_t>(1, type.getDimSize(1));
}

/// 0 for linalg.matmul's default maps (B [K][N]), 1 for B transposed
/// ((m, n, k) -> (n, k), B [N][K]), nothing for other maps.
std::optional<int32_t> transposeB(linalg::MatmulOp op) {
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  MLIRContext *ctx = op.getContext();
  AffineExpr m, n, k;
  bindDims(ctx, m, n, k);
  auto map = [&](ArrayRef<AffineExpr> results) {
    return AffineMap::get(3, 0, results, ctx);
  };
  if (maps.size() != 3 || maps[0] != map({m, k}) || maps[2] != map({m, n}))
    return std::nullopt;
  if (maps[1] == map({k, n}))
    return 0;
  if (maps[1] == map({n, k}))
    return 1;
  return std::nullopt;
}

struct MoECommMatmulToBlasPass
    : public mlir::moecomm::impl::MoECommMatmulToBlasBase<
          MoECommMatmulToBlasPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<linalg::MatmulOp, int32_t>> rewrites;
    module.walk([&](linalg::MatmulOp op) {
      if (!op.hasPureBufferSemantics() ||
          !llvm::all_of(op->getOperands(), blasOperand))
        return;
      if (std::optional<int32_t> transposed = transposeB(op))
        rewrites.emplace_back(op, *transposed);
    });
    for (auto [op, transposed] : rewrites) {
      // At the matmul's place: the buffers' deallocations, placed after
      // their last use, stay after the call.
      OpBuilder b(op);
      RuntimeAbi abi(b, op.getLoc(), op);
      abi.call(kMatmulF32,
               {abi.i32(transposed), abi.abiMemRef(op.getInputs()[0]),
                abi.abiMemRef(op.getInputs()[1]),
                abi.abiMemRef(op.getOutputs()[0])});
      op.erase();
    }
    if (!rewrites.empty() && failed(checkRuntimeDeclarations(module)))
      signalPassFailure();
  }
};

} // namespace

//===- WeightedRows.cpp - rows times their routing weights ----------------===//

#include "Transforms/WeightedRows.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

Value mlir::moecomm::scaleRowsByWeights(OpBuilder &b, Location loc, Value rows,
                                        Value weights) {
  auto type = cast<RankedTensorType>(rows.getType());
  Type element = type.getElementType();
  Value init = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, rows), element);
  MLIRContext *ctx = b.getContext();
  AffineExpr row = getAffineDimExpr(0, ctx), col = getAffineDimExpr(1, ctx);
  AffineMap rowsMap = AffineMap::get(2, 0, {row, col}, ctx);
  AffineMap weightMap = AffineMap::get(2, 0, {row}, ctx);
  auto generic = linalg::GenericOp::create(
      b, loc, type, ValueRange{rows, weights}, ValueRange{init},
      ArrayRef<AffineMap>{rowsMap, weightMap, rowsMap},
      ArrayRef<utils::IteratorType>{utils::IteratorType::parallel,
                                    utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value v = args[0];
        if (!element.isF32())
          v = arith::ExtFOp::create(nb, nloc, nb.getF32Type(), v);
        v = arith::MulFOp::create(nb, nloc, v, args[1]);
        if (!element.isF32())
          v = arith::TruncFOp::create(nb, nloc, element, v);
        linalg::YieldOp::create(nb, nloc, v);
      });
  return generic.getResult(0);
}

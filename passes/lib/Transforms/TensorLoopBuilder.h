//===- TensorLoopBuilder.h - emitting loops over tensors --------*- C++ -*-===//
//
// The lowerings that write their own loops on tensors before bufferization
// (moecomm-import-ragged-all-to-all, moecomm-lower-token-permutes) build
// scf.for / scf.if with tensor iter_args, index <-> i64 casts, element reads
// and row slices of [?, H] tensors; this is that vocabulary once, on an
// ImplicitLocOpBuilder at the op being lowered (its location on every op).
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_TRANSFORMS_TENSORLOOPBUILDER_H
#define MOECOMM_TRANSFORMS_TENSORLOOPBUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::moecomm {

class TensorLoopBuilder {
public:
  /// Builds before `op` with `op`'s location, notifying `listener` (a
  /// pattern's rewriter) of what it creates.
  explicit TensorLoopBuilder(Operation *op,
                             OpBuilder::Listener *listener = nullptr)
      : b(op->getLoc(), op, listener) {}

  /// The values an scf.for / scf.if body yields.
  using Body = function_ref<SmallVector<Value>(Value, ValueRange)>;

  /// scf.for iv in [lb, ub) step 1 carrying `init`; `body` builds one
  /// iteration with `b` and returns the values carried to the next.
  scf::ForOp forLoop(Value lb, Value ub, ValueRange init, Body body) {
    return scf::ForOp::create(
        b, lb, ub, index(1), init,
        [&](OpBuilder &nested, Location, Value iv, ValueRange iter) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          scf::YieldOp::create(b, body(iv, iter));
        });
  }

  /// scf.if `cond` whose branches return the values `then` and `otherwise`
  /// build (the same types); the results.
  ValueRange ifElse(Value cond, function_ref<SmallVector<Value>()> then,
                    function_ref<SmallVector<Value>()> otherwise) {
    auto branch = [&](function_ref<SmallVector<Value>()> build) {
      return [&, build](OpBuilder &nested, Location) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        scf::YieldOp::create(b, build());
      };
    };
    return scf::IfOp::create(b, cond, branch(then), branch(otherwise))
        .getResults();
  }

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value i64Constant(int64_t v) {
    return arith::ConstantIntOp::create(b, b.getI64Type(), v);
  }
  Value i64(Value indexValue) {
    return arith::IndexCastOp::create(b, b.getI64Type(), indexValue);
  }
  Value indexOf(Value i64Value) {
    return arith::IndexCastOp::create(b, b.getIndexType(), i64Value);
  }
  /// t[indices] of an i32/i64 tensor, as i64.
  Value element(Value t, ValueRange indices) {
    Value v = tensor::ExtractOp::create(b, t, indices);
    return v.getType().isInteger(64)
               ? v
               : arith::ExtSIOp::create(b, b.getI64Type(), v).getResult();
  }
  Value cmp(arith::CmpIPredicate p, Value lhs, Value rhs) {
    return arith::CmpIOp::create(b, p, lhs, rhs);
  }
  Value andAll(ArrayRef<Value> conditions) {
    Value all = conditions.front();
    for (Value c : conditions.drop_front())
      all = arith::AndIOp::create(b, all, c);
    return all;
  }
  Value boolean(bool v) {
    return arith::ConstantIntOp::create(b, b.getI1Type(), v);
  }
  /// rows[start : start + size] of a [?, h] tensor.
  Value slice(Value rows, Value start, Value size, int64_t h) {
    auto type = cast<RankedTensorType>(rows.getType());
    return tensor::ExtractSliceOp::create(
        b,
        RankedTensorType::get({ShapedType::kDynamic, h}, type.getElementType()),
        rows, ArrayRef<OpFoldResult>{start, b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{size, b.getIndexAttr(h)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
  }
  /// `into` with rows [at : at + size] replaced by `segment`.
  Value insert(Value segment, Value into, Value at, Value size, int64_t h) {
    return tensor::InsertSliceOp::create(
        b, segment, into, ArrayRef<OpFoldResult>{at, b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{size, b.getIndexAttr(h)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
  }

protected:
  ImplicitLocOpBuilder b;
};

} // namespace mlir::moecomm

#endif // MOECOMM_TRANSFORMS_TENSORLOOPBUILDER_H

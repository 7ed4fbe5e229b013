//===- FusePermute.cpp - fold permutes into pack/unpack ---------------------===//
//
// permute(stage k) [-> quantize] becomes one moecomm.pack that writes the
// stage's send buffer directly; permute(output) [-> dequantize] becomes one
// moecomm.unpack (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "Transforms/StagedPatternPass.h"
#include "moecomm/Transforms/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"

namespace mlir::moecomm {
#define GEN_PASS_DEF_MOECOMMFUSEPERMUTE
#include "moecomm/Transforms/Passes.h.inc"
} // namespace mlir::moecomm

using namespace mlir;
using namespace mlir::moecomm;

namespace {

/// The quantize that is the only user of `permute`'s rows, if any.
QuantizeOp soleQuantizeUser(PermuteOp permute) {
  if (!permute.getOut().hasOneUse())
    return {};
  return dyn_cast<QuantizeOp>(*permute.getOut().user_begin());
}

/// The dequantize that is the only user of `permute`'s rows and scales.
DequantizeOp soleDequantizeUser(PermuteOp permute) {
  if (!permute.getOut().hasOneUse())
    return {};
  auto dequant = dyn_cast<DequantizeOp>(*permute.getOut().user_begin());
  if (!dequant || dequant.getScales() != permute.getOutScales() ||
      !permute.getOutScales().hasOneUse())
    return {};
  return dequant;
}

/// permute(stage k) [-> quantize]  ==>  pack(stage k).
struct PermuteToPack : OpRewritePattern<PermuteOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PermuteOp permute,
                                PatternRewriter &rewriter) const override {
    if (!permute.getStage())
      return failure();
    Operation *replaced = permute;
    TypeRange types = permute->getResultTypes();
    // Only dispatch quantizes on the wire; a combine's quantize stays apart.
    QuantizeOp quant = permute.getDirection() == Direction::dispatch
                           ? soleQuantizeUser(permute)
                           : QuantizeOp();
    if (quant) {
      replaced = quant;
      types = quant->getResultTypes();
    }
    SmallVector<Type> resultTypes;
    for (Type t : types) {
      auto rows = cast<RankedTensorType>(t);
      resultTypes.push_back(RankedTensorType::get(
          {ShapedType::kDynamic, rows.getDimSize(1)}, rows.getElementType()));
    }
    rewriter.setInsertionPoint(replaced);
    auto pack = PackOp::create(
        rewriter, permute.getLoc(), resultTypes, permute.getIn(),
        permute.getScales(), permute.getHandle(), permute.getDirectionAttr(),
        permute.getStageAttr(), permute.getWeightedAttr(),
        quant ? quant.getWireAttr() : WireDtypeAttr());
    rewriter.replaceOp(replaced, pack.getResults());
    if (replaced != permute.getOperation())
      rewriter.eraseOp(permute);
    return success();
  }
};

/// permute(output) [-> dequantize]  ==>  unpack. FP8 rows that nobody
/// dequantizes (handed to an FP8 consumer) stay a permute.
struct PermuteToUnpack : OpRewritePattern<PermuteOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PermuteOp permute,
                                PatternRewriter &rewriter) const override {
    if (permute.getStage())
      return failure();
    Operation *replaced = permute;
    Type resultType = permute.getOut().getType();
    if (permute.getScales()) {
      DequantizeOp dequant = soleDequantizeUser(permute);
      if (!dequant)
        return failure();
      replaced = dequant;
      resultType = dequant.getOut().getType();
    }
    rewriter.setInsertionPoint(replaced);
    auto unpack = UnpackOp::create(
        rewriter, permute.getLoc(), resultType, permute.getIn(),
        permute.getScales(), permute.getHandle(), permute.getDirectionAttr(),
        permute.getWeightedAttr());
    rewriter.replaceOp(replaced, unpack.getOut());
    if (replaced != permute.getOperation())
      rewriter.eraseOp(permute);
    return success();
  }
};

} // namespace

void mlir::moecomm::populateFusePermutePatterns(RewritePatternSet &patterns) {
  patterns.add<PermuteToPack, PermuteToUnpack>(patterns.getContext());
}

// The pass: these patterns applied greedily (StagedPatternPass.h).
template struct mlir::moecomm::StagedPatternPass<
    mlir::moecomm::impl::MoECommFusePermuteBase, populateFusePermutePatterns>;

//===- FuseQuant.cpp - quantize to FP8 once, dequantize once ---------------===//
//
// With an FP8 wire the split emits quantize -> exchange -> dequantize per hop.
// These patterns forward FP8 rows with their scales between hops instead, so
// every row is quantized once on its source rank and dequantized once where
// it is consumed (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "Transforms/StagedPatternPass.h"
#include "moecomm/Transforms/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"

namespace mlir::moecomm {
#define GEN_PASS_DEF_MOECOMMFUSEQUANT
#include "moecomm/Transforms/Passes.h.inc"
} // namespace mlir::moecomm

using namespace mlir;
using namespace mlir::moecomm;

namespace {

/// `dequantize(r, rs)` whose only user is this dispatch permute.
DequantizeOp singleUseDequantize(PermuteOp permute) {
  if (permute.getDirection() != Direction::dispatch)
    return {};
  auto dequant = permute.getIn().getDefiningOp<DequantizeOp>();
  if (!dequant || !dequant.getOut().hasOneUse())
    return {};
  return dequant;
}

/// `permute` (a dispatch permute, so unweighted) moving the FP8 rows and
/// scales that `dequant` reads instead of the dequantized rows: same handle,
/// direction and stage (none for the output permute).
PermuteOp permuteFp8Rows(PatternRewriter &rewriter, PermuteOp permute,
                         DequantizeOp dequant) {
  return PermuteOp::create(rewriter, permute.getLoc(), dequant.getQ(),
                           dequant.getScales(), permute.getHandle(),
                           permute.getDirectionAttr(), permute.getStageAttr(),
                           UnitAttr());
}

/// dequantize -> permute(stage k) -> quantize, both in one FP8 format  ==>
/// permute(stage k) of the FP8 rows and their scales (the forwarded rows
/// stay FP8).
struct ForwardFp8Rows : OpRewritePattern<QuantizeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(QuantizeOp quant,
                                PatternRewriter &rewriter) const override {
    auto permute = quant.getIn().getDefiningOp<PermuteOp>();
    if (!permute || !permute.getStage() || !permute.getOut().hasOneUse())
      return failure();
    DequantizeOp dequant = singleUseDequantize(permute);
    if (!dequant || dequant.getFp8Wire() != quant.getFp8Wire())
      return failure();
    rewriter.replaceOp(quant,
                       permuteFp8Rows(rewriter, permute, dequant).getResults());
    return success();
  }
};

/// dequantize -> permute(output)  ==>  permute(output) of FP8 rows ->
/// dequantize: rows are gathered as FP8 and dequantized once.
struct DequantizeAfterOutput : OpRewritePattern<PermuteOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PermuteOp permute,
                                PatternRewriter &rewriter) const override {
    if (permute.getStage())
      return failure();
    DequantizeOp dequant = singleUseDequantize(permute);
    if (!dequant)
      return failure();
    PermuteOp fp8 = permuteFp8Rows(rewriter, permute, dequant);
    rewriter.replaceOpWithNewOp<DequantizeOp>(
        permute, permute.getOut().getType(), fp8.getOut(), fp8.getOutScales(),
        dequant.getFp8Wire());
    return success();
  }
};

/// quantize(dequantize(q, s)), both in one FP8 format  ==>  (q, s): a
/// consumer that wants FP8 gets the received FP8 rows and scales directly,
/// in the wire's format (E8M0 scale bytes for fp8_e4m3_ue8m0 and mxfp8).
/// A consumer asking for another format keeps its quantize: that is a real
/// conversion.
struct HandOverFp8 : OpRewritePattern<QuantizeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(QuantizeOp quant,
                                PatternRewriter &rewriter) const override {
    auto dequant = quant.getIn().getDefiningOp<DequantizeOp>();
    if (!dequant || dequant.getFp8Wire() != quant.getFp8Wire())
      return failure();
    Location loc = quant.getLoc();
    SmallVector<Value> replacements;
    for (auto [from, to] : llvm::zip(
             ValueRange{dequant.getQ(), dequant.getScales()}, quant.getResults()))
      replacements.push_back(
          from.getType() == to.getType()
              ? from
              : tensor::CastOp::create(rewriter, loc, to.getType(), from));
    rewriter.replaceOp(quant, replacements);
    return success();
  }
};

} // namespace

void mlir::moecomm::populateFuseQuantPatterns(RewritePatternSet &patterns) {
  patterns.add<ForwardFp8Rows, DequantizeAfterOutput, HandOverFp8>(
      patterns.getContext());
}

// The pass: these patterns applied greedily (StagedPatternPass.h).
template struct mlir::moecomm::StagedPatternPass<
    mlir::moecomm::impl::MoECommFuseQuantBase, populateFuseQuantPatterns>;

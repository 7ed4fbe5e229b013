//===- LowerCollectives.cpp - collective level -> staged level ------------===//
//
// moecomm-lower-collectives: rewrites moecomm.dispatch, cached_dispatch and
// combine, whose strategies are known, into layout, permute and exchange
// stages (see Passes.td for the scheme and its sources).
//
//===----------------------------------------------------------------------===//

#include "Transforms/OptionErrors.h"
#include "moecomm/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace mlir::moecomm {
#define GEN_PASS_DEF_MOECOMMLOWERCOLLECTIVES
#include "moecomm/Transforms/Passes.h.inc"
} // namespace mlir::moecomm

using namespace mlir;
using namespace mlir::moecomm;

namespace {

/// Rows of `x` moved along `handle`'s plan (`strategy` on its topology):
/// per stage permute -> exchange (FP8 `wire`: quantize -> exchange ->
/// dequantize per hop, in that format), then a permute into expert-major
/// order.
Value emitDispatchRows(OpBuilder &b, Location loc, Value x, Value handle,
                       Strategy strategy, WireDtype wire) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<HandleType>(handle.getType());
  int64_t ranks = type.getRanks(), perNode = type.getRanksPerNode();
  auto dispatch = DirectionAttr::get(ctx, Direction::dispatch);
  auto xType = cast<RankedTensorType>(x.getType());
  auto dequantize = [&](Value q, Value scales) -> Value {
    auto qType = cast<RankedTensorType>(q.getType());
    auto type = RankedTensorType::get(qType.getShape(), xType.getElementType());
    return DequantizeOp::create(b, loc, type, q, scales, wire).getOut();
  };
  bool fp8 = isFp8Wire(wire);
  int64_t stages = getNumStages(strategy, ranks, perNode);
  if (fp8 && stages == 0) {
    // No wire hop, but the semantics of an FP8 wire still hold.
    auto quant = QuantizeOp::create(b, loc, x, wire);
    auto permute = PermuteOp::create(b, loc, quant.getQ(), quant.getScales(),
                                     handle, dispatch, IntegerAttr());
    return dequantize(permute.getOut(), permute.getOutScales());
  }
  Value rows = x;
  for (int64_t stage = 0; stage < stages; ++stage) {
    auto stageAttr = b.getI64IntegerAttr(stage);
    auto scope = ScopeAttr::get(ctx, getStageScope(strategy, ranks, perNode,
                                                   Direction::dispatch, stage));
    Value send =
        PermuteOp::create(b, loc, rows, Value(), handle, dispatch, stageAttr)
            .getOut();
    if (!fp8) {
      rows = ExchangeOp::create(b, loc, send, Value(), handle, dispatch,
                                stageAttr, scope)
                 .getRecv();
      continue;
    }
    auto quant = QuantizeOp::create(b, loc, send, wire);
    auto exchange = ExchangeOp::create(b, loc, quant.getQ(), quant.getScales(),
                                       handle, dispatch, stageAttr, scope);
    rows = dequantize(exchange.getRecv(), exchange.getRecvScales());
  }
  return PermuteOp::create(b, loc, rows, Value(), handle, dispatch,
                           IntegerAttr())
      .getOut();
}

/// The strategy `op` is lowered with: a dispatch's own (concrete) one; for
/// a consumer of a handle, the handle type's, else `fallback` when it is
/// concrete.
std::optional<Strategy> strategyOf(DispatchOp op, Strategy) {
  std::optional<Strategy> own = op.getStrategy();
  if (own == Strategy::automatic)
    return std::nullopt;
  return own;
}
std::optional<Strategy> handleStrategy(Value handle, Strategy fallback) {
  if (std::optional<Strategy> own =
          cast<HandleType>(handle.getType()).getStrategy())
    return own;
  if (fallback != Strategy::automatic)
    return fallback;
  return std::nullopt;
}
std::optional<Strategy> strategyOf(CachedDispatchOp op, Strategy fallback) {
  return handleStrategy(op.getHandle(), fallback);
}
std::optional<Strategy> strategyOf(CombineOp op, Strategy fallback) {
  return handleStrategy(op.getHandle(), fallback);
}

/// A pattern for a collective-level op that applies where its strategy is
/// known (strategyOf): `lower` rewrites it into the stages of `strategy`.
template <typename OpT> struct CollectivePattern : OpRewritePattern<OpT> {
  CollectivePattern(MLIRContext *context, Strategy fallback)
      : OpRewritePattern<OpT>(context), fallback(fallback) {}

  LogicalResult matchAndRewrite(OpT op,
                                PatternRewriter &rewriter) const final {
    std::optional<Strategy> strategy = strategyOf(op, fallback);
    if (!strategy)
      return rewriter.notifyMatchFailure(op, "the strategy is unknown");
    lower(op, *strategy, rewriter);
    return success();
  }

  virtual void lower(OpT op, Strategy strategy,
                     PatternRewriter &rewriter) const = 0;

  /// The strategy of handles whose type carries none (auto: none).
  Strategy fallback;
};

/// Dispatch: a layout, then its rows (emitDispatchRows).
struct LowerDispatch : CollectivePattern<DispatchOp> {
  using CollectivePattern::CollectivePattern;
  void lower(DispatchOp op, Strategy strategy,
             PatternRewriter &rewriter) const override {
    auto layout = LayoutOp::create(rewriter, op.getLoc(), op.getTopkIdx(),
                                   op.getTopkWeights(), op.getTopology(),
                                   StrategyAttr::get(op.getContext(), strategy),
                                   op.getCapacityAttr(), op.getAlignAttr());
    Value recv = emitDispatchRows(rewriter, op.getLoc(), op.getX(),
                                  layout.getHandle(), strategy,
                                  op.getWireDtype());
    rewriter.replaceOp(op, {recv, layout.getRecvWeights(),
                            layout.getTokensPerExpert(), layout.getHandle()});
  }
};

/// Cached dispatch: the same rows along the existing layout.
struct LowerCachedDispatch : CollectivePattern<CachedDispatchOp> {
  using CollectivePattern::CollectivePattern;
  void lower(CachedDispatchOp op, Strategy strategy,
             PatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, emitDispatchRows(
                               rewriter, op.getLoc(), op.getX(), op.getHandle(),
                               strategy, op.getWireDtype()));
  }
};

/// Combine: per stage a summing permute -> exchange (reverse scope order),
/// then a summing permute into out[T, H].
struct LowerCombine : CollectivePattern<CombineOp> {
  using CollectivePattern::CollectivePattern;
  void lower(CombineOp op, Strategy strategy,
             PatternRewriter &rewriter) const override {
    auto type = cast<HandleType>(op.getHandle().getType());
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    auto combine = DirectionAttr::get(ctx, Direction::combine);
    UnitAttr weighted = op.getWeightedAttr();
    Value handle = op.getHandle();
    int64_t ranks = type.getRanks(), perNode = type.getRanksPerNode();
    Value rows = op.getY();
    for (int64_t stage = 0, e = getNumStages(strategy, ranks, perNode);
         stage < e; ++stage) {
      auto stageAttr = rewriter.getI64IntegerAttr(stage);
      auto scope = ScopeAttr::get(ctx, getStageScope(strategy, ranks, perNode,
                                                     Direction::combine, stage));
      Value send = PermuteOp::create(rewriter, loc, rows, Value(), handle,
                                     combine, stageAttr, weighted)
                       .getOut();
      rows = ExchangeOp::create(rewriter, loc, send, Value(), handle, combine,
                                stageAttr, scope)
                 .getRecv();
    }
    Value out = PermuteOp::create(rewriter, loc, rows, Value(), handle,
                                  combine, IntegerAttr(), weighted)
                    .getOut();
    if (out.getType() != op.getOut().getType())
      out = tensor::CastOp::create(rewriter, loc, op.getOut().getType(), out);
    rewriter.replaceOp(op, out);
  }
};

struct LowerCollectivesPass
    : public WithOptionErrors<
          mlir::moecomm::impl::MoECommLowerCollectivesBase<LowerCollectivesPass>> {
  using WithOptionErrors::WithOptionErrors;

  void runOnOperation() override {
    // The patterns only apply where the strategy is known; say where not
    // before rewriting anything.
    WalkResult unknown = getOperation().walk([&](Operation *op) {
      if (auto dispatch = dyn_cast<DispatchOp>(op)) {
        if (strategyOf(dispatch, strategy))
          return WalkResult::advance();
        dispatch.emitError()
            << "this dispatch has no strategy yet; run "
               "moecomm-select-strategy first (or moecomm-split-hierarchical, "
               "which does)";
        return WalkResult::interrupt();
      }
      auto combine = dyn_cast<CombineOp>(op);
      auto cached = dyn_cast<CachedDispatchOp>(op);
      if ((!combine || strategyOf(combine, strategy)) &&
          (!cached || strategyOf(cached, strategy)))
        return WalkResult::advance();
      op->emitError()
          << "cannot tell which strategy this handle was planned with (it "
             "does not come from a dispatch in this module); set strategy= "
             "or the handle type's strategy";
      return WalkResult::interrupt();
    });
    if (unknown.wasInterrupted())
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateLowerCollectivesPatterns(patterns, strategy);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace

void mlir::moecomm::populateLowerCollectivesPatterns(
    RewritePatternSet &patterns, Strategy fallback) {
  patterns.add<LowerDispatch, LowerCachedDispatch, LowerCombine>(
      patterns.getContext(), fallback);
}

//===- LowerTokenPermutes.cpp - framework-level row moves to loops -------===//
//
// `moecomm-lower-token-permutes` (Passes.td): moecomm.permute_tokens,
// unpermute_tokens, sort_chunks and unsort_chunks become scf loops over
// tensors with the semantics of their ODS descriptions, the inputs only the
// running code can check checked with moecomm_rt_check (RuntimeChecks.h).
// permute_tokens is a counting sort, as the JAX-style layer
// (test/lit/tools/moecomm-run/Inputs/graph-jax-ragged.mlir) writes it: MLIR
// has no sort.
//
//===----------------------------------------------------------------------===//

#include "Transforms/RuntimeChecks.h"
#include "Transforms/TensorLoopBuilder.h"
#include "Transforms/WeightedRows.h"
#include "moecomm/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"

using namespace mlir;
using namespace mlir::moecomm;

namespace mlir::moecomm {
#define GEN_PASS_DEF_MOECOMMLOWERTOKENPERMUTES
#include "moecomm/Transforms/Passes.h.inc"
} // namespace mlir::moecomm

namespace {

using arith::CmpIPredicate;

/// Emits the lowering of one op before it, with its checks.
class Lowering : public TensorLoopBuilder {
public:
  using TensorLoopBuilder::b;

  Lowering(Operation *op, PatternRewriter &rewriter, CheckTexts &texts)
      : TensorLoopBuilder(op, rewriter.getListener()),
        checks(b, op, op->getName().getStringRef(), texts) {}

  /// A tensor of `type` whose dynamic dimensions are `sizes` (index values,
  /// one per dynamic dimension, in order).
  Value empty(Type type, ValueRange sizes) {
    return tensor::EmptyOp::create(b, cast<RankedTensorType>(type), sizes);
  }
  /// The dynamic sizes of `type` taken from `dims` (index values, one per
  /// dimension).
  SmallVector<Value> dynamicSizes(Type type, ArrayRef<Value> dims) {
    SmallVector<Value> sizes;
    for (auto [d, size] :
         llvm::enumerate(cast<RankedTensorType>(type).getShape()))
      if (ShapedType::isDynamic(size))
        sizes.push_back(dims[d]);
    return sizes;
  }
  /// A tensor of `type` (dynamic sizes from `dims`) filled with zeros.
  Value zeros(Type type, ArrayRef<Value> dims) {
    Type element = getElementTypeOrSelf(type);
    Value zero = arith::ConstantOp::create(b, b.getZeroAttr(element));
    return linalg::FillOp::create(b, zero,
                                  empty(type, dynamicSizes(type, dims)))
        .getResult(0);
  }
  Value dim(Value tensor, int64_t d) {
    return tensor::DimOp::create(b, tensor, d);
  }
  Value add(Value lhs, Value rhs) { return arith::AddIOp::create(b, lhs, rhs); }
  Value select(Value cond, Value lhs, Value rhs) {
    return arith::SelectOp::create(b, cond, lhs, rhs);
  }
  /// Whether tensors `a` and `b` (named `aName`, `bName` in the check's
  /// text; `bTokens` is b's first dimension) have the same token count:
  /// checked at run time where the verifier could not compare them (one is
  /// dynamic), true otherwise.
  Value sameTokens(Value a, StringRef aName, Value b, StringRef bName,
                   Value bTokens) {
    if (!cast<RankedTensorType>(a.getType()).isDynamicDim(0) &&
        !cast<RankedTensorType>(b.getType()).isDynamicDim(0))
      return boolean(true);
    Value same = cmp(CmpIPredicate::eq, dim(a, 0), bTokens);
    checks.check(
        same,
        (aName + " and " + bName + " must have the same tokens ({} and {})")
            .str(),
        {i64(dim(a, 0)), i64(bTokens)});
    return same;
  }

  RuntimeChecks checks;
};

/// A pattern that replaces one `OpT` by the values `lower` emits before it
/// (with the module's check texts).
template <typename OpT> struct LoweringPattern : OpRewritePattern<OpT> {
  LoweringPattern(MLIRContext *context, CheckTexts &texts)
      : OpRewritePattern<OpT>(context), texts(texts) {}

  LogicalResult matchAndRewrite(OpT op, PatternRewriter &rewriter) const final {
    Lowering l(op, rewriter, texts);
    rewriter.replaceOp(op, lower(op, l));
    return success();
  }

  /// The op's results.
  virtual SmallVector<Value> lower(OpT op, Lowering &l) const = 0;

  CheckTexts &texts;
};

/// `t` with the element at `indices` replaced by `v`.
Value insertElement(ImplicitLocOpBuilder &b, Value v, Value t,
                    ValueRange indices) {
  return tensor::InsertOp::create(b, v, t, indices);
}

struct LowerPermuteTokens : LoweringPattern<PermuteTokensOp> {
  using LoweringPattern::LoweringPattern;

  SmallVector<Value> lower(PermuteTokensOp op, Lowering &l) const override {
    ImplicitLocOpBuilder &b = l.b;
    Value x = op.getX(), idx = op.getTopkIdx();
    auto idxType = cast<RankedTensorType>(idx.getType());
    int64_t experts = op.getExperts(), k = idxType.getDimSize(1);
    int64_t h = cast<RankedTensorType>(x.getType()).getDimSize(1);
    Value tokens = l.dim(idx, 0), c0 = l.index(0), cK = l.index(k);
    Value minus1 = l.i64Constant(-1), zero = l.i64Constant(0);
    Value cE = l.i64Constant(experts), one = l.i64Constant(1);

    // x's rows (and the weights, when they scale them) are read for idx's
    // tokens: shapes the verifier could not compare must match, or no slot
    // is kept.
    Value sameTokens = l.sameTokens(x, "x", idx, "topk_idx", tokens);
    Value weights = op.getTopkWeights();
    if (weights)
      sameTokens = l.andAll({sameTokens, l.sameTokens(weights, "weights", idx,
                                                      "topk_idx", tokens)});

    // 1. Check every id and count the rows of each expert; a slot's kept
    // expert (or -1) goes into slot_rows, which step 3 overwrites with its
    // row.
    Type slotsType = op.getSlotRows().getType();
    Value slots0 = l.empty(slotsType, l.dynamicSizes(slotsType, {tokens, cK}));
    Value counts0 = arith::ConstantOp::create(
        b, cast<TypedAttr>(DenseElementsAttr::get(
               RankedTensorType::get({experts}, b.getI64Type()), int64_t(0))));
    scf::ForOp histogram = l.forLoop(
        c0, tokens, ValueRange{counts0, slots0},
        [&](Value t, ValueRange token) {
          return llvm::to_vector_of<Value>(
              l.forLoop(c0, cK, token, [&](Value slot, ValueRange iter) {
                 Value e = l.element(idx, {t, slot});
                 Value inRange = l.andAll({l.cmp(CmpIPredicate::sge, e, minus1),
                                           l.cmp(CmpIPredicate::slt, e, cE)});
                 l.checks.check(
                     inRange,
                     "topk_idx[t][k] must be in [-1, E) (t = {}, k = {}: id "
                     "{}, E = {})",
                     {l.i64(t), l.i64(slot), e, cE});
                 // An earlier slot of the token with the same (kept) id.
                 Value seen =
                     l.forLoop(c0, slot, ValueRange{l.boolean(false)},
                               [&](Value before, ValueRange any) {
                                 Value same =
                                     l.cmp(CmpIPredicate::eq,
                                           l.element(idx, {t, before}), e);
                                 return SmallVector<Value>{
                                     arith::OrIOp::create(b, any[0], same)};
                               })
                         .getResult(0);
                 Value expert =
                     l.andAll({inRange, l.cmp(CmpIPredicate::sge, e, zero)});
                 Value once = arith::XOrIOp::create(
                     b, arith::AndIOp::create(b, seen, expert),
                     l.boolean(true));
                 l.checks.check(once,
                                "an expert id may appear once per token (t = "
                                "{}, k = {}: id {} repeated)",
                                {l.i64(t), l.i64(slot), e});
                 Value kept = l.andAll({expert, once, sameTokens});
                 Value slots = insertElement(b, l.select(kept, e, minus1),
                                             iter[1], {t, slot});
                 ValueRange counts = l.ifElse(
                     kept,
                     [&]() -> SmallVector<Value> {
                       Value at = l.indexOf(e);
                       Value n = l.element(iter[0], at);
                       return {insertElement(b, l.add(n, one), iter[0], at)};
                     },
                     [&]() -> SmallVector<Value> { return {iter[0]}; });
                 return SmallVector<Value>{counts[0], slots};
               }).getResults());
        });
    Value counts = histogram.getResult(0);

    // 2. Each expert's first row (exclusive prefix sum); the rows in all.
    Value starts0 = l.empty(counts0.getType(), ValueRange());
    scf::ForOp prefix =
        l.forLoop(c0, l.index(experts), ValueRange{zero, starts0},
                  [&](Value e, ValueRange iter) {
                    Value starts = insertElement(b, iter[0], iter[1], e);
                    return SmallVector<Value>{
                        l.add(iter[0], l.element(counts, e)), starts};
                  });

    // 3. Token by token, slot by slot: row t to its expert's next row.
    Value rows0 =
        l.empty(op.getRows().getType(), {l.indexOf(prefix.getResult(0))});
    Value c1 = l.index(1);
    scf::ForOp scatter = l.forLoop(
        c0, tokens,
        ValueRange{prefix.getResult(1), rows0, histogram.getResult(1)},
        [&](Value t, ValueRange token) {
          return llvm::to_vector_of<Value>(
              l.forLoop(c0, cK, token, [&](Value slot, ValueRange iter) {
                 Value e = l.element(iter[2], {t, slot});
                 return SmallVector<Value>(l.ifElse(
                     l.cmp(CmpIPredicate::sge, e, zero),
                     [&]() -> SmallVector<Value> {
                       Value at = l.indexOf(e);
                       Value row = l.element(iter[0], at);
                       Value next =
                           insertElement(b, l.add(row, one), iter[0], at);
                       Value copy = l.slice(x, t, c1, h);
                       if (weights)
                         copy = scaleRowsByWeights(
                             b, b.getLoc(), copy,
                             tensor::FromElementsOp::create(
                                 b, ValueRange{tensor::ExtractOp::create(
                                        b, weights, ValueRange{t, slot})}));
                       Value rows =
                           l.insert(copy, iter[1], l.indexOf(row), c1, h);
                       return {next, rows,
                               insertElement(b, row, iter[2], {t, slot})};
                     },
                     [&]() -> SmallVector<Value> {
                       return {iter[0], iter[1], iter[2]};
                     }));
               }).getResults());
        });
    return {scatter.getResult(1), counts, scatter.getResult(2)};
  }
};

struct LowerUnpermuteTokens : LoweringPattern<UnpermuteTokensOp> {
  using LoweringPattern::LoweringPattern;

  SmallVector<Value> lower(UnpermuteTokensOp op, Lowering &l) const override {
    ImplicitLocOpBuilder &b = l.b;
    Value rows = op.getRows(), slots = op.getSlotRows();
    Value weights = op.getTopkWeights();
    auto outType = cast<RankedTensorType>(op.getOut().getType());
    Type element = outType.getElementType();
    int64_t h = outType.getDimSize(1);
    int64_t k = cast<RankedTensorType>(slots.getType()).getDimSize(1);
    Value tokens = l.dim(slots, 0), c0 = l.index(0), cK = l.index(k);
    Value cH = l.index(h), minus1 = l.i64Constant(-1);
    Value zero = l.i64Constant(0), n = l.i64(l.dim(rows, 0));

    // Weights are read for slot_rows' tokens.
    Value sameTokens =
        weights ? l.sameTokens(weights, "weights", slots, "slot_rows", tokens)
                : l.boolean(true);
    Value sum0 = arith::ConstantOp::create(b, b.getF32FloatAttr(0.0));
    Value out0 = l.empty(outType, l.dynamicSizes(outType, {tokens, cH}));
    scf::ForOp perToken =
        l.forLoop(c0, tokens, ValueRange{out0}, [&](Value t, ValueRange token) {
          l.forLoop(c0, cK, ValueRange{}, [&](Value slot, ValueRange) {
            Value row = l.element(slots, {t, slot});
            l.checks.check(
                l.andAll({l.cmp(CmpIPredicate::sge, row, minus1),
                          l.cmp(CmpIPredicate::slt, row, n)}),
                "slot_rows[t][k] must be in [-1, R) (t = {}, k = {}: {}, "
                "R = {})",
                {l.i64(t), l.i64(slot), row, n});
            return SmallVector<Value>{};
          });
          return llvm::to_vector_of<Value>(
              l.forLoop(c0, cH, token, [&](Value col, ValueRange iter) {
                 // The kept slots' terms in slot order, in f32.
                 Value sum =
                     l.forLoop(
                          c0, cK, ValueRange{sum0},
                          [&](Value slot, ValueRange acc) {
                            Value row = l.element(slots, {t, slot});
                            Value kept =
                                l.andAll({l.cmp(CmpIPredicate::sge, row, zero),
                                          l.cmp(CmpIPredicate::slt, row, n),
                                          sameTokens});
                            return SmallVector<Value>(l.ifElse(
                                kept,
                                [&]() -> SmallVector<Value> {
                                  Value y = tensor::ExtractOp::create(
                                      b, rows, ValueRange{l.indexOf(row), col});
                                  if (!element.isF32())
                                    y = arith::ExtFOp::create(b, b.getF32Type(),
                                                              y);
                                  if (weights)
                                    y = arith::MulFOp::create(
                                        b,
                                        tensor::ExtractOp::create(
                                            b, weights, ValueRange{t, slot}),
                                        y);
                                  return {arith::AddFOp::create(b, acc[0], y)};
                                },
                                [&]() -> SmallVector<Value> {
                                  return {acc[0]};
                                }));
                          })
                         .getResult(0);
                 if (!element.isF32())
                   sum = arith::TruncFOp::create(b, element, sum);
                 return SmallVector<Value>{
                     insertElement(b, sum, iter[0], {t, col})};
               }).getResults());
        });
    return {perToken.getResult(0)};
  }
};

/// sort_chunks (`toExpertMajor`) and unsort_chunks: the rows of `in` moved
/// chunk by chunk between source-major and expert-major order, and the
/// counts' column sums; zero rows and sums when a count fails its check.
std::pair<Value, Value> moveChunks(Lowering &l, Value in, Value counts,
                                   Type outType, bool toExpertMajor) {
  ImplicitLocOpBuilder &b = l.b;
  auto countsType = cast<RankedTensorType>(counts.getType());
  int64_t experts = countsType.getDimSize(1);
  int64_t h = cast<RankedTensorType>(in.getType()).getDimSize(1);
  Value sources = l.dim(counts, 0), c0 = l.index(0), cL = l.index(experts);
  Value rowsIndex = l.dim(in, 0), rows = l.i64(rowsIndex);
  Value zero = l.i64Constant(0);

  // 1. Check the counts in source-major order, recording each chunk's
  // source-major offset and summing them per local expert; after a failed
  // count nothing more is counted.
  auto sumsType = RankedTensorType::get({experts}, b.getI64Type());
  Value sums0 = arith::ConstantOp::create(
      b, cast<TypedAttr>(DenseElementsAttr::get(sumsType, int64_t(0))));
  auto offsetsType =
      RankedTensorType::get({ShapedType::kDynamic, experts}, b.getI64Type());
  Value offsets0 = l.empty(offsetsType, {sources});
  scf::ForOp counted = l.forLoop(
      c0, sources, ValueRange{zero, l.boolean(true), sums0, offsets0},
      [&](Value s, ValueRange source) {
        return llvm::to_vector_of<Value>(
            l.forLoop(c0, cL, source, [&](Value e, ValueRange iter) {
               Value count = l.element(counts, {s, e});
               Value left = arith::SubIOp::create(b, rows, iter[0]);
               Value ok = l.andAll({l.cmp(CmpIPredicate::sge, count, zero),
                                    l.cmp(CmpIPredicate::sle, count, left)});
               l.checks.check(ok,
                              "counts[s][l] must be >= 0 and at most the rows "
                              "of in not yet counted (s = {}, l = {}: {}, {} "
                              "rows left)",
                              {l.i64(s), l.i64(e), count, left});
               Value valid = arith::AndIOp::create(b, iter[1], ok);
               Value taken = l.select(valid, count, zero);
               Value sum = l.add(l.element(iter[2], e), taken);
               return SmallVector<Value>{
                   l.add(iter[0], taken), valid,
                   insertElement(b, sum, iter[2], e),
                   insertElement(b, iter[0], iter[3], {s, e})};
             }).getResults());
      });
  Value total = counted.getResult(0), valid = counted.getResult(1);
  Value complete = l.cmp(CmpIPredicate::eq, total, rows);
  // A failed count was reported already.
  l.checks.check(
      arith::OrIOp::create(b, complete,
                           arith::XOrIOp::create(b, valid, l.boolean(true))),
      "counts must sum to the rows of in ({} counted, {} rows)", {total, rows});
  Value good = arith::AndIOp::create(b, valid, complete);

  // 2. Local expert by local expert, source by source: chunk (s, l) between
  // its source-major offset and the next expert-major row.
  SmallVector<Value> dims{rowsIndex, l.index(h)};
  ValueRange moved = l.ifElse(
      good,
      [&]() -> SmallVector<Value> {
        Value out0 = l.empty(outType, l.dynamicSizes(outType, dims));
        scf::ForOp perExpert = l.forLoop(
            c0, cL, ValueRange{zero, out0}, [&](Value e, ValueRange expert) {
              return llvm::to_vector_of<Value>(
                  l.forLoop(c0, sources, expert, [&](Value s, ValueRange iter) {
                     Value count = l.indexOf(l.element(counts, {s, e}));
                     Value sourceMajor =
                         l.indexOf(l.element(counted.getResult(3), {s, e}));
                     Value expertMajor = l.indexOf(iter[0]);
                     Value from = toExpertMajor ? sourceMajor : expertMajor;
                     Value to = toExpertMajor ? expertMajor : sourceMajor;
                     Value out = l.insert(l.slice(in, from, count, h), iter[1],
                                          to, count, h);
                     return SmallVector<Value>{l.add(iter[0], l.i64(count)),
                                               out};
                   }).getResults());
            });
        return {perExpert.getResult(1), counted.getResult(2)};
      },
      [&]() -> SmallVector<Value> {
        return {l.zeros(outType, dims), sums0};
      });
  return {moved[0], moved[1]};
}

struct LowerSortChunks : LoweringPattern<SortChunksOp> {
  using LoweringPattern::LoweringPattern;

  SmallVector<Value> lower(SortChunksOp op, Lowering &l) const override {
    auto [out, sums] =
        moveChunks(l, op.getIn(), op.getCounts(), op.getOut().getType(),
                   /*toExpertMajor=*/true);
    return {out, sums};
  }
};

struct LowerUnsortChunks : LoweringPattern<UnsortChunksOp> {
  using LoweringPattern::LoweringPattern;

  SmallVector<Value> lower(UnsortChunksOp op, Lowering &l) const override {
    return {moveChunks(l, op.getIn(), op.getCounts(), op.getOut().getType(),
                       /*toExpertMajor=*/false)
                .first};
  }
};

struct LowerTokenPermutesPass
    : public mlir::moecomm::impl::MoECommLowerTokenPermutesBase<
          LowerTokenPermutesPass> {
  void runOnOperation() override {
    CheckTexts texts(getOperation());
    RewritePatternSet patterns(&getContext());
    patterns.add<LowerPermuteTokens, LowerUnpermuteTokens, LowerSortChunks,
                 LowerUnsortChunks>(&getContext(), texts);
    // Only the four ops are rewritten: no folding or dead-code removal of
    // the rest of the graph.
    GreedyRewriteConfig config;
    config.enableFolding(false)
        .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled)
        .setStrictness(GreedyRewriteStrictness::ExistingOps);
    if (failed(
            applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};

} // namespace

//===- RaiseDispatch.cpp - per-expert exchange -> dispatch, combine ------===//
//
// `moecomm-raise-dispatch` (Passes.td): the per-expert exchange a framework
// writes (Megatron-Core's MoEAlltoAllTokenDispatcher, MaxText's sparse path:
// permute_tokens, ragged all_to_all, expert computation, all_to_all back,
// unpermute_tokens) becomes moecomm.dispatch / moecomm.combine, which the
// rest of the pipeline splits hierarchically. One rewrite pattern anchored on
// moecomm.permute_tokens; the chain it needs is matched from the IR alone,
// and a chain that does not qualify is left as it is with a remark saying
// which condition failed.
//
//===----------------------------------------------------------------------===//

#include "moecomm/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"

#include "llvm/ADT/STLExtras.h"

namespace mlir::moecomm {
#define GEN_PASS_DEF_MOECOMMRAISEDISPATCH
#include "moecomm/Transforms/Passes.h.inc"
} // namespace mlir::moecomm

using namespace mlir;
using namespace mlir::moecomm;

namespace {

/// The ops of one recognised per-expert exchange (the form in Passes.td).
/// `counts`, `sort` and `unsort` are set for the grouped form; `rowWise`
/// holds the row-wise form's expert ops (none for identity experts).
struct Chain {
  PermuteTokensOp permute;
  tensor::ExpandShapeOp groups;
  linalg::ReduceOp sums;
  tensor::CastOp sumsCast;
  AllToAllOp forward;
  AllToAllOp counts;
  SortChunksOp sort;
  UnsortChunksOp unsort;
  SmallVector<tensor::CastOp> countsCasts;
  SmallVector<Operation *> rowWise;
  AllToAllOp back;
  UnpermuteTokensOp unpermute;
  int64_t ranks = 0;
};

/// Why a chain is not raised: the op the remark goes to, and the reason
/// (naming the op).
struct Mismatch {
  Operation *at = nullptr;
  std::string why;
};

/// The matcher: fills a Chain or says which condition failed.
class ChainMatcher {
public:
  explicit ChainMatcher(PermuteTokensOp permute) { chain.permute = permute; }

  LogicalResult match();
  const Chain &getChain() const { return chain; }
  const Mismatch &getMismatch() const { return mismatch; }

private:
  LogicalResult fail(Operation *at, const Twine &why) {
    mismatch = {at, why.str()};
    return failure();
  }
  /// Fails at the first user of `v` not in `allowed`: `v` (`what`, of the
  /// chain) must not escape it.
  LogicalResult onlyUsedBy(Value v, StringRef what,
                           ArrayRef<Operation *> allowed);
  /// The user of `v` that is an `OpT` taking it as `operand(op)`, which must
  /// be its only user (`what`); null after a failure, at `at` saying
  /// `missing` when there is none.
  template <typename OpT>
  OpT soleUser(Value v, function_ref<Value(OpT)> operand, StringRef what,
               Operation *at, const Twine &missing);
  LogicalResult matchSendCounts();
  LogicalResult matchGrouped(SortChunksOp sort);
  LogicalResult matchRowWise();
  LogicalResult matchBack();
  LogicalResult checkPlacement();

  Chain chain;
  Mismatch mismatch;
};

std::string nameOf(Operation *op) {
  return ("'" + op->getName().getStringRef() + "'").str();
}

/// `v` itself, or the source of the tensor.cast defining it (`cast` is then
/// set to it).
Value skipCast(Value v, tensor::CastOp &cast) {
  cast = v.getDefiningOp<tensor::CastOp>();
  return cast ? cast.getSource() : v;
}

/// The first user of `v` that is an `OpT` taking `v` as `operand(op)`, if
/// any.
template <typename OpT> OpT userOf(Value v, function_ref<Value(OpT)> operand) {
  for (Operation *user : v.getUsers())
    if (auto op = dyn_cast<OpT>(user); op && operand(op) == v)
      return op;
  return {};
}

/// Whether `v` is a tensor of zeros: a zero splat constant or a linalg.fill
/// of 0.
bool isZeros(Value v) {
  if (matchPattern(v, m_Zero()))
    return true;
  auto fill = v.getDefiningOp<linalg::FillOp>();
  return fill && matchPattern(fill.value(), m_Zero());
}

/// Whether `v` is a constant tensor of `n` ones.
bool isOnes(Value v, int64_t n) {
  DenseIntElementsAttr attr;
  if (!matchPattern(v, m_Constant(&attr)) || attr.getNumElements() != n)
    return false;
  return llvm::all_of(attr.getValues<APInt>(),
                      [](const APInt &one) { return one.isOne(); });
}

/// Whether `reduce` sums its one input over dimension 1 with arith.addi,
/// starting from zeros.
bool isRowSum(linalg::ReduceOp reduce) {
  if (reduce.getInputs().size() != 1 || reduce.getDimensions().size() != 1 ||
      reduce.getDimensions()[0] != 1 || !isZeros(reduce.getInits()[0]))
    return false;
  Block &body = reduce.getCombiner().front();
  if (!llvm::hasSingleElement(body.without_terminator()))
    return false;
  auto add = dyn_cast<arith::AddIOp>(body.front());
  if (!add)
    return false;
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  Value in = body.getArgument(0), acc = body.getArgument(1);
  bool sumsArgs = (add.getLhs() == in && add.getRhs() == acc) ||
                  (add.getLhs() == acc && add.getRhs() == in);
  return sumsArgs && yield->getNumOperands() == 1 &&
         yield->getOperand(0) == add.getResult();
}

LogicalResult ChainMatcher::onlyUsedBy(Value v, StringRef what,
                                       ArrayRef<Operation *> allowed) {
  for (Operation *user : v.getUsers())
    if (!llvm::is_contained(allowed, user))
      return fail(user, nameOf(user) + " uses " + what +
                            " outside the per-expert exchange");
  return success();
}

template <typename OpT>
OpT ChainMatcher::soleUser(Value v, function_ref<Value(OpT)> operand,
                           StringRef what, Operation *at,
                           const Twine &missing) {
  OpT op = userOf<OpT>(v, operand);
  if (!op) {
    (void)fail(at, missing);
    return {};
  }
  if (failed(onlyUsedBy(v, what, {op})))
    return {};
  return op;
}

LogicalResult ChainMatcher::match() {
  PermuteTokensOp permute = chain.permute;
  Value rows = permute.getRows(), sizes = permute.getGroupSizes();

  // The group sizes, reshaped to [W, L] (E = W * L by the reshape's
  // verifier).
  auto groups = soleUser<tensor::ExpandShapeOp>(
      sizes, [](tensor::ExpandShapeOp op) { return op.getSrc(); },
      "the group sizes", permute,
      "the group sizes of 'moecomm.permute_tokens' are not reshaped to "
      "[W, L] by a 'tensor.expand_shape'");
  if (!groups)
    return failure();
  chain.groups = groups;
  RankedTensorType grid = groups.getResultType();
  // From the static [E], a 2-D reshape is static.
  if (grid.getRank() != 2)
    return fail(groups, "'tensor.expand_shape' must reshape the group sizes "
                        "of 'moecomm.permute_tokens' to [W, L]");
  chain.ranks = grid.getDimSize(0);

  // The forward exchange of the rows.
  chain.forward = soleUser<AllToAllOp>(
      rows, [](AllToAllOp op) { return op.getSend(); }, "the permuted rows",
      permute,
      "the rows of 'moecomm.permute_tokens' are not sent by a "
      "'moecomm.all_to_all'");
  if (!chain.forward || failed(checkPlacement()))
    return failure();
  if (chain.forward.getTopology().getRanks() != chain.ranks)
    return fail(chain.forward,
                "'moecomm.all_to_all' has " +
                    Twine(chain.forward.getTopology().getRanks()) +
                    " ranks but the group sizes are reshaped to [" +
                    Twine(chain.ranks) + ", " + Twine(grid.getDimSize(1)) +
                    "]");
  if (failed(matchSendCounts()))
    return failure();

  // The expert side: grouped (sort_chunks) or row-wise.
  Value recv = chain.forward.getRecv();
  auto sort =
      userOf<SortChunksOp>(recv, [](SortChunksOp op) { return op.getIn(); });
  if (failed(sort ? matchGrouped(sort) : matchRowWise()) || failed(matchBack()))
    return failure();

  // Everything in one block, so that the dispatch and the combine take the
  // places of the exchanges.
  SmallVector<Operation *> ops = {chain.groups, chain.sums,     chain.forward,
                                  chain.counts, chain.sort,     chain.unsort,
                                  chain.back,   chain.unpermute};
  llvm::append_range(ops, chain.rowWise);
  for (Operation *op : ops)
    if (op && op->getBlock() != permute->getBlock())
      return fail(op, nameOf(op) + " is not in the block of the "
                                   "'moecomm.permute_tokens'");

  // moecomm.dispatch's verifier wants one static token count in x, the ids
  // and the weights; the per-expert ops check a difference only at run
  // time when one side is dynamic.
  if (Value weights = chain.unpermute.getTopkWeights()) {
    int64_t tokens = ShapedType::kDynamic;
    Value tokenTensors[] = {permute.getX(), permute.getTopkIdx(), weights};
    for (Value v : tokenTensors) {
      int64_t t = cast<RankedTensorType>(v.getType()).getDimSize(0);
      if (ShapedType::isDynamic(t))
        continue;
      if (!ShapedType::isDynamic(tokens) && t != tokens)
        return fail(chain.unpermute,
                    "the tokens of 'moecomm.permute_tokens' and the weights "
                    "of 'moecomm.unpermute_tokens' have different static "
                    "counts (" +
                        Twine(tokens) + " and " + Twine(t) +
                        "): moecomm.dispatch needs one");
      tokens = t;
    }
  }

  // The dispatch goes where the forward exchange is: the routing weights
  // must be known there.
  if (Value weights = chain.unpermute.getTopkWeights();
      weights && !DominanceInfo(permute->getParentOp())
                      .properlyDominates(weights, chain.forward))
    return fail(chain.unpermute,
                "the weights of 'moecomm.unpermute_tokens' are not defined "
                "before the forward 'moecomm.all_to_all', where "
                "moecomm.dispatch goes");
  return success();
}

LogicalResult ChainMatcher::checkPlacement() {
  if (chain.forward.getTopology().getPlacement())
    return fail(chain.forward, "'moecomm.all_to_all' has an expert placement "
                               "(a per-expert exchange has none)");
  return success();
}

LogicalResult ChainMatcher::matchSendCounts() {
  AllToAllOp forward = chain.forward;
  Value sendCounts = skipCast(forward.getSendCounts(), chain.sumsCast);
  auto sums = sendCounts.getDefiningOp<linalg::ReduceOp>();
  if (!sums || sums.getInputs().size() != 1 ||
      sums.getInputs()[0] != chain.groups.getResult() || !isRowSum(sums))
    return fail(forward,
                "the send counts of 'moecomm.all_to_all' are not the per-rank "
                "sums of the group sizes (linalg.reduce of the [W, L] "
                "tensor.expand_shape over dimension 1 with arith.addi, from "
                "zeros)");
  chain.sums = sums;
  if (chain.sumsCast &&
      failed(onlyUsedBy(chain.sumsCast, "the send counts", {forward})))
    return failure();
  Operation *countsUser =
      chain.sumsCast ? chain.sumsCast.getOperation() : forward.getOperation();
  return onlyUsedBy(sums.getResult(0), "the send counts", {countsUser});
}

LogicalResult ChainMatcher::matchGrouped(SortChunksOp sort) {
  chain.sort = sort;
  Value recv = chain.forward.getRecv();
  if (failed(onlyUsedBy(recv, "the received rows", {sort})))
    return failure();

  // The counts matrix: the all_to_all of the [W, L] group sizes, one row to
  // every rank.
  tensor::CastOp cast;
  auto counts = skipCast(sort.getCounts(), cast).getDefiningOp<AllToAllOp>();
  if (!counts || counts.getSend() != chain.groups.getResult())
    return fail(sort, "the counts of 'moecomm.sort_chunks' are not the "
                      "'moecomm.all_to_all' of the [W, L] group sizes");
  chain.counts = counts;
  if (!isOnes(counts.getSendCounts(), chain.ranks))
    return fail(counts, "'moecomm.all_to_all' of the group sizes must send "
                        "one row to every rank (a constant of " +
                            Twine(chain.ranks) + " ones as send counts)");
  if (counts.getTopology() != chain.forward.getTopology())
    return fail(counts, "'moecomm.all_to_all' of the group sizes has another "
                        "topology than the forward exchange");
  if (failed(onlyUsedBy(chain.groups.getResult(), "the [W, L] group sizes",
                        {chain.sums, counts})) ||
      failed(onlyUsedBy(counts.getRecvCounts(),
                        "the receive counts of the counts exchange", {})))
    return failure();

  // Its users: the sort, the unsort, and casts feeding only those.
  Value matrix = counts.getRecv();
  auto takeUser = [&](Operation *user) -> LogicalResult {
    auto unsort = dyn_cast<UnsortChunksOp>(user);
    if (user == sort || (unsort && !chain.unsort)) {
      if (unsort)
        chain.unsort = unsort;
      return success();
    }
    return fail(user, nameOf(user) + " uses the counts matrix outside the "
                                     "per-expert exchange");
  };
  for (Operation *user : matrix.getUsers()) {
    if (auto c = dyn_cast<tensor::CastOp>(user)) {
      chain.countsCasts.push_back(c);
      for (Operation *castUser : c->getUsers())
        if (failed(takeUser(castUser)))
          return failure();
      continue;
    }
    if (failed(takeUser(user)))
      return failure();
  }
  if (!chain.unsort)
    return fail(sort, "the counts matrix of 'moecomm.sort_chunks' is not "
                      "used by a 'moecomm.unsort_chunks'");

  // The unsorted rows go back.
  Value sorted = chain.unsort.getOut();
  chain.back = soleUser<AllToAllOp>(
      sorted, [](AllToAllOp op) { return op.getSend(); },
      "the unsorted expert outputs", chain.unsort,
      "the rows of 'moecomm.unsort_chunks' are not sent back by a "
      "'moecomm.all_to_all'");
  return success(chain.back != nullptr);
}

LogicalResult ChainMatcher::matchRowWise() {
  if (failed(onlyUsedBy(chain.groups.getResult(), "the [W, L] group sizes",
                        {chain.sums})))
    return failure();
  // The received rows and what elementwise ops make of them, up to the one
  // all_to_all that sends them back: each row's result is then the same
  // whatever the rows' order.
  SmallVector<Value> rows = {chain.forward.getRecv()};
  for (size_t i = 0; i < rows.size(); ++i) {
    for (Operation *user : rows[i].getUsers()) {
      if (llvm::is_contained(chain.rowWise, user))
        continue;
      if (auto back = dyn_cast<AllToAllOp>(user);
          back && back.getSend() == rows[i] && !chain.back) {
        chain.back = back;
        continue;
      }
      bool elementwise = user->hasTrait<OpTrait::Elementwise>() &&
                         user->getNumResults() == 1 &&
                         user->getNumRegions() == 0 &&
                         llvm::all_of(user->getOperands(), [&](Value operand) {
                           return llvm::is_contained(rows, operand);
                         });
      if (!elementwise)
        return fail(user,
                    nameOf(user) +
                        " uses the received rows but is neither the exchange "
                        "back nor an elementwise op of received rows only");
      chain.rowWise.push_back(user);
      rows.push_back(user->getResult(0));
    }
  }
  if (!chain.back)
    return fail(chain.forward, "the received rows of 'moecomm.all_to_all' "
                               "are not sent back by a 'moecomm.all_to_all'");
  return success();
}

LogicalResult ChainMatcher::matchBack() {
  AllToAllOp forward = chain.forward, back = chain.back;
  if (back.getSendCounts() != forward.getRecvCounts())
    return fail(back, "the exchange back ('moecomm.all_to_all') does not send "
                      "with the forward exchange's receive counts");
  if (back.getTopology() != forward.getTopology())
    return fail(back, "the exchange back ('moecomm.all_to_all') has another "
                      "topology than the forward exchange");
  if (failed(
          onlyUsedBy(forward.getRecvCounts(), "the receive counts", {back})) ||
      failed(onlyUsedBy(back.getRecvCounts(),
                        "the receive counts of the exchange back", {})))
    return failure();

  Value home = back.getRecv();
  auto unpermute = soleUser<UnpermuteTokensOp>(
      home, [](UnpermuteTokensOp op) { return op.getRows(); },
      "the rows of the exchange back", back,
      "the rows of the exchange back are not brought home by a "
      "'moecomm.unpermute_tokens'");
  if (!unpermute)
    return failure();
  chain.unpermute = unpermute;
  Value slots = chain.permute.getSlotRows();
  if (unpermute.getSlotRows() != slots)
    return fail(unpermute, "'moecomm.unpermute_tokens' takes other slot rows "
                           "than the 'moecomm.permute_tokens' of its rows");
  if (failed(onlyUsedBy(slots, "the slot rows", {unpermute})))
    return failure();

  // The combine's rows must have the tokens' hidden size.
  int64_t hidden = chain.permute.getX().getType().getDimSize(1);
  int64_t outHidden = back.getSend().getType().getDimSize(1);
  if (outHidden != hidden)
    return fail(back, "the expert outputs have " + Twine(outHidden) +
                          " columns, the tokens " + Twine(hidden) +
                          ": moecomm.combine needs the tokens' hidden size");
  return success();
}

/// All-ones routing weights [T, K] for an unweighted unpermute_tokens: the
/// dispatch needs weights, the unweighted combine ignores them.
Value onesLike(PatternRewriter &rewriter, Location loc, Value topkIdx) {
  Value empty = tensor::EmptyOp::create(
      rewriter, loc, tensor::getMixedSizes(rewriter, loc, topkIdx),
      rewriter.getF32Type());
  Value one =
      arith::ConstantOp::create(rewriter, loc, rewriter.getF32FloatAttr(1.0f));
  return linalg::FillOp::create(rewriter, loc, ValueRange{one},
                                ValueRange{empty})
      .getResult(0);
}

/// permute_tokens ... unpermute_tokens  ==>  dispatch ... combine.
struct RaiseDispatchChain : OpRewritePattern<PermuteTokensOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PermuteTokensOp permute,
                                PatternRewriter &rewriter) const override {
    ChainMatcher matcher(permute);
    if (failed(matcher.match()))
      return rewriter.notifyMatchFailure(permute, matcher.getMismatch().why);
    Chain c = matcher.getChain();
    MLIRContext *ctx = getContext();

    // The dispatch, where the forward exchange was.
    rewriter.setInsertionPoint(c.forward);
    Location loc = FusedLoc::get(ctx, {permute.getLoc(), c.forward.getLoc()});
    Value weights = c.unpermute.getTopkWeights();
    if (!weights)
      weights = onesLike(rewriter, loc, permute.getTopkIdx());
    TopologyAttr exchange = c.forward.getTopology();
    auto topology =
        TopologyAttr::get(ctx, exchange.getRanks(), exchange.getRanksPerNode(),
                          permute.getExperts());
    auto dispatch = DispatchOp::create(
        rewriter, loc, permute.getX(), permute.getTopkIdx(), weights, topology,
        WireDtypeAttr(), StrategyAttr(), IntegerAttr(), IntegerAttr());

    // Its rows are sort_chunks' (the same expert-major order), or the
    // row-wise experts read them.
    if (c.sort)
      rewriter.replaceOp(c.sort, ValueRange{dispatch.getRecv(),
                                            dispatch.getTokensPerExpert()});
    else
      rewriter.replaceAllUsesWith(c.forward.getRecv(), dispatch.getRecv());

    // The combine, where the exchange back was.
    rewriter.setInsertionPoint(c.back);
    Value expertRows = c.unsort ? c.unsort.getIn() : c.back.getSend();
    auto combine = CombineOp::create(
        rewriter, FusedLoc::get(ctx, {c.back.getLoc(), c.unpermute.getLoc()}),
        c.unpermute.getOut().getType(), expertRows, dispatch.getHandle(),
        c.unpermute.getTopkWeights() ? rewriter.getUnitAttr() : UnitAttr());
    rewriter.replaceOp(c.unpermute, combine.getOut());

    // The rest of the chain, users first.
    SmallVector<Operation *> dead = {c.back, c.unsort};
    llvm::append_range(dead, c.countsCasts);
    dead.append({c.counts, c.forward, c.sumsCast, c.sums, c.groups, permute});
    for (Operation *op : dead)
      if (op)
        rewriter.eraseOp(op);
    return success();
  }
};

struct RaiseDispatchPass
    : public mlir::moecomm::impl::MoECommRaiseDispatchBase<RaiseDispatchPass> {
  void runOnOperation() override {
    SmallVector<Operation *> permutes;
    getOperation().walk([&](PermuteTokensOp op) { permutes.push_back(op); });
    if (permutes.empty())
      return;
    RewritePatternSet patterns(&getContext());
    populateRaiseDispatchPatterns(patterns);
    // Only the raise: the driver starts from the permute_tokens and neither
    // folds nor simplifies the rest of the function; what a raise leaves
    // unused (the constants of the counts) goes.
    GreedyRewriteConfig config;
    config.enableFolding(false)
        .enableConstantCSE(false)
        .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyOpPatternsGreedily(permutes, std::move(patterns), config)))
      return signalPassFailure();
    // One remark per chain left, once the pattern has done all it can (the
    // driver may try a chain more than once).
    getOperation().walk([](PermuteTokensOp permute) {
      ChainMatcher matcher(permute);
      if (failed(matcher.match()))
        matcher.getMismatch().at->emitRemark()
            << "moecomm-raise-dispatch: not raised: "
            << matcher.getMismatch().why;
    });
  }
};

} // namespace

void mlir::moecomm::populateRaiseDispatchPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseDispatchChain>(patterns.getContext());
}

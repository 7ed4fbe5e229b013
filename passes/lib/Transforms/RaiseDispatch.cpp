//===- RaiseDispatch.cpp - per-expert exchange -> dispatch, combine ------===//
//
// `moecomm-raise-dispatch` (Passes.td): the per-expert exchange a framework
// writes (Megatron-Core's MoEAlltoAllTokenDispatcher, MaxText's sparse path:
// permute_tokens, ragged all_to_all, expert computation, all_to_all back,
// unpermute_tokens) becomes moecomm.dispatch / moecomm.combine, which the
// rest of the pipeline splits hierarchically; its backward (the weights
// applied at permute_tokens) becomes moecomm.cached_dispatch along the
// forward's layout and an unweighted combine. One rewrite pattern anchored
// on moecomm.permute_tokens; the chain it needs is matched from the IR
// alone, and a chain that does not qualify is left as it is with a remark
// saying which condition failed.
//
//===----------------------------------------------------------------------===//

#include "Transforms/ContiguousRaggedExchange.h"
#include "Transforms/JaxRaggedAllToAll.h"
#include "Transforms/WeightedRows.h"
#include "moecomm/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/RegionUtils.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::moecomm {
#define GEN_PASS_DEF_MOECOMMRAISEDISPATCH
#include "moecomm/Transforms/Passes.h.inc"
} // namespace mlir::moecomm

using namespace mlir;
using namespace mlir::moecomm;

namespace {

/// One exchange of the rows: a moecomm.all_to_all, or JAX's ragged
/// all-to-all call (isJaxRaggedAllToAll), whose receive counts are its
/// recv_sizes operand.
class RowExchange {
public:
  RowExchange() = default;
  /// `user` as an exchange sending `rows`, if it is one.
  static RowExchange sending(Operation *user, Value rows) {
    RowExchange x;
    if (auto a2a = dyn_cast<AllToAllOp>(user); a2a && a2a.getSend() == rows)
      x.op = user;
    else if (isJaxRaggedAllToAll(user) && user->getNumOperands() == 6 &&
             user->getNumResults() == 1 &&
             raggedOperand(user, RaggedOperand::operand) == rows)
      x.op = user;
    return x;
  }
  explicit operator bool() const { return op != nullptr; }
  Operation *getOperation() const { return op; }
  AllToAllOp getAllToAll() const { return dyn_cast_if_present<AllToAllOp>(op); }
  bool isRagged() const { return op && !getAllToAll(); }
  Value send() const { return op->getOperand(0); }
  Value sendCounts() const {
    AllToAllOp a2a = getAllToAll();
    return a2a ? a2a.getSendCounts()
               : raggedOperand(op, RaggedOperand::sendSizes);
  }
  Value recv() const { return op->getResult(0); }
  Value recvCounts() const {
    AllToAllOp a2a = getAllToAll();
    return a2a ? a2a.getRecvCounts()
               : raggedOperand(op, RaggedOperand::recvSizes);
  }
  /// What the op is called in remarks.
  std::string name() const {
    return isRagged() ? "'stablehlo.custom_call' @ragged_all_to_all"
                      : "'moecomm.all_to_all'";
  }

private:
  Operation *op = nullptr;
};

/// The ops of one recognised per-expert exchange (the form in Passes.td).
/// `counts`, `sort` and `unsort` are set for the grouped form and whenever
/// an exchange is ragged (its recv_sizes come from the counts matrix);
/// `rowWise` holds the row-wise form's expert ops (none for identity
/// experts). `topology` is the exchanges'. `weights` are the routing
/// weights: unpermute_tokens' in a forward exchange, permute_tokens' in a
/// backward one (`backward`), none in an unweighted forward. `layout` is, in
/// a backward exchange, the dispatch of the same routing whose layout it
/// reuses (the forward's), if there is one.
struct Chain {
  PermuteTokensOp permute;
  tensor::ExpandShapeOp groups;
  linalg::ReduceOp sums;
  RowExchange forward;
  AllToAllOp counts;
  SortChunksOp sort;
  UnsortChunksOp unsort;
  SmallVector<Operation *> rowWise;
  RowExchange back;
  UnpermuteTokensOp unpermute;
  TopologyAttr topology;
  int64_t ranks = 0;
  Value weights;
  bool backward = false;
  DispatchOp layout;
  /// Without a layout: why a dispatch of the same ids was not taken.
  std::string noLayout;
  /// What the raise erases: the chain's ops and what computes only their
  /// operands (the counts, the ragged exchanges' offsets and their
  /// exchanges), each once it is unused.
  llvm::SetVector<Operation *> erased;
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
  /// The exchange sending `v`, which must be its only user (`what`); empty
  /// after a failure, at `at` saying `missing` when there is none.
  RowExchange soleExchange(Value v, StringRef what, Operation *at,
                           const Twine &missing);
  LogicalResult matchTopology();
  /// For a ragged exchange: the counts matrix its recv_sizes are the
  /// per-rank sums of (chain.counts), and the exchanges' topology.
  LogicalResult matchRaggedCounts();
  LogicalResult checkContiguous(RowExchange x);
  /// Fills chain.erased; fails when the permute_tokens would stay.
  LogicalResult collectErased();
  LogicalResult matchSendCounts();
  LogicalResult matchGrouped(SortChunksOp sort);
  LogicalResult matchRowWise();
  LogicalResult matchBack();
  /// Sets chain.weights and chain.backward from the ends of the chain.
  LogicalResult matchWeights();
  /// For a backward exchange: sets chain.layout to a dispatch whose layout
  /// it may reuse, if there is one (`dominance`: of the chain's function).
  void findLayout(DominanceInfo &dominance);
  /// Takes `counts` as the chain's counts exchange (the all_to_all of the
  /// [W, L] group sizes), which must send one row to every rank.
  LogicalResult takeCounts(AllToAllOp counts);

  Chain chain;
  Mismatch mismatch;
};

std::string nameOf(Operation *op) {
  return ("'" + op->getName().getStringRef() + "'").str();
}

/// "LINE:COL" of a file location, "?" otherwise (remarks point at ops of
/// the same file).
std::string lineColOf(Location loc) {
  auto at = dyn_cast<FileLineColLoc>(loc);
  return at ? (Twine(at.getLine()) + ":" + Twine(at.getColumn())).str() : "?";
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

RowExchange ChainMatcher::soleExchange(Value v, StringRef what, Operation *at,
                                       const Twine &missing) {
  for (Operation *user : v.getUsers())
    if (RowExchange x = RowExchange::sending(user, v)) {
      if (failed(onlyUsedBy(v, what, {user})))
        return {};
      return x;
    }
  (void)fail(at, missing);
  return {};
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
  chain.forward =
      soleExchange(rows, "the permuted rows", permute,
                   "the rows of 'moecomm.permute_tokens' are not sent by a "
                   "'moecomm.all_to_all' or JAX's ragged all-to-all");
  if (!chain.forward || failed(matchTopology()))
    return failure();
  if (chain.topology.getRanks() != chain.ranks)
    return fail(
        chain.forward.getOperation(),
        chain.forward.name() + " has " + Twine(chain.topology.getRanks()) +
            " ranks but the group sizes are reshaped to [" +
            Twine(chain.ranks) + ", " + Twine(grid.getDimSize(1)) + "]");
  if (failed(matchSendCounts()) ||
      (chain.forward.isRagged() && failed(checkContiguous(chain.forward))))
    return failure();

  // The expert side: grouped (sort_chunks) or row-wise.
  Value recv = chain.forward.recv();
  auto sort =
      userOf<SortChunksOp>(recv, [](SortChunksOp op) { return op.getIn(); });
  if (failed(sort ? matchGrouped(sort) : matchRowWise()) ||
      failed(matchBack()) || failed(matchWeights()))
    return failure();

  // Everything in one block, so that the dispatch and the combine take the
  // places of the exchanges.
  SmallVector<Operation *> ops = {chain.groups,
                                  chain.sums,
                                  chain.forward.getOperation(),
                                  chain.counts,
                                  chain.sort,
                                  chain.unsort,
                                  chain.back.getOperation(),
                                  chain.unpermute};
  llvm::append_range(ops, chain.rowWise);
  for (Operation *op : ops)
    if (op && op->getBlock() != permute->getBlock())
      return fail(op, nameOf(op) + " is not in the block of the "
                                   "'moecomm.permute_tokens'");

  // moecomm.dispatch's verifier wants one static token count in x, the ids
  // and the weights; the per-expert ops check a difference only at run
  // time when one side is dynamic.
  Operation *weighing = chain.backward ? chain.permute.getOperation()
                                       : chain.unpermute.getOperation();
  if (Value weights = chain.weights) {
    int64_t tokens = ShapedType::kDynamic;
    Value tokenTensors[] = {permute.getX(), permute.getTopkIdx(), weights};
    for (Value v : tokenTensors) {
      int64_t t = cast<RankedTensorType>(v.getType()).getDimSize(0);
      if (ShapedType::isDynamic(t))
        continue;
      if (!ShapedType::isDynamic(tokens) && t != tokens)
        return fail(weighing, "the tokens of 'moecomm.permute_tokens' and "
                              "the weights of " +
                                  nameOf(weighing) +
                                  " have different static counts (" +
                                  Twine(tokens) + " and " + Twine(t) +
                                  "): moecomm.dispatch needs one");
      tokens = t;
    }
  }

  // The dispatch goes where the forward exchange is: the routing weights
  // must be known there.
  DominanceInfo dominance(permute->getParentOp());
  if (chain.weights &&
      !dominance.properlyDominates(chain.weights, chain.forward.getOperation()))
    return fail(weighing, "the weights of " + nameOf(weighing) +
                              " are not defined before the forward " +
                              chain.forward.name() +
                              ", where moecomm.dispatch goes");
  if (chain.backward)
    findLayout(dominance);
  return collectErased();
}

LogicalResult ChainMatcher::matchWeights() {
  Value before = chain.permute.getTopkWeights(),
        after = chain.unpermute.getTopkWeights();
  if (before && after)
    return fail(chain.unpermute,
                "both 'moecomm.permute_tokens' and 'moecomm.unpermute_tokens' "
                "take weights: a forward exchange weighs the rows that come "
                "home, a backward one those it sends");
  chain.weights = before ? before : after;
  chain.backward = static_cast<bool>(before);
  return success();
}

void ChainMatcher::findLayout(DominanceInfo &dominance) {
  // The forward's dispatch (raised before the backward, see the pass): same
  // ids, weights and ranks, no expert placement, no capacity (it would drop
  // rows the per-expert exchange sends) and no align (padding rows are not
  // in sort_chunks' order); its rows have the same hidden size and no other
  // static token count (cached_dispatch's verifier), and it is computed
  // before the exchange it replaces. Why the first dispatch of the same ids
  // in program order does not qualify goes into chain.noLayout.
  PermuteTokensOp permute = chain.permute;
  auto sameTokens = [](int64_t a, int64_t b) {
    return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
  };
  Operation *firstRejected = nullptr;
  for (Operation *user : permute.getTopkIdx().getUsers()) {
    auto dispatch = dyn_cast<DispatchOp>(user);
    if (!dispatch || dispatch.getTopkIdx() != permute.getTopkIdx())
      continue;
    TopologyAttr topology = dispatch.getTopology();
    const char *why =
        dispatch.getTopkWeights() != chain.weights ? "takes other weights"
        : topology.getRanks() != chain.topology.getRanks() ||
                topology.getRanksPerNode() !=
                    chain.topology.getRanksPerNode() ||
                topology.getExperts() != int64_t(permute.getExperts())
            ? "has another topology"
        : topology.getPlacement() ? "has an expert placement"
        : dispatch.getCapacity()  ? "has a capacity"
        : dispatch.getAlign()     ? "has an align"
        : dispatch.getX().getType().getDimSize(1) !=
                permute.getX().getType().getDimSize(1)
            ? "has another hidden size"
        : !sameTokens(dispatch.getX().getType().getDimSize(0),
                      permute.getX().getType().getDimSize(0))
            ? "has another static token count"
        : !dominance.properlyDominates(dispatch.getOperation(),
                                       chain.forward.getOperation())
            ? "does not come before the exchange"
            : nullptr;
    if (!why) {
      chain.layout = dispatch;
      return;
    }
    if (!firstRejected || (user->getBlock() == firstRejected->getBlock() &&
                           user->isBeforeInBlock(firstRejected))) {
      firstRejected = user;
      chain.noLayout = std::string("the 'moecomm.dispatch' of its ids at ") +
                       lineColOf(user->getLoc()) + " " + why;
    }
  }
}

/// Whether the raise may erase `op` once its results are unused: it has no
/// effects, or it is a moecomm.all_to_all (a collective every rank stops
/// calling alike).
bool erasable(Operation *op) {
  return isa<AllToAllOp>(op) || isMemoryEffectFree(op);
}

/// Whether `user` is one of `ops` or inside one.
bool within(Operation *user, const llvm::SetVector<Operation *> &ops) {
  for (Operation *op = user; op; op = op->getParentOp())
    if (ops.contains(op))
      return true;
  return false;
}

LogicalResult ChainMatcher::collectErased() {
  llvm::SetVector<Operation *> &dead = chain.erased;
  Operation *chainOps[] = {chain.unpermute, chain.back.getOperation(),
                           chain.unsort, chain.sort,
                           chain.forward.getOperation()};
  for (Operation *op : chainOps)
    if (op)
      dead.insert(op);
  // What the dispatch and the combine read (the tokens, the ids, the
  // weights, the expert outputs), and what computes it up to the chain's
  // ops, whose results the dispatch replaces: it stays.
  Value expertRows =
      chain.unsort ? chain.unsort.getIn() : chain.back.send();
  SmallVector<Value> kept = {chain.permute.getX(), chain.permute.getTopkIdx(),
                             expertRows};
  if (chain.weights)
    kept.push_back(chain.weights);
  llvm::SetVector<Operation *> live;
  auto readsOf = [](Operation *op) {
    llvm::SetVector<Value> reads(op->operand_begin(), op->operand_end());
    for (Region &region : op->getRegions())
      getUsedValuesDefinedAbove(region, reads);
    return reads;
  };
  for (size_t i = 0; i < kept.size(); ++i)
    if (Operation *def = kept[i].getDefiningOp();
        def && !dead.contains(def) && live.insert(def))
      llvm::append_range(kept, readsOf(def));
  // What the chain's ops read, and what that reads (also inside regions,
  // as the scans read the sizes), that the raise may erase.
  llvm::SetVector<Operation *> feeders;
  SmallVector<Operation *> worklist(dead.begin(), dead.end());
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    for (Value v : readsOf(op))
      if (Operation *def = v.getDefiningOp();
          def && !dead.contains(def) && !live.contains(def) &&
          erasable(def) && feeders.insert(def))
        worklist.push_back(def);
  }
  // Dead once every user is.
  for (bool grew = true; grew;) {
    grew = false;
    for (Operation *op : feeders)
      if (!dead.contains(op) &&
          llvm::all_of(op->getUsers(),
                       [&](Operation *user) { return within(user, dead); })) {
        dead.insert(op);
        grew = true;
      }
  }
  if (dead.contains(chain.permute))
    return success();
  // Name the op that keeps it. What is computed from the permute_tokens'
  // results, short of the chain's ops, in the order reached:
  Block *block = chain.permute->getBlock();
  llvm::SetVector<Operation *> fromSizes;
  SmallVector<Operation *> reached = {chain.permute};
  for (size_t i = 0; i < reached.size(); ++i)
    for (Operation *user : reached[i]->getUsers()) {
      if (within(user, dead))
        continue;
      Operation *top = block->findAncestorOpInBlock(*user);
      if (!top)
        return fail(user, nameOf(user) + " uses what the group sizes of "
                                         "'moecomm.permute_tokens' compute "
                                         "outside its block");
      if (fromSizes.insert(top))
        reached.push_back(top);
    }
  // What the dispatch or the combine reads and depends on it, nearest to
  // what they read; else the first op outside the exchange.
  for (Operation *op : live)
    if (fromSizes.contains(op))
      return fail(op, nameOf(op) +
                          " depends on what the group sizes of "
                          "'moecomm.permute_tokens' compute, and the "
                          "dispatch or the combine would read it");
  for (Operation *op : fromSizes)
    if (!feeders.contains(op))
      return fail(op, nameOf(op) + " uses what the group sizes of "
                                   "'moecomm.permute_tokens' compute outside "
                                   "the per-expert exchange");
  return fail(chain.permute, "'moecomm.permute_tokens' would stay after the "
                             "raise");
}

LogicalResult ChainMatcher::matchTopology() {
  if (AllToAllOp a2a = chain.forward.getAllToAll())
    chain.topology = a2a.getTopology();
  else if (failed(matchRaggedCounts()))
    return failure();
  if (chain.topology.getPlacement())
    return fail(chain.forward.getOperation(),
                "'moecomm.all_to_all' has an expert placement (a per-expert "
                "exchange has none)");
  return success();
}

LogicalResult ChainMatcher::matchRaggedCounts() {
  Operation *call = chain.forward.getOperation();
  tensor::CastOp cast;
  auto sums = skipCast(chain.forward.recvCounts(), cast)
                  .getDefiningOp<linalg::ReduceOp>();
  Value matrix = sums && sums.getInputs().size() == 1 && isRowSum(sums)
                     ? skipCast(sums.getInputs()[0], cast)
                     : Value();
  auto counts = matrix ? matrix.getDefiningOp<AllToAllOp>() : AllToAllOp();
  if (!counts || counts.getRecv() != matrix ||
      counts.getSend() != chain.groups.getResult())
    return fail(call, chain.forward.name() +
                          ": its recv_sizes are not the per-rank sums of the "
                          "'moecomm.all_to_all' of the [W, L] group sizes "
                          "(what each peer sends here)");
  if (failed(takeCounts(counts)))
    return failure();
  chain.topology = counts.getTopology();
  return success();
}

LogicalResult ChainMatcher::takeCounts(AllToAllOp counts) {
  if (counts.getTopology().getRanks() != chain.ranks ||
      !sendsOneRowPerRank(counts))
    return fail(counts, "'moecomm.all_to_all' of the group sizes must send "
                        "one row to every rank (a constant of " +
                            Twine(chain.ranks) + " ones as send counts)");
  chain.counts = counts;
  return success();
}

LogicalResult ChainMatcher::checkContiguous(RowExchange x) {
  if (std::optional<std::string> why =
          whyNotContiguous(x.getOperation(), chain.ranks, chain.topology))
    return fail(x.getOperation(), x.name() + ": " + *why);
  return success();
}

LogicalResult ChainMatcher::matchSendCounts() {
  RowExchange forward = chain.forward;
  tensor::CastOp cast;
  Value sendCounts = skipCast(forward.sendCounts(), cast);
  auto sums = sendCounts.getDefiningOp<linalg::ReduceOp>();
  if (!sums || sums.getInputs().size() != 1 ||
      sums.getInputs()[0] != chain.groups.getResult() || !isRowSum(sums))
    return fail(forward.getOperation(),
                "the send counts of " + forward.name() +
                    " are not the per-rank sums of the group sizes "
                    "(linalg.reduce of the [W, L] tensor.expand_shape over "
                    "dimension 1 with arith.addi, from zeros)");
  chain.sums = sums;
  // A ragged exchange's sizes also feed its offsets and the exchange back;
  // that nothing else uses them, collectErased checks.
  if (forward.isRagged())
    return success();
  if (cast &&
      failed(onlyUsedBy(cast, "the send counts", {forward.getOperation()})))
    return failure();
  Operation *countsUser = cast ? cast.getOperation() : forward.getOperation();
  return onlyUsedBy(sums.getResult(0), "the send counts", {countsUser});
}

LogicalResult ChainMatcher::matchGrouped(SortChunksOp sort) {
  chain.sort = sort;
  Value recv = chain.forward.recv();
  if (failed(onlyUsedBy(recv, "the received rows", {sort})))
    return failure();

  // The counts matrix: the all_to_all of the [W, L] group sizes, one row to
  // every rank.
  tensor::CastOp cast;
  auto counts = skipCast(sort.getCounts(), cast).getDefiningOp<AllToAllOp>();
  if (!counts || counts.getSend() != chain.groups.getResult() ||
      (chain.counts && counts != chain.counts))
    return fail(sort,
                "the counts of 'moecomm.sort_chunks' are not the "
                "'moecomm.all_to_all' of the [W, L] group sizes" +
                    Twine(chain.counts ? " that gives the recv_sizes" : ""));
  if (failed(takeCounts(counts)))
    return failure();
  if (counts.getTopology() != chain.topology)
    return fail(counts, "'moecomm.all_to_all' of the group sizes has another "
                        "topology than the forward exchange");
  if (failed(onlyUsedBy(chain.groups.getResult(), "the [W, L] group sizes",
                        {chain.sums, counts})) ||
      failed(onlyUsedBy(counts.getRecvCounts(),
                        "the receive counts of the counts exchange", {})))
    return failure();

  // Its users: the sort, the unsort, and casts feeding only those; with
  // ragged exchanges, also the per-rank sums that are their sizes.
  Value matrix = counts.getRecv();
  auto takeUser = [&](Operation *user) -> LogicalResult {
    auto unsort = dyn_cast<UnsortChunksOp>(user);
    if (user == sort || (unsort && !chain.unsort)) {
      if (unsort)
        chain.unsort = unsort;
      return success();
    }
    if (auto sums = dyn_cast<linalg::ReduceOp>(user);
        sums && chain.forward.isRagged() && isRowSum(sums))
      return success();
    return fail(user, nameOf(user) + " uses the counts matrix outside the "
                                     "per-expert exchange");
  };
  for (Operation *user : matrix.getUsers()) {
    if (auto c = dyn_cast<tensor::CastOp>(user)) {
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
  chain.back = soleExchange(sorted, "the unsorted expert outputs", chain.unsort,
                            "the rows of 'moecomm.unsort_chunks' are not sent "
                            "back by a 'moecomm.all_to_all' or JAX's ragged "
                            "all-to-all");
  return success(static_cast<bool>(chain.back));
}

LogicalResult ChainMatcher::matchRowWise() {
  if (failed(onlyUsedBy(chain.groups.getResult(), "the [W, L] group sizes",
                        {chain.sums, chain.counts})))
    return failure();
  // The received rows and what elementwise ops make of them, up to the one
  // all_to_all that sends them back: each row's result is then the same
  // whatever the rows' order.
  SmallVector<Value> rows = {chain.forward.recv()};
  for (size_t i = 0; i < rows.size(); ++i) {
    for (Operation *user : rows[i].getUsers()) {
      if (llvm::is_contained(chain.rowWise, user))
        continue;
      if (RowExchange back = RowExchange::sending(user, rows[i]);
          back && !chain.back) {
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
    return fail(chain.forward.getOperation(),
                "the received rows of " + chain.forward.name() +
                    " are not sent back by a 'moecomm.all_to_all' or JAX's "
                    "ragged all-to-all");
  return success();
}

LogicalResult ChainMatcher::matchBack() {
  RowExchange forward = chain.forward, back = chain.back;
  Operation *backOp = back.getOperation();
  if (back.isRagged() != forward.isRagged())
    return fail(backOp, "the exchange back is a " + back.name() +
                            ", the forward exchange a " + forward.name() +
                            ": both must be of one kind");
  if (back.sendCounts() != forward.recvCounts())
    return fail(backOp, "the exchange back (" + back.name() +
                            ") does not send with the forward exchange's "
                            "receive counts");
  if (back.isRagged()) {
    // What comes back is what went out.
    if (back.recvCounts() != forward.sendCounts())
      return fail(backOp, "the exchange back (" + back.name() +
                              ") does not receive the forward exchange's "
                              "send_sizes");
    if (failed(checkContiguous(back)))
      return failure();
  } else {
    if (back.getAllToAll().getTopology() != chain.topology)
      return fail(backOp, "the exchange back ('moecomm.all_to_all') has "
                          "another topology than the forward exchange");
    if (failed(
            onlyUsedBy(forward.recvCounts(), "the receive counts", {backOp})) ||
        failed(onlyUsedBy(back.recvCounts(),
                          "the receive counts of the exchange back", {})))
      return failure();
  }

  Value home = back.recv();
  auto unpermute = soleUser<UnpermuteTokensOp>(
      home, [](UnpermuteTokensOp op) { return op.getRows(); },
      "the rows of the exchange back", backOp,
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
  int64_t outHidden =
      cast<RankedTensorType>(back.send().getType()).getDimSize(1);
  if (outHidden != hidden)
    return fail(backOp, "the expert outputs have " + Twine(outHidden) +
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

/// permute_tokens ... unpermute_tokens  ==>  dispatch ... combine; a
/// backward exchange (weights at permute_tokens)  ==>  cached_dispatch (or
/// a dispatch of its own) ... unweighted combine.
struct RaiseDispatchChain : OpRewritePattern<PermuteTokensOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PermuteTokensOp permute,
                                PatternRewriter &rewriter) const override {
    ChainMatcher matcher(permute);
    if (failed(matcher.match()))
      return rewriter.notifyMatchFailure(permute, matcher.getMismatch().why);
    Chain c = matcher.getChain();
    MLIRContext *ctx = getContext();

    // The dispatch (or cached_dispatch), where the forward exchange was.
    Operation *forward = c.forward.getOperation(),
              *back = c.back.getOperation();
    rewriter.setInsertionPoint(forward);
    Location loc = FusedLoc::get(ctx, {permute.getLoc(), forward->getLoc()});
    DispatchOp layout = c.layout;
    Value rows;
    if (layout) {
      rows = CachedDispatchOp::create(rewriter, loc, permute.getX(),
                                      layout.getHandle(), WireDtypeAttr())
                 .getRecv();
    } else {
      Value weights = c.weights;
      if (!weights)
        weights = onesLike(rewriter, loc, permute.getTopkIdx());
      TopologyAttr exchange = c.topology;
      auto topology =
          TopologyAttr::get(ctx, exchange.getRanks(),
                            exchange.getRanksPerNode(), permute.getExperts());
      layout = DispatchOp::create(rewriter, loc, permute.getX(),
                                  permute.getTopkIdx(), weights, topology,
                                  WireDtypeAttr(), StrategyAttr(),
                                  IntegerAttr(), IntegerAttr());
      rows = layout.getRecv();
    }
    // A forward in the function whose layout could not be reused: say why
    // (the backward then computes a second one).
    if (c.backward && !c.layout && !c.noLayout.empty())
      permute.emitRemark() << "moecomm-raise-dispatch: the backward gets a "
                              "layout of its own: "
                           << c.noLayout;
    // A backward exchange sent each row times its weight; the layout's
    // received weights are those rows' (DeepEP's cached dispatch scales
    // likewise, after the exchange).
    if (c.backward)
      rows = scaleRowsByWeights(rewriter, loc, rows, layout.getRecvWeights());

    // Its rows are sort_chunks' (the same expert-major order), or the
    // row-wise experts read them.
    if (c.sort)
      rewriter.replaceAllUsesWith(
          c.sort.getResults(), ValueRange{rows, layout.getTokensPerExpert()});
    else
      rewriter.replaceAllUsesWith(c.forward.recv(), rows);

    // The combine, where the exchange back was.
    rewriter.setInsertionPoint(back);
    Value expertRows = c.unsort ? c.unsort.getIn() : c.back.send();
    auto combine = CombineOp::create(
        rewriter, FusedLoc::get(ctx, {back->getLoc(), c.unpermute.getLoc()}),
        c.unpermute.getOut().getType(), expertRows, layout.getHandle(),
        c.unpermute.getTopkWeights() ? rewriter.getUnitAttr() : UnitAttr());
    rewriter.replaceAllUsesWith(c.unpermute.getOut(), combine.getOut());

    // The rest of the chain and what computed only its operands, users
    // first; what the dispatch reads (the tokens, the weights) stays.
    SmallVector<Operation *> pending(c.erased.begin(), c.erased.end());
    for (bool progress = true; progress;) {
      progress = false;
      for (Operation *&op : pending)
        if (op && op->use_empty()) {
          rewriter.eraseOp(op);
          op = nullptr;
          progress = true;
        }
    }
    return success();
  }
};

struct RaiseDispatchPass
    : public mlir::moecomm::impl::MoECommRaiseDispatchBase<RaiseDispatchPass> {
  void runOnOperation() override {
    // Forward exchanges first, so that a backward one finds the dispatch
    // whose layout it reuses.
    SmallVector<Operation *> forwards, backwards;
    getOperation().walk([&](PermuteTokensOp op) {
      (op.getTopkWeights() ? backwards : forwards).push_back(op);
    });
    if (forwards.empty() && backwards.empty())
      return;
    FrozenRewritePatternSet patterns = [&] {
      RewritePatternSet set(&getContext());
      populateRaiseDispatchPatterns(set);
      return FrozenRewritePatternSet(std::move(set));
    }();
    // Only the raise: the driver starts from the permute_tokens and neither
    // folds nor simplifies the rest of the function (the pattern erases
    // what only the chain used).
    GreedyRewriteConfig config;
    config.enableFolding(false)
        .enableConstantCSE(false)
        .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    for (SmallVector<Operation *> *permutes : {&forwards, &backwards})
      if (!permutes->empty() &&
          failed(applyOpPatternsGreedily(*permutes, patterns, config)))
        return signalPassFailure();
    // One remark per chain left, once the pattern has done all it can (the
    // driver may try a chain more than once).
    getOperation().walk([](PermuteTokensOp permute) {
      ChainMatcher matcher(permute);
      if (failed(matcher.match())) {
        const Mismatch &m = matcher.getMismatch();
        InFlightDiagnostic remark = m.at->emitRemark()
                                    << "moecomm-raise-dispatch: not raised: "
                                    << m.why;
        // An op may stop two chains (a backward reading the forward's
        // counts): say whose remark this is.
        if (m.at != permute)
          remark << " (the exchange from the 'moecomm.permute_tokens' at "
                 << lineColOf(permute.getLoc()) << ")";
      }
    });
  }
};

} // namespace

void mlir::moecomm::populateRaiseDispatchPatterns(RewritePatternSet &patterns) {
  patterns.add<RaiseDispatchChain>(patterns.getContext());
}

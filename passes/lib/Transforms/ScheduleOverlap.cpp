//===- ScheduleOverlap.cpp - chunk MoE layers, overlap exchanges -----------===//
//
// 1. Chunking: a staged MoE layer whose expert computation is row-wise
//    (RowWise.h: row-wise ops, and loops over the experts' segments) is
//    cloned per token chunk (its own layout, exchanges and combine) and the
//    chunk outputs are reassembled.
// 2. Every exchange becomes exchange_start + exchange_wait.
// 3. Each block holding exchanges is list-scheduled: layouts first, starts
//    as early as their operands allow, waits as late as their users allow
//    (first started, first waited), everything else in program order. With
//    chunks this is a software pipeline: chunk i's exchange is in flight
//    while chunk i-1's expert computation runs; independent layers
//    (micro-batches) interleave the same way.
//
// Legality: SSA use-def edges are always kept; ops with memory effects other
// than moecomm's collective resource keep their order relative to every
// other effectful op. moecomm collectives may be reordered among themselves
// because every rank runs the same schedule (SPMD), so all ranks still issue
// them in one consistent order.
//
//===----------------------------------------------------------------------===//

#include "Transforms/OptionErrors.h"
#include "Transforms/RowWise.h"
#include "Transforms/ScheduleOverlap.h"
#include "Transforms/Unstaged.h"
#include "moecomm/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/MathExtras.h"

#include <queue>

namespace mlir::moecomm {
#define GEN_PASS_DEF_MOECOMMSCHEDULEOVERLAP
#include "moecomm/Transforms/Passes.h.inc"
} // namespace mlir::moecomm

using namespace mlir;
using namespace mlir::moecomm;

namespace {

bool isMoEComm(Operation *op) {
  return isa<MoECommDialect>(op->getDialect());
}

/// The op of `block` that is or contains `op`, or null.
Operation *inBlock(Block *block, Operation *op) {
  return block->findAncestorOpInBlock(*op);
}

/// Ops of `block` that depend on `root` (including it), not following the
/// results of the ops in `stops`.
llvm::SetVector<Operation *>
forwardSlice(Operation *root, ArrayRef<Operation *> stops = {}) {
  Block *block = root->getBlock();
  llvm::SetVector<Operation *> slice;
  SmallVector<Operation *> worklist = {root};
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (!slice.insert(op) || llvm::is_contained(stops, op))
      continue;
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers())
        if (Operation *owner = inBlock(block, user))
          worklist.push_back(owner);
  }
  return slice;
}

/// Ops of `block` that `root` depends on (including it).
llvm::SetVector<Operation *> backwardSlice(Operation *root) {
  Block *block = root->getBlock();
  llvm::SetVector<Operation *> slice;
  SmallVector<Operation *> worklist = {root};
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (!slice.insert(op))
      continue;
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (Operation *owner = inBlock(block, def))
            if (owner != op)
              worklist.push_back(owner);
    });
  }
  return slice;
}

//===----------------------------------------------------------------------===//
// Chunking
//===----------------------------------------------------------------------===//

/// One staged MoE layer: its layout, the ops from the layout to its combine
/// outputs (exchanges and expert computation, and a backward pass on the same
/// layout), the token-indexed values it reads from outside, and the combine
/// outputs ([T, H] each: the forward's out, the backward's grad_x).
struct Layer {
  LayoutOp layout;
  llvm::SetVector<Operation *> ops; ///< in program order, layout first
  SmallVector<Value> tokenInputs;   ///< the routing, x, grad_out, scales
  SmallVector<Value> outputs;
  /// The chunks go right after this op: the last op of the block that
  /// defines a value the layer reads (or the layout when there is none).
  Operation *insertAfter = nullptr;
};

/// The combine output steps among the users of `handle`.
SmallVector<Operation *> findCombineOutputs(Value handle) {
  SmallVector<Operation *> outputs;
  for (Operation *user : handle.getUsers()) {
    bool output = false;
    if (auto permute = dyn_cast<PermuteOp>(user))
      output = permute.getDirection() == Direction::combine &&
               !permute.getStage();
    else if (auto unpack = dyn_cast<UnpackOp>(user))
      output = unpack.getDirection() == Direction::combine;
    if (output)
      outputs.push_back(user);
  }
  return outputs;
}

/// Collects the layer of `layout`, or returns why it cannot be chunked.
FailureOr<Layer> collectLayer(LayoutOp layout, std::string &why) {
  Layer layer;
  layer.layout = layout;
  if (layout.getCapacity()) {
    why = "its capacity bounds the rows of the whole batch (every chunk "
          "would get the full capacity)";
    return failure();
  }
  SmallVector<Operation *> outs = findCombineOutputs(layout.getHandle());
  if (outs.empty()) {
    why = "its handle is used by no combine";
    return failure();
  }
  Block *block = layout->getBlock();
  if (llvm::any_of(outs,
                   [&](Operation *out) { return out->getBlock() != block; })) {
    why = "a combine is in a different block";
    return failure();
  }
  // Program order, not use-list order: the chunks' outputs come out in the
  // order the IR wrote them, whether a pass built it or the parser read it.
  llvm::sort(outs,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  llvm::SetVector<Operation *> bwd;
  for (Operation *out : outs) {
    bwd.set_union(backwardSlice(out));
    layer.outputs.push_back(out->getResult(0));
  }
  llvm::SetVector<Operation *> fwd = forwardSlice(layout, outs);
  for (Operation &op : *block)
    if (fwd.contains(&op) && bwd.contains(&op))
      layer.ops.insert(&op);

  // The chunks replace the layer in one place, so its collectives would move
  // across an op with other memory effects among them, which keeps its order
  // relative to every collective (scheduleBlock's rule).
  for (Operation *op = layout->getNextNode(); op != layer.ops.back();
       op = op->getNextNode())
    if (!layer.ops.contains(op) && !isMoEComm(op) && !isMemoryEffectFree(op)) {
      why = "'" + op->getName().getStringRef().str() +
            "' has memory effects and sits among its ops";
      return failure();
    }
  for (Operation *op : layer.ops) {
    if (op == layout.getOperation() || !isMoEComm(op))
      continue;
    // Token-indexed inputs: rows entering the dispatch from outside.
    if (auto dir = op->getAttrOfType<DirectionAttr>("direction");
        dir && dir.getValue() == Direction::dispatch)
      for (Value v : op->getOperands())
        if (isa<RankedTensorType>(v.getType()) &&
            !layer.ops.contains(v.getDefiningOp()) &&
            !llvm::is_contained(layer.tokenInputs, v))
          layer.tokenInputs.push_back(v);
  }
  if (failed(checkRowWise(layout, layer.ops, why)))
    return failure();
  // Each chunk's clone reads its own layout's tokens_per_expert; a use
  // outside the layer would have no single value to read.
  for (Operation *user : layout.getTokensPerExpert().getUsers())
    for (Operation *op : forwardSlice(inBlock(block, user), outs))
      if (!layer.ops.contains(op)) {
        why = "it uses tokens_per_expert, which changes with the chunk";
        return failure();
      }
  for (Operation *op : layer.ops)
    for (Value result : op->getResults())
      if (!llvm::is_contained(layer.outputs, result) &&
          isa<RankedTensorType>(result.getType()))
        for (Operation *user : result.getUsers())
          if (!layer.ops.contains(inBlock(block, user))) {
            why = "a value of the layer ('" +
                  op->getName().getStringRef().str() +
                  "') is used outside it";
            return failure();
          }
  // Everything that depends on the layout is cloned per chunk, so it must
  // lead to a combine: a dispatch whose rows are not combined would be left
  // behind holding the erased layout.
  for (Operation *op : fwd)
    if (!layer.ops.contains(op)) {
      why = "'" + op->getName().getStringRef().str() +
            "' depends on the layout but does not lead to its combine";
      return failure();
    }
  // The clones read every value the layer reads from outside, so they go
  // after the last of those; the reassembled outputs replace the combine
  // outputs there, so no use of an output may come earlier. A layer whose
  // second combine reads a value computed from its first combine's output
  // (the loss gradient of a training step) cannot be one unit.
  layer.insertAfter = layout;
  for (Operation *op : layer.ops)
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (Operation *owner = inBlock(block, def))
            if (!layer.ops.contains(owner) &&
                layer.insertAfter->isBeforeInBlock(owner))
              layer.insertAfter = owner;
    });
  for (Value out : layer.outputs)
    for (Operation *user : out.getUsers())
      if (Operation *owner = inBlock(block, user);
          owner && !layer.insertAfter->isBeforeInBlock(owner)) {
        why = "the output of one of its combines is used ('" +
              owner->getName().getStringRef().str() +
              "') before a value the layer reads ('" +
              layer.insertAfter->getName().getStringRef().str() +
              "') is computed";
        return failure();
      }
  layer.tokenInputs.insert(layer.tokenInputs.begin(),
                           {layout.getTopkIdx(), layout.getTopkWeights()});
  // Bufferized, a chunk's first row becomes an element offset (row * width)
  // into each token-indexed buffer.
  SmallVector<Value> rowValues(layer.tokenInputs);
  llvm::append_range(rowValues, layer.outputs);
  for (Value v : rowValues) {
    auto type = cast<RankedTensorType>(v.getType());
    int64_t elements;
    if (type.hasStaticShape() &&
        llvm::MulOverflow(type.getDimSize(0), type.getDimSize(1), elements)) {
      why = "its " + std::to_string(type.getDimSize(0)) + " rows of " +
            std::to_string(type.getDimSize(1)) +
            " elements overflow a 64-bit element offset";
      return failure();
    }
  }
  return layer;
}

/// Clones `layer` once per chunk of tokens and reassembles its outputs.
void chunkLayer(Layer &layer, int64_t chunks) {
  OpBuilder b(layer.insertAfter->getContext());
  b.setInsertionPointAfter(layer.insertAfter);
  Location loc = layer.layout.getLoc();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value tokens = tensor::DimOp::create(b, loc, layer.tokenInputs[0], zero);
  // Chunk c starts at c * q + min(c, r) (q = T / chunks, r = T % chunks):
  // the first r chunks get one row more than the others, and no intermediate
  // value exceeds T.
  Value numChunks = arith::ConstantIndexOp::create(b, loc, chunks);
  Value quotient = arith::DivUIOp::create(b, loc, tokens, numChunks);
  Value remainder = arith::RemUIOp::create(b, loc, tokens, numChunks);
  auto chunkStart = [&](int64_t c) -> Value {
    Value index = arith::ConstantIndexOp::create(b, loc, c);
    return arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, quotient, index),
        arith::MinUIOp::create(b, loc, index, remainder));
  };
  auto rowSlice = [&](Value start, Value size, int64_t width) {
    return std::make_tuple(
        SmallVector<OpFoldResult>{start, b.getIndexAttr(0)},
        SmallVector<OpFoldResult>{size, b.getIndexAttr(width)},
        SmallVector<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
  };
  SmallVector<Value> results;
  for (Value out : layer.outputs) {
    auto type = cast<RankedTensorType>(out.getType());
    results.push_back(tensor::EmptyOp::create(
        b, loc, ArrayRef<int64_t>{ShapedType::kDynamic, type.getDimSize(1)},
        type.getElementType(), ValueRange{tokens}));
  }

  Value start = zero;
  for (int64_t c = 0; c < chunks; ++c) {
    Value end = c + 1 < chunks ? chunkStart(c + 1) : tokens;
    Value size = arith::SubIOp::create(b, loc, end, start);
    IRMapping mapping;
    for (Value input : layer.tokenInputs) {
      auto type = cast<RankedTensorType>(input.getType());
      auto [offsets, sizes, strides] =
          rowSlice(start, size, type.getDimSize(1));
      auto sliceType = RankedTensorType::get(
          {ShapedType::kDynamic, type.getDimSize(1)}, type.getElementType());
      mapping.map(input, tensor::ExtractSliceOp::create(
                             b, loc, sliceType, input, offsets, sizes, strides));
    }
    for (Operation *op : layer.ops)
      b.clone(*op, mapping);
    for (auto [out, result] : llvm::zip(layer.outputs, results)) {
      auto [offsets, sizes, strides] = rowSlice(
          start, size, cast<RankedTensorType>(out.getType()).getDimSize(1));
      result = tensor::InsertSliceOp::create(b, loc, mapping.lookup(out),
                                             result, offsets, sizes, strides);
    }
    start = end;
  }
  for (auto [out, result] : llvm::zip(layer.outputs, results)) {
    Value assembled = result;
    if (assembled.getType() != out.getType())
      assembled = tensor::CastOp::create(b, loc, out.getType(), assembled);
    out.replaceAllUsesWith(assembled);
  }
  for (Operation *op : llvm::reverse(layer.ops))
    op->erase();
}

//===----------------------------------------------------------------------===//
// Asynchronous exchanges and the list schedule
//===----------------------------------------------------------------------===//

void makeAsync(ExchangeOp exchange) {
  OpBuilder b(exchange);
  auto start = ExchangeStartOp::create(
      b, exchange.getLoc(), exchange.getSend(), exchange.getScales(),
      exchange.getHandle(), exchange.getDirectionAttr(),
      exchange.getStageAttr(), exchange.getScopeAttr());
  auto wait = ExchangeWaitOp::create(b, exchange.getLoc(), start.getRequest(),
                                     start.getRecv(), start.getRecvScales());
  exchange->replaceAllUsesWith(wait.getResults());
  exchange.erase();
}

/// Reorders `block`: starts early, waits late (FIFO), the rest in program
/// order, keeping SSA edges and the order of effectful non-moecomm ops.
void scheduleBlock(Block &block) {
  SmallVector<Operation *> ops;
  for (Operation &op : block.without_terminator())
    ops.push_back(&op);
  DenseMap<Operation *, unsigned> index;
  for (auto [i, op] : llvm::enumerate(ops))
    index[op] = i;

  // Dependencies: predecessors count and successor lists.
  std::vector<SmallVector<unsigned>> successors(ops.size()),
      predecessors(ops.size());
  std::vector<unsigned> pending(ops.size(), 0);
  auto addEdge = [&](unsigned from, unsigned to) {
    successors[from].push_back(to);
    predecessors[to].push_back(from);
    ++pending[to];
  };
  // The last effectful op outside moecomm, and the moecomm collectives since.
  std::optional<unsigned> lastBarrier;
  SmallVector<unsigned> collectivesSince;
  for (unsigned i = 0; i < ops.size(); ++i) {
    Operation *op = ops[i];
    llvm::SmallDenseSet<unsigned> preds;
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (Operation *owner = inBlock(&block, def))
            if (owner != op)
              preds.insert(index[owner]);
    });
    // Effectful ops outside moecomm keep their order relative to every other
    // effectful op; moecomm collectives only relative to those.
    if (!isMemoryEffectFree(op)) {
      if (lastBarrier)
        preds.insert(*lastBarrier);
      if (isMoEComm(op)) {
        collectivesSince.push_back(i);
      } else {
        preds.insert(collectivesSince.begin(), collectivesSince.end());
        collectivesSince.clear();
        lastBarrier = i;
      }
    }
    for (unsigned p : preds)
      addEdge(p, i);
  }

  // Ready ops: layouts and what they depend on (the chunks' routing slices)
  // first, then the other non-waits by program order; waits last, by start
  // order. A layout agrees on its metadata with a blocking all-gather;
  // issued after an earlier chunk's exchange started, it queues behind that
  // exchange's bytes on a slow link while the rank can do nothing else
  // (emulated 2 x 1 at 15 Mbit/s, DeepSeek-V3 FFN layer, 4 chunks: 0.8 s of
  // layouts per iteration).
  std::vector<bool> early(ops.size(), false);
  for (unsigned i = ops.size(); i-- > 0;) {
    early[i] = early[i] || isa<LayoutOp>(ops[i]);
    if (early[i])
      for (unsigned p : predecessors[i])
        early[p] = true;
  }
  DenseMap<Operation *, unsigned> startOrder;
  unsigned started = 0;
  auto key = [&](unsigned i) -> std::pair<unsigned, unsigned> {
    if (auto wait = dyn_cast<ExchangeWaitOp>(ops[i]))
      return {2, startOrder.lookup(wait.getRequest().getDefiningOp())};
    return {early[i] ? 0u : 1u, i};
  };
  auto cmp = [&](unsigned a, unsigned b) { return key(a) > key(b); };
  std::priority_queue<unsigned, std::vector<unsigned>, decltype(cmp)> ready(cmp);
  // A wait becomes ready only after its start (SSA edge), so the start
  // order it is keyed by is known when it enters the queue.
  for (unsigned i = 0; i < ops.size(); ++i)
    if (pending[i] == 0)
      ready.push(i);
  std::vector<bool> scheduled(ops.size(), false);
  Operation *terminator = block.getTerminator();
  while (!ready.empty()) {
    unsigned i = ready.top();
    ready.pop();
    ops[i]->moveBefore(terminator);
    scheduled[i] = true;
    if (isa<ExchangeStartOp>(ops[i]))
      startOrder[ops[i]] = started++;
    for (unsigned s : successors[i])
      if (--pending[s] == 0)
        ready.push(s);
  }
  assert(llvm::all_of(scheduled, [](bool s) { return s; }) &&
         "dependency cycle in a block");
}

struct ScheduleOverlapPass
    : public WithOptionErrors<mlir::moecomm::impl::MoECommScheduleOverlapBase<
          ScheduleOverlapPass>> {
  using WithOptionErrors::WithOptionErrors;

  // Options are checked once, before any IR is touched (OptionErrors.h), not
  // per function.
  LogicalResult initialize(MLIRContext *context) override {
    return checkOverlapOptions(context, getArgument(), chunks);
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    remarkUnstaged(func, getArgument());
    SmallVector<LayoutOp> layouts;
    func.walk([&](LayoutOp op) { layouts.push_back(op); });
    for (LayoutOp layout : layouts) {
      // Scheduling twice would chunk the chunks; the first schedule stands.
      if (llvm::any_of(layout.getHandle().getUsers(),
                       llvm::IsaPred<ExchangeStartOp>)) {
        layout.emitRemark() << "moecomm-schedule-overlap: already scheduled "
                               "(its exchanges are asynchronous); left as is";
        continue;
      }
      if (chunks == 1)
        continue;
      std::string why;
      FailureOr<Layer> layer = collectLayer(layout, why);
      if (failed(layer)) {
        layout.emitRemark() << "moecomm-schedule-overlap: not chunked: " << why;
        continue;
      }
      chunkLayer(*layer, chunks);
    }
    SmallVector<ExchangeOp> exchanges;
    func.walk([&](ExchangeOp op) { exchanges.push_back(op); });
    llvm::SetVector<Block *> blocks;
    for (ExchangeOp op : exchanges) {
      blocks.insert(op->getBlock());
      makeAsync(op);
    }
    for (Block *block : blocks)
      scheduleBlock(*block);
  }
};

} // namespace

LogicalResult mlir::moecomm::checkOverlapOptions(MLIRContext *context,
                                                 StringRef pass,
                                                 int64_t chunks) {
  if (chunks >= 1 && chunks <= kMaxOverlapChunks)
    return success();
  return emitOptionError(context, pass)
         << "chunks must be in [1, " << kMaxOverlapChunks << "], got "
         << chunks;
}

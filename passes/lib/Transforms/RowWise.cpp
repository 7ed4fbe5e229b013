//===- RowWise.cpp - may a MoE layer's tokens be chunked? -----------------===//
//
// Every value of a layer's expert computation gets a kind: rows (a tensor
// whose leading dimension is the chunk's rows), per-chunk (no rows, but
// different in every chunk: tokens_per_expert, row counts, segment offsets
// and sizes) or fixed (the same in every chunk: weights and constants from
// outside the layer, a segment loop's expert index). The rules keep the
// result of every row a function of that row, its expert and fixed values:
// row-wise ops transform rows independently; per-chunk values only size and
// place rows (tensor.empty sizes, segment offsets and sizes), never enter
// the arithmetic; a segment loop (Megatron-LM's and MegaBlocks' grouped
// expert loop over the expert-major rows) gives expert e exactly its
// segment, rows [off_e, off_e + tokens_per_expert[e]) with off_e read from
// the layout's moecomm.expert_offsets (a grouped GEMM's group offsets) or,
// without align(N) padding, the prefix sum, which in every chunk holds that
// chunk's rows of expert e.
//
//===----------------------------------------------------------------------===//

#include "Transforms/RowWise.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::moecomm;

namespace {

/// What a value of the layer carries, as far as chunking is concerned.
enum class Kind {
  /// The same in every chunk: values from outside the layer, a segment
  /// loop's expert index, and values computed from those alone.
  Fixed,
  /// A tensor whose leading dimension is the chunk's rows.
  Rows,
  /// Different in every chunk but holding no rows: tokens_per_expert, row
  /// counts, segment offsets and sizes, and values computed from them.
  PerChunk,
};

std::string quoted(Operation *op) {
  return "'" + op->getName().getStringRef().str() + "'";
}

/// The values `op` reads: its operands and (also in `captured`) the values
/// its regions capture from outside it.
SmallVector<Value> usedValues(Operation *op, SmallVector<Value> &captured) {
  SmallVector<Value> used(op->getOperands());
  op->walk([&](Operation *nested) {
    if (nested == op)
      return;
    for (Value v : nested->getOperands())
      if (!op->isAncestor(v.getParentRegion()->getParentOp())) {
        used.push_back(v);
        captured.push_back(v);
      }
  });
  return used;
}

class RowWiseChecker {
public:
  RowWiseChecker(LayoutOp layout, std::string &why)
      : tokensPerExpert(layout.getTokensPerExpert()),
        align(layout.getAlign().value_or(1)), why(why) {
    kinds[layout.getRecvWeights()] = Kind::Rows;
    received.insert(layout.getRecvWeights());
    kinds[tokensPerExpert] = Kind::PerChunk;
    counts.insert(tokensPerExpert);
  }

  /// Checks an op of the layer's block and records its results' kinds.
  LogicalResult check(Operation *op);

private:
  Kind kind(Value v) const { return kinds.lookup(v); }
  LogicalResult fail(Operation *op, const Twine &reason) {
    why = (quoted(op) + " " + reason).str();
    return failure();
  }
  /// Names `v` for a remark: its op, or what a loop's block argument is.
  std::string describe(Value v) const;
  void classifyMoEComm(Operation *op);
  LogicalResult checkRowOp(Operation *op, ArrayRef<Value> used,
                           ArrayRef<Value> captured);
  LogicalResult checkSegmentLoop(scf::ForOp loop);
  bool isExpertCount(Value v) const;
  bool isReceivedRowCount(Value v) const;
  bool isSegmentSlice(OffsetSizeAndStrideOpInterface slice,
                      RankedTensorType whole) const;

  Value tokensPerExpert;
  /// The layout's align(N): above 1, the segments are padded and start at
  /// expert_offsets, not at the prefix sums of tokens_per_expert.
  uint64_t align;
  /// Values the layer defines (absent: Fixed).
  DenseMap<Value, Kind> kinds;
  /// Rows in the received (expert-major) order and count.
  llvm::DenseSet<Value> received;
  /// tokens_per_expert and tensor.casts of it.
  llvm::DenseSet<Value> counts;
  /// The layout's expert_offsets (segment starts) and tensor.casts of them.
  llvm::DenseSet<Value> starts;
  /// Inside a segment loop: its segment offsets and sizes, the rows it
  /// assembles, and the rows its body computed (segments and their results).
  scf::ForOp loop;
  llvm::DenseSet<Value> offsets, sizes, loopRows;
  std::string &why;
};

std::string RowWiseChecker::describe(Value v) const {
  if (Operation *def = v.getDefiningOp())
    return quoted(def);
  if (offsets.contains(v))
    return "the segment offset";
  return "the rows the loop assembles";
}

void RowWiseChecker::classifyMoEComm(Operation *op) {
  // Segment offsets of the chunk's own layout: they place rows, hold none.
  if (auto offsets = dyn_cast<ExpertOffsetsOp>(op)) {
    kinds[offsets.getOffsets()] = Kind::PerChunk;
    starts.insert(offsets.getOffsets());
    return;
  }
  bool receives = false;
  if (auto unpack = dyn_cast<UnpackOp>(op))
    receives = unpack.getDirection() == Direction::dispatch;
  else if (auto permute = dyn_cast<PermuteOp>(op))
    receives =
        permute.getDirection() == Direction::dispatch && !permute.getStage();
  else if (auto dequantize = dyn_cast<DequantizeOp>(op))
    receives = received.contains(dequantize.getQ());
  for (Value result : op->getResults())
    if (auto type = dyn_cast<RankedTensorType>(result.getType());
        type && type.getRank() > 0) {
      kinds[result] = Kind::Rows;
      if (receives)
        received.insert(result);
    }
}

LogicalResult RowWiseChecker::check(Operation *op) {
  if (isa<LayoutOp>(op))
    return success();
  if (isa<MoECommDialect>(op->getDialect())) {
    classifyMoEComm(op);
    return success();
  }
  SmallVector<Value> captured;
  SmallVector<Value> used = usedValues(op, captured);
  bool rows = isa<tensor::EmptyOp>(op) || llvm::any_of(used, [&](Value v) {
                return kind(v) == Kind::Rows;
              });
  if (auto forOp = dyn_cast<scf::ForOp>(op); forOp && rows && !loop)
    return checkSegmentLoop(forOp);
  // Inside a segment loop, the rows of the whole batch (and those assembled
  // so far) are read only through the segment of the iteration's expert.
  if (loop)
    for (Value v : used)
      if (kind(v) == Kind::Rows && !loopRows.contains(v))
        return fail(op, "in 'scf.for' reads rows outside its expert's "
                        "segment (" +
                            describe(v) + ")");
  if (!rows) {
    // No rows: computes fixed or per-chunk values, which the rules for the
    // ops that read them govern.
    if (!isMemoryEffectFree(op))
      return fail(op, "has memory effects");
    bool perChunk =
        llvm::any_of(used, [&](Value v) { return kind(v) == Kind::PerChunk; });
    for (Value result : op->getResults())
      kinds[result] = perChunk ? Kind::PerChunk : Kind::Fixed;
    if (auto cast = dyn_cast<tensor::CastOp>(op)) {
      if (counts.contains(cast.getSource()))
        counts.insert(cast.getResult());
      if (starts.contains(cast.getSource()))
        starts.insert(cast.getResult());
    }
    return success();
  }
  if (failed(checkRowOp(op, used, captured)))
    return failure();
  bool receives =
      llvm::any_of(used, [&](Value v) { return received.contains(v); });
  for (Value result : op->getResults()) {
    auto type = dyn_cast<RankedTensorType>(result.getType());
    if (!type || type.getRank() == 0) {
      kinds[result] = Kind::PerChunk; // a row count
      continue;
    }
    if (!type.isDynamicDim(0))
      return fail(op, "has a static row count");
    kinds[result] = Kind::Rows;
    if (receives)
      received.insert(result);
    if (loop)
      loopRows.insert(result);
  }
  return success();
}

/// Whether `op`, which reads or makes rows, transforms every row
/// independently.
LogicalResult RowWiseChecker::checkRowOp(Operation *op, ArrayRef<Value> used,
                                         ArrayRef<Value> captured) {
  auto isRows = [&](Value v) { return kind(v) == Kind::Rows; };
  // A per-chunk value may size a tensor, nothing else: as data it would
  // make a row's result depend on the other rows of its chunk.
  if (!isa<tensor::EmptyOp>(op))
    for (Value v : used)
      if (kind(v) == Kind::PerChunk)
        return fail(op, "reads " + describe(v) +
                            ", which changes with the chunk, as data");
  for (Value v : captured)
    if (isRows(v))
      return fail(op,
                  "mixes rows (its region reads " + describe(v) + " whole)");
  if (isa<tensor::EmptyOp, tensor::DimOp, tensor::CastOp>(op))
    return success();
  if (!isMemoryEffectFree(op) && !isa<linalg::LinalgOp>(op))
    return fail(op, "has memory effects");
  if (op->hasTrait<OpTrait::Elementwise>()) {
    for (Value operand : op->getOperands())
      if (isa<RankedTensorType>(operand.getType()) && !isRows(operand))
        return fail(op, "combines the rows with a tensor from outside the "
                        "layer");
    return success();
  }
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp)
    return fail(op, "is not row-wise");
  if (!linalgOp.hasPureTensorSemantics())
    return fail(op, "works on buffers");
  // A parallel loop that is the leading dimension of every row-carrying
  // operand and indexes no other operand.
  std::optional<unsigned> rowDim;
  SmallVector<utils::IteratorType> iterators = linalgOp.getIteratorTypesArray();
  for (OpOperand &operand : linalgOp->getOpOperands()) {
    AffineMap map = linalgOp.getMatchingIndexingMap(&operand);
    if (!isRows(operand.get()))
      continue;
    AffineExpr first = map.getNumResults() ? map.getResult(0) : AffineExpr();
    auto dim = llvm::dyn_cast_if_present<AffineDimExpr>(first);
    if (!dim || (rowDim && *rowDim != dim.getPosition())) {
      rowDim.reset();
      break;
    }
    rowDim = dim.getPosition();
  }
  bool ok = rowDim && iterators[*rowDim] == utils::IteratorType::parallel;
  for (OpOperand &operand : linalgOp->getOpOperands()) {
    if (!ok)
      break;
    AffineMap map = linalgOp.getMatchingIndexingMap(&operand);
    for (unsigned i = 0; i < map.getNumResults(); ++i)
      if (map.getResult(i).isFunctionOfDim(*rowDim) &&
          (!isRows(operand.get()) || i != 0))
        ok = false;
  }
  if (!ok)
    return fail(op, "mixes rows (no parallel loop over the leading row "
                    "dimension of every row-carrying operand)");
  // In a chunk the row loop counts from the chunk's first row: a body that
  // reads it would compute something else for the same row.
  if (linalgOp.getBlock()
          ->walk([&](linalg::IndexOp index) {
            return index.getDim() == *rowDim ? WalkResult::interrupt()
                                             : WalkResult::advance();
          })
          .wasInterrupted())
    return fail(op, "reads its row index (linalg.index), which is the "
                    "position in the chunk once chunked");
  return success();
}

/// Whether `v` is the number of local experts: the size of tokens_per_expert
/// (tensor.dim of it or of a cast of it, or that size as a constant).
bool RowWiseChecker::isExpertCount(Value v) const {
  if (auto dim = v.getDefiningOp<tensor::DimOp>())
    return counts.contains(dim.getSource()) &&
           isConstantIntValue(dim.getIndex(), 0);
  auto type = cast<RankedTensorType>(tokensPerExpert.getType());
  std::optional<int64_t> constant = getConstantIntValue(v);
  return constant && type.hasStaticShape() && *constant == type.getDimSize(0);
}

/// Whether `v` is the received row count: tensor.dim 0 of received rows.
bool RowWiseChecker::isReceivedRowCount(Value v) const {
  auto dim = v.getDefiningOp<tensor::DimOp>();
  return dim && received.contains(dim.getSource()) &&
         isConstantIntValue(dim.getIndex(), 0);
}

/// Whether `slice` takes (or puts) whole rows of `whole` at the current
/// segment: offsets [off, 0, ...], sizes [size, full, ...], unit strides.
bool RowWiseChecker::isSegmentSlice(OffsetSizeAndStrideOpInterface slice,
                                    RankedTensorType whole) const {
  SmallVector<OpFoldResult> offs = slice.getMixedOffsets();
  SmallVector<OpFoldResult> lens = slice.getMixedSizes();
  if (static_cast<int64_t>(offs.size()) != whole.getRank() ||
      !areAllConstantIntValue(slice.getMixedStrides(), 1))
    return false;
  auto value = [](OpFoldResult r) { return dyn_cast<Value>(r); };
  if (!offsets.contains(value(offs[0])) || !sizes.contains(value(lens[0])))
    return false;
  for (int64_t d = 1; d < whole.getRank(); ++d)
    if (!isConstantIntValue(offs[d], 0) || whole.isDynamicDim(d) ||
        !isConstantIntValue(lens[d], whole.getDimSize(d)))
      return false;
  return true;
}

/// A loop over the local experts whose iteration e reads only the segment
/// of expert e of received rows and writes only that segment of the rows it
/// assembles.
LogicalResult RowWiseChecker::checkSegmentLoop(scf::ForOp forOp) {
  if (!isConstantIntValue(forOp.getLowerBound(), 0) ||
      !isConstantIntValue(forOp.getStep(), 1) ||
      !isExpertCount(forOp.getUpperBound()))
    return fail(forOp, "is not a loop over the local experts (from 0 to the "
                       "size of tokens_per_expert, step 1)");
  loop = forOp;
  Block *body = forOp.getBody();
  Value expert = forOp.getInductionVar();
  // Segment sizes: index casts of tokens_per_expert[e]; segment offsets:
  // index casts of expert_offsets[e].
  for (Operation &op : *body)
    if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(op))
      if (auto extract = op.getOperand(0).getDefiningOp<tensor::ExtractOp>();
          extract && extract->getBlock() == body &&
          llvm::equal(extract.getIndices(), ArrayRef<Value>{expert})) {
        if (counts.contains(extract.getTensor()))
          sizes.insert(op.getResult(0));
        else if (starts.contains(extract.getTensor()))
          offsets.insert(op.getResult(0));
      }
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  // Records loop-carried value #i (and the loop's result) as `carried`, or
  // says what it is not.
  auto carry = [&](unsigned i, bool ok, Kind carried, StringRef what,
                   StringRef isNot) -> LogicalResult {
    if (!ok)
      return fail(forOp, "carries " + what + " (#" + Twine(i) +
                             ") that is not " + isNot);
    kinds[forOp.getRegionIterArgs()[i]] = carried;
    kinds[forOp.getResult(i)] = carried;
    return success();
  };
  // Loop-carried indices: segment offsets, 0 then plus the segment's size.
  // That prefix sum is the segment's start only without padding.
  for (auto [i, arg] : llvm::enumerate(forOp.getRegionIterArgs())) {
    if (!arg.getType().isIndex())
      continue;
    auto add = yield.getOperand(i).getDefiningOp<arith::AddIOp>();
    bool ok = isConstantIntValue(forOp.getInitArgs()[i], 0) && add &&
              add->getBlock() == body &&
              ((add.getLhs() == arg && sizes.contains(add.getRhs())) ||
               (add.getRhs() == arg && sizes.contains(add.getLhs())));
    if (failed(carry(i, ok, Kind::PerChunk, "an index",
                     "the segment offset (0, then plus the expert's "
                     "tokens_per_expert in every iteration)")))
      return failure();
    if (align > 1)
      return fail(forOp, "carries an index (#" + Twine(i) +
                             ") that is the prefix sum of tokens_per_expert, "
                             "but align(" + Twine(align) +
                             ") pads the segments (read their offsets from "
                             "'moecomm.expert_offsets')");
    offsets.insert(arg);
  }
  // Loop-carried tensors: the received rows assembled from the segments, a
  // tensor.empty of the received row count into which every iteration
  // inserts its expert's segment, and which nothing else reads.
  llvm::DenseSet<Operation *> assembling;
  for (auto [i, arg] : llvm::enumerate(forOp.getRegionIterArgs())) {
    if (arg.getType().isIndex())
      continue;
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    auto empty = forOp.getInitArgs()[i].getDefiningOp<tensor::EmptyOp>();
    auto insert = yield.getOperand(i).getDefiningOp<tensor::InsertSliceOp>();
    bool ok = type && type.getRank() > 0 && empty &&
              empty.getDynamicSizes().size() == 1 && type.isDynamicDim(0) &&
              isReceivedRowCount(empty.getDynamicSizes()[0]) && insert &&
              insert->getBlock() == body && insert.getDest() == arg &&
              arg.hasOneUse() &&
              insert.getSourceType().getRank() == type.getRank() &&
              isSegmentSlice(insert, type);
    if (failed(carry(i, ok, Kind::Rows, "a value",
                     "received rows assembled from segments (a "
                     "tensor.empty of the received row count, every "
                     "expert's segment inserted at its offset)")))
      return failure();
    assembling.insert(insert);
    received.insert(forOp.getResult(i));
  }
  for (Operation &op : body->without_terminator()) {
    if (assembling.contains(&op)) {
      Value source = cast<tensor::InsertSliceOp>(op).getSource();
      if (!loopRows.contains(source))
        return fail(&op, "in 'scf.for' inserts " + describe(source) +
                             ", which carries no rows of the segment");
      kinds[op.getResult(0)] = Kind::Rows;
      continue;
    }
    // The segment of received rows (recv, recv_weights, rows computed from
    // them) that belongs to this iteration's expert.
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op);
        slice && received.contains(slice.getSource()) &&
        !loopRows.contains(slice.getSource()) &&
        slice.getResultType().getRank() == slice.getSourceType().getRank() &&
        isSegmentSlice(slice, slice.getSourceType())) {
      kinds[slice.getResult()] = Kind::Rows;
      loopRows.insert(slice.getResult());
      continue;
    }
    if (failed(check(&op)))
      return failure();
  }
  loop = nullptr;
  offsets.clear();
  sizes.clear();
  loopRows.clear();
  return success();
}

} // namespace

LogicalResult
mlir::moecomm::checkRowWise(LayoutOp layout,
                            const llvm::SetVector<Operation *> &ops,
                            std::string &why) {
  RowWiseChecker checker(layout, why);
  for (Operation *op : ops)
    if (failed(checker.check(op)))
      return failure();
  return success();
}

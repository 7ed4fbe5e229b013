//===- ContiguousRaggedExchange.cpp - ragged calls that are all_to_alls ---===//
#include "Transforms/ContiguousRaggedExchange.h"

#include "Transforms/JaxRaggedAllToAll.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Diagnostics.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::moecomm;

namespace {

/// Whether `v` is the static extent of dimension 0 of the 1-D tensor `t`.
bool coversDim0(Value t, std::optional<int64_t> v) {
  auto type = dyn_cast<RankedTensorType>(t.getType());
  return v && type && type.getRank() == 1 && type.getDimSize(0) == *v;
}

/// The exclusive scan of `loop` whose prefix is loop-carried value `k`, if
/// it is one (ExclusiveScan's form).
std::optional<ExclusiveScan> scanAt(scf::ForOp loop, unsigned k) {
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  Value iv = loop.getInductionVar();
  auto insert = yield.getOperand(k).getDefiningOp<tensor::InsertOp>();
  if (!insert || insert.getDest() != loop.getRegionIterArgs()[k] ||
      insert.getIndices().size() != 1 || insert.getIndices()[0] != iv)
    return std::nullopt;
  // The running sum before this entry's size is added: exclusive.
  auto sum = dyn_cast<BlockArgument>(insert.getScalar());
  if (!sum || sum.getOwner() != loop.getBody() || sum == iv)
    return std::nullopt;
  unsigned j = sum.getArgNumber() - loop.getNumInductionVars();
  if (!isConstantIntValue(loop.getInitArgs()[j], 0))
    return std::nullopt;
  auto add = yield.getOperand(j).getDefiningOp<arith::AddIOp>();
  if (!add || (add.getLhs() != sum && add.getRhs() != sum))
    return std::nullopt;
  Value size = add.getLhs() == sum ? add.getRhs() : add.getLhs();
  auto extract = size.getDefiningOp<tensor::ExtractOp>();
  if (!extract || extract.getIndices().size() != 1 ||
      extract.getIndices()[0] != iv ||
      !loop.isDefinedOutsideOfLoop(extract.getTensor()))
    return std::nullopt;
  // Every entry, once, in order.
  std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound());
  if (!isConstantIntValue(loop.getLowerBound(), 0) ||
      !isConstantIntValue(loop.getStep(), 1) ||
      !coversDim0(insert.getDest(), upper) ||
      !coversDim0(extract.getTensor(), upper))
    return std::nullopt;
  return ExclusiveScan{extract.getTensor(), loop.getResult(k),
                       loop.getResult(j)};
}

} // namespace

bool mlir::moecomm::sendsOneRowPerRank(AllToAllOp exchange) {
  DenseIntElementsAttr counts;
  return matchPattern(exchange.getSendCounts(), m_Constant(&counts)) &&
         counts.getNumElements() == exchange.getTopology().getRanks() &&
         llvm::all_of(counts.getValues<APInt>(),
                      [](const APInt &one) { return one.isOne(); });
}

std::optional<ExclusiveScan> mlir::moecomm::exclusiveScanOf(Value v) {
  auto result = dyn_cast<OpResult>(v);
  auto loop = result ? dyn_cast<scf::ForOp>(result.getOwner()) : nullptr;
  if (!loop)
    return std::nullopt;
  for (unsigned k = 0, e = loop.getNumResults(); k < e; ++k)
    if (std::optional<ExclusiveScan> scan = scanAt(loop, k);
        scan && (scan->prefix == v || scan->total == v))
      return scan;
  return std::nullopt;
}

Value mlir::moecomm::peerExchangeOf(Value v, AllToAllOp &exchange) {
  if (auto cast = v.getDefiningOp<tensor::CastOp>())
    v = cast.getSource();
  auto collapse = v.getDefiningOp<tensor::CollapseShapeOp>();
  if (!collapse || collapse.getSrcType().getRank() != 2 ||
      collapse.getSrcType().getDimSize(1) != 1)
    return {};
  exchange = collapse.getSrc().getDefiningOp<AllToAllOp>();
  if (!exchange || exchange.getRecv() != collapse.getSrc())
    return {};
  auto expand = exchange.getSend().getDefiningOp<tensor::ExpandShapeOp>();
  int64_t ranks = exchange.getTopology().getRanks();
  if (!expand || expand.getSrcType().getRank() != 1 ||
      expand.getResultType().getShape() != ArrayRef<int64_t>{ranks, 1} ||
      !sendsOneRowPerRank(exchange))
    return {};
  return expand.getSrc();
}

std::optional<std::string>
mlir::moecomm::whyNotContiguous(Operation *call, int64_t ranks,
                                TopologyAttr topology) {
  // The import's reading of the call; its diagnostic becomes the reason.
  std::string refused;
  int64_t group = 0;
  {
    ScopedDiagnosticHandler capture(call->getContext(), [&](Diagnostic &d) {
      if (refused.empty())
        refused = d.str();
      return success();
    });
    if (failed(checkJaxRaggedAllToAll(call, group)))
      return "the call is not one moecomm-import-ragged-all-to-all reads (" +
             refused + ")";
  }
  if (group != ranks)
    return "its replica group has " + std::to_string(group) +
           " ranks, the exchange " + std::to_string(ranks);

  Value sendSizes = raggedOperand(call, RaggedOperand::sendSizes);
  Value recvSizes = raggedOperand(call, RaggedOperand::recvSizes);
  std::optional<ExclusiveScan> in =
      exclusiveScanOf(raggedOperand(call, RaggedOperand::inputOffsets));
  if (!in || in->prefix != raggedOperand(call, RaggedOperand::inputOffsets) ||
      in->sizes != sendSizes)
    return std::string("its input_offsets are not the exclusive scan of its "
                       "send_sizes (an scf.for of tensor.insert of the "
                       "running sum, then arith.addi of the size): the "
                       "segments it sends are not contiguous in rank order");

  AllToAllOp peers;
  Value theirs =
      peerExchangeOf(raggedOperand(call, RaggedOperand::outputOffsets), peers);
  std::optional<ExclusiveScan> out =
      theirs ? exclusiveScanOf(theirs) : std::nullopt;
  if (!out || out->prefix != theirs || out->sizes != recvSizes)
    return std::string(
        "its output_offsets are not the receivers' exclusive scans of their "
        "recv_sizes sent to each sender (tensor.expand_shape to [W, 1], "
        "'moecomm.all_to_all' with W ones as send counts, "
        "tensor.collapse_shape): the segments it receives are not contiguous "
        "in rank order");
  if (peers.getTopology() != topology)
    return std::string("the 'moecomm.all_to_all' of its output offsets has "
                       "another topology than the exchange");

  auto empty = raggedOperand(call, RaggedOperand::output)
                   .getDefiningOp<tensor::EmptyOp>();
  Value rows = empty && empty.getType().isDynamicDim(0)
                   ? empty.getDynamicSizes().front()
                   : Value();
  if (auto cast = rows ? rows.getDefiningOp<arith::IndexCastOp>() : nullptr)
    rows = cast.getIn();
  std::optional<ExclusiveScan> total =
      rows ? exclusiveScanOf(rows) : std::nullopt;
  if (!total || total->total != rows || total->sizes != recvSizes)
    return std::string("its output is not a 'tensor.empty' of the total of "
                       "an exclusive scan of its recv_sizes (the rows it "
                       "receives): rows it does not write would be observed");
  return std::nullopt;
}

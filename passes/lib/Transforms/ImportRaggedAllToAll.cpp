//===- ImportRaggedAllToAll.cpp - JAX ragged all-to-all to moecomm -----===//
//
// `moecomm-import-ragged-all-to-all` (Passes.td): JAX's
// `stablehlo.custom_call @ragged_all_to_all` (jax/_src/lax/parallel.py,
// `_ragged_all_to_all_lowering`), parsed unregistered by moecomm-opt, becomes
// a gather into destination order, moecomm.all_to_all of the rows and of the
// output offsets, and a scatter into the output, with XLA's RaggedAllToAll
// semantics (offsets are the sender's view of the receiver's output).
//
//===----------------------------------------------------------------------===//

#include "Transforms/JaxRaggedAllToAll.h"
#include "Transforms/OptionErrors.h"
#include "Transforms/RuntimeChecks.h"
#include "Transforms/TensorLoopBuilder.h"
#include "moecomm/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/RegionKindInterface.h"
#include "moecomm/Dialect/MoEComm/MoEComm.h"

using namespace mlir;
using namespace mlir::moecomm;

namespace mlir::moecomm {
#define GEN_PASS_DEF_MOECOMMIMPORTRAGGEDALLTOALL
#include "moecomm/Transforms/Passes.h.inc"
} // namespace mlir::moecomm

namespace {

/// The attributes of `op`: its attribute dictionary and, when it was written
/// with properties (`<{...}>`, as StableHLO prints its inherent attributes in
/// the generic form), those: an unregistered op keeps them as a dictionary.
/// A name in both takes the properties' value (checkJaxRaggedAllToAll refuses
/// such a call).
NamedAttrList allAttributes(Operation *op) {
  NamedAttrList attrs(op->getAttrDictionary());
  if (auto props =
          dyn_cast_if_present<DictionaryAttr>(op->getPropertiesAsAttribute()))
    for (NamedAttribute attr : props)
      attrs.set(attr.getName(), attr.getValue());
  return attrs;
}

/// What JAX calls the op and its target (XLA's custom-call registry name).
constexpr StringLiteral kCustomCall = "stablehlo.custom_call";
constexpr StringLiteral kTarget = "ragged_all_to_all";

} // namespace

LogicalResult mlir::moecomm::checkJaxRaggedAllToAll(Operation *op, int64_t &w) {
  auto fail = [&]() { return op->emitError() << kTarget << ": "; };

  // Where the call is and what it holds: the conversion puts loops and
  // values before the call and replaces its result, so the call must be an
  // ordinary op of a block with SSA dominance (a function body). In a graph
  // region (a module's top level) its operands may be its own result, and
  // the converted IR would be cyclic.
  if (mayBeGraphRegion(*op->getParentRegion()))
    return fail() << "the call must be in a function body (a region with "
                     "SSA dominance), not in '"
                  << op->getParentOp()->getName()
                  << "''s graph region, where an operand may be its own "
                     "result";
  if (op->getNumRegions() != 0 || op->getNumSuccessors() != 0)
    return fail() << "the call must have no regions and no successors, got "
                  << op->getNumRegions() << " and " << op->getNumSuccessors();
  if (op == &op->getBlock()->back())
    return fail() << "the call must not end its block (it is no terminator)";
  Attribute props = op->getPropertiesAsAttribute();
  if (props && !isa<DictionaryAttr>(props))
    return fail() << "properties must be a dictionary, got " << props;
  if (auto dict = dyn_cast_if_present<DictionaryAttr>(props))
    for (NamedAttribute attr : dict)
      if (Attribute other = op->getAttrDictionary().get(attr.getName()))
        return fail() << "'" << attr.getName().getValue()
                      << "' is both a property (" << attr.getValue()
                      << ") and an attribute (" << other << ")";

  NamedAttrList attrs = allAttributes(op);
  DenseIntElementsAttr groups;
  bool sawVersion = false;
  for (NamedAttribute attr : attrs) {
    StringRef name = attr.getName().getValue();
    Attribute value = attr.getValue();
    if (name == "call_target_name")
      continue;
    if (name == "api_version") {
      auto version = dyn_cast<IntegerAttr>(value);
      if (!version || !version.getType().isSignlessInteger(32) ||
          version.getInt() != 4)
        return fail() << "api_version must be 4 : i32 (the typed-FFI form JAX "
                         "emits), got "
                      << value;
      sawVersion = true;
      continue;
    }
    if (name == "has_side_effect" && isa<BoolAttr>(value))
      continue;
    if ((name == "called_computations" || name == "output_operand_aliases") &&
        isa<ArrayAttr>(value) && cast<ArrayAttr>(value).empty())
      continue;
    if (name == "backend_config") {
      auto config = dyn_cast<DictionaryAttr>(value);
      if (!config)
        return fail() << "backend_config must be a dictionary {replica_groups "
                         "= dense<[[0, ..., W-1]]> : tensor<1xWxi64>}, got "
                      << value;
      for (NamedAttribute entry : config) {
        StringRef key = entry.getName().getValue();
        if (key == "replica_groups") {
          groups = dyn_cast<DenseIntElementsAttr>(entry.getValue());
          if (!groups)
            return fail() << "backend_config's replica_groups must be dense "
                             "integer elements, got "
                          << entry.getValue();
          continue;
        }
        // JAX adds channel_id under SPMD: it names the collective for XLA's
        // scheduling and changes no data.
        if (key == "channel_id" && isa<IntegerAttr>(entry.getValue()))
          continue;
        return fail() << "backend_config entry '" << key << "' ("
                      << entry.getValue() << ") is not supported";
      }
      if (!groups)
        return fail() << "backend_config has no replica_groups";
      continue;
    }
    return fail() << "attribute '" << name << "' (" << value
                  << ") is not supported";
  }
  if (!sawVersion)
    return fail() << "api_version is missing (JAX emits 4 : i32)";
  if (!groups)
    return fail() << "backend_config is missing (it gives replica_groups)";

  // One group of every rank, in rank order: the expert-parallel group.
  ArrayRef<int64_t> shape = groups.getType().getShape();
  w = shape.size() == 2 ? shape[1] : 0;
  bool iota = shape.size() == 2 && shape[0] == 1 && w >= 1 &&
              groups.getElementType().isSignlessInteger(64);
  // The group becomes the all-to-alls' topology: its limits are the
  // attribute's (checked before reading up to W values).
  if (iota && failed(TopologyAttr::verify(
                  [&]() {
                    return fail()
                           << "replica_groups' group of " << w << " ranks: ";
                  },
                  w, /*ranksPerNode=*/w, /*experts=*/0, /*slots=*/0,
                  DenseI64ArrayAttr(), ReplicaChoice::locality)))
    return failure();
  if (iota) {
    int64_t expect = 0;
    for (const APInt &v : groups.getValues<APInt>())
      iota = iota && v.getSExtValue() == expect++;
  }
  if (!iota)
    return fail() << "replica_groups must be one group of all ranks in order, "
                     "dense<[[0, 1, ..., W-1]]> : tensor<1xWxi64> (the "
                     "expert-parallel group), got "
                  << groups;

  if (op->getNumOperands() != 6 || op->getNumResults() != 1)
    return fail() << "expected 6 operands (operand, output, input_offsets, "
                     "send_sizes, output_offsets, recv_sizes) and 1 result, "
                     "got "
                  << op->getNumOperands() << " and " << op->getNumResults();
  static constexpr StringLiteral names[] = {"operand",        "output",
                                            "input_offsets",  "send_sizes",
                                            "output_offsets", "recv_sizes"};
  // An encoding (sparsity, layout) changes what the tensor's elements mean;
  // the conversion reads them as plain dense rows.
  for (unsigned i = 0; i < 7; ++i) {
    Type type =
        i < 6 ? op->getOperand(i).getType() : op->getResult(0).getType();
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (tensor && tensor.getEncoding())
      return fail() << (i < 6 ? StringRef(names[i]) : StringRef("the result"))
                    << "'s type " << type << " has an encoding ("
                    << tensor.getEncoding()
                    << "): only tensors without one are supported";
  }
  auto operandType = [&](unsigned i) {
    return dyn_cast<RankedTensorType>(op->getOperand(i).getType());
  };
  for (unsigned i = 0; i < 2; ++i) {
    RankedTensorType t = operandType(i);
    if (!t || t.getRank() != 2 ||
        (!t.getElementType().isF32() && !t.getElementType().isBF16()))
      return fail() << names[i]
                    << " must be a 2-D tensor of bf16 or f32 rows (what "
                       "moecomm.all_to_all moves), got "
                    << op->getOperand(i).getType();
  }
  RankedTensorType rows = operandType(0), output = operandType(1);
  if (rows.getElementType() != output.getElementType() ||
      rows.getDimSize(1) != output.getDimSize(1) ||
      ShapedType::isDynamic(rows.getDimSize(1)))
    return fail() << "operand " << rows << " and output " << output
                  << " must have the same element type and the same static "
                     "row width";
  if (rows.getDimSize(1) == 0)
    return fail() << "rows of width 0 (" << rows
                  << ") are not supported: moecomm.all_to_all moves rows of "
                     "at least one element";
  if (op->getResult(0).getType() != output)
    return fail() << "the result type " << op->getResult(0).getType()
                  << " must be the output's, " << output;
  for (unsigned i = 2; i < 6; ++i) {
    RankedTensorType t = operandType(i);
    if (!t || t.getRank() != 1 || t.getDimSize(0) != w ||
        (!t.getElementType().isSignlessInteger(32) &&
         !t.getElementType().isSignlessInteger(64)))
      return fail() << names[i] << " must be tensor<" << w << "xi32> or tensor<"
                    << w << "xi64> (one entry per rank of the group), got "
                    << op->getOperand(i).getType();
  }
  return success();
}

bool mlir::moecomm::isJaxRaggedAllToAll(Operation *op) {
  if (op->getName().getStringRef() != kCustomCall)
    return false;
  auto target = dyn_cast_if_present<StringAttr>(
      allAttributes(op).get("call_target_name"));
  return target && target.getValue() == kTarget;
}

namespace {

/// Emits the conversion of one checked custom call.
class Importer : TensorLoopBuilder {
public:
  Importer(Operation *op, int64_t ranks, int64_t ranksPerNode,
           CheckTexts &texts)
      : TensorLoopBuilder(op), op(op), ranks(ranks),
        topology(TopologyAttr::get(op->getContext(), ranks, ranksPerNode,
                                   /*experts=*/0)),
        checks(b, op, kTarget, texts) {}

  void run() {
    Value operand = raggedOperand(op, RaggedOperand::operand);
    Value output = raggedOperand(op, RaggedOperand::output);
    Value inputOffsets = raggedOperand(op, RaggedOperand::inputOffsets);
    Value sendSizes = raggedOperand(op, RaggedOperand::sendSizes);
    Value outputOffsets = raggedOperand(op, RaggedOperand::outputOffsets);
    Value recvSizes = raggedOperand(op, RaggedOperand::recvSizes);
    auto rowsType = cast<RankedTensorType>(operand.getType());
    int64_t h = rowsType.getDimSize(1);
    Value c0 = index(0), c1 = index(1);
    Value n = i64(tensor::DimOp::create(b, operand, 0));
    Value m = i64(tensor::DimOp::create(b, output, 0));

    // 1. On the sender: check each segment lies in `operand`, count the rows
    // and put output_offsets[j]'s bits in row j of a [W, 2] f32 tensor.
    // `valid`: every segment passed (a failed check records the error, so
    // the thread's next collective call shares it with the peers and every
    // later runtime call does nothing).
    Value offsetRows =
        tensor::EmptyOp::create(b, ArrayRef<int64_t>{ranks, 2}, b.getF32Type());
    scf::ForOp sizes = forEachRank(
        ValueRange{c0, offsetRows, boolean(true)},
        [&](Value j, ValueRange iter) {
          Value start = element(inputOffsets, j), size = element(sendSizes, j);
          Value zero = i64Constant(0);
          Value ok = andAll({cmp(arith::CmpIPredicate::sge, start, zero),
                             cmp(arith::CmpIPredicate::sge, size, zero),
                             cmp(arith::CmpIPredicate::sle, size, n),
                             cmp(arith::CmpIPredicate::sle, start,
                                 arith::SubIOp::create(b, n, size))});
          check(ok,
                "input_offsets[j] + send_sizes[j] must lie in the operand's "
                "rows, both >= 0 (j = {}: {} + {}, {} rows)",
                {i64(j), start, size, n});
          Value bits = element(outputOffsets, j);
          Value low = arith::TruncIOp::create(b, b.getI32Type(), bits);
          Value high = arith::TruncIOp::create(
              b, b.getI32Type(),
              arith::ShRUIOp::create(b, bits, i64Constant(32)));
          Value rowsOut = iter[1];
          rowsOut = tensor::InsertOp::create(
              b, arith::BitcastOp::create(b, b.getF32Type(), low), rowsOut,
              ValueRange{j, c0});
          rowsOut = tensor::InsertOp::create(
              b, arith::BitcastOp::create(b, b.getF32Type(), high), rowsOut,
              ValueRange{j, c1});
          return SmallVector<Value>{
              arith::AddIOp::create(b, iter[0], indexOf(size)), rowsOut,
              arith::AndIOp::create(b, iter[2], ok)};
        });
    Value valid = sizes.getResult(2);

    // 2. Gather the segments into destination order; nothing when a check
    // failed (no row is read out of bounds).
    Value send0 = tensor::EmptyOp::create(
        b, ArrayRef<int64_t>{ShapedType::kDynamic, h},
        rowsType.getElementType(),
        ValueRange{arith::SelectOp::create(b, valid, sizes.getResult(0), c0)});
    scf::ForOp gather = forEachRank(ValueRange{c0, send0}, [&](Value j,
                                                               ValueRange
                                                                   iter) {
      Value start = indexOf(element(inputOffsets, j));
      Value size = indexOf(element(sendSizes, j));
      start = arith::SelectOp::create(b, valid, start, c0);
      size = arith::SelectOp::create(b, valid, size, c0);
      Value segment = slice(operand, start, size, h);
      Value send = insert(segment, iter[1], iter[0], size, h);
      return SmallVector<Value>{arith::AddIOp::create(b, iter[0], size), send};
    });

    // 3. The rows, then each sender's output offset for this rank (one row
    // per peer, bit for bit).
    auto rowsA2a =
        AllToAllOp::create(b, gather.getResult(1), sendSizes, topology);
    int64_t one = 1;
    Value ones = arith::ConstantOp::create(
        b, cast<TypedAttr>(DenseElementsAttr::get(
               RankedTensorType::get({ranks}, b.getI64Type()),
               llvm::ArrayRef(one))));
    auto offsetsA2a = AllToAllOp::create(b, sizes.getResult(1), ones, topology);

    // 4. On the receiver: check the counts and offsets, write each source's
    // rows into the output at its sender's offset. A failed exchange (its
    // error recorded by the runtime on every rank, moecomm_compiled.h)
    // leaves its results empty and its counts unwritten: then the output
    // stays as it is. After a failed check no more rows are written.
    Value received = i64(tensor::DimOp::create(b, rowsA2a.getRecv(), 0));
    Value arrived = cmp(arith::CmpIPredicate::eq,
                        i64(tensor::DimOp::create(b, offsetsA2a.getRecv(), 0)),
                        i64Constant(ranks));
    auto scatter = scf::IfOp::create(
        b, arrived,
        [&](OpBuilder &nested, Location) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          scf::YieldOp::create(b,
                               scatterRows(rowsA2a, offsetsA2a.getRecv(),
                                           recvSizes, output, received, m, h));
        },
        [&](OpBuilder &nested, Location) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
          scf::YieldOp::create(b, output);
        });
    op->getResult(0).replaceAllUsesWith(scatter.getResult(0));
    op->erase();
  }

private:
  /// `output` with each source's rows (`rows`' receive side, `received`
  /// rows in all) written at the offset its sender gave (`offsets`: [W, 2]
  /// f32 bit patterns), after checking them against `recvSizes` and the
  /// output's `m` rows.
  Value scatterRows(AllToAllOp rows, Value offsets, Value recvSizes,
                    Value output, Value received, Value m, int64_t h) {
    Value c0 = index(0);
    scf::ForOp scatter = forEachRank(
        ValueRange{c0, output, boolean(true)}, [&](Value i, ValueRange iter) {
          Value count = element(rows.getRecvCounts(), i);
          Value left = arith::SubIOp::create(b, received, i64(iter[0]));
          Value inReceived =
              andAll({cmp(arith::CmpIPredicate::sge, count, i64Constant(0)),
                      cmp(arith::CmpIPredicate::sle, count, left)});
          check(inReceived,
                "the rows from rank j exceed those received (the exchange "
                "failed) (j = {}: {} rows, {} left)",
                {i64(i), count, left});
          Value expected = element(recvSizes, i);
          Value sizeMatches = cmp(arith::CmpIPredicate::eq, count, expected);
          check(sizeMatches,
                "recv_sizes[j] must equal the rows rank j sent here (its "
                "send_sizes entry for this rank) (j = {}: recv_sizes[j] = "
                "{}, {} arrived)",
                {i64(i), expected, count});
          auto word = [&](int64_t col) {
            Value f = tensor::ExtractOp::create(b, offsets,
                                                ValueRange{i, index(col)});
            return arith::ExtUIOp::create(
                b, b.getI64Type(),
                arith::BitcastOp::create(b, b.getI32Type(), f));
          };
          Value offset = arith::OrIOp::create(
              b, word(0), arith::ShLIOp::create(b, word(1), i64Constant(32)));
          Value inOutput =
              andAll({cmp(arith::CmpIPredicate::sge, offset, i64Constant(0)),
                      cmp(arith::CmpIPredicate::sle, offset,
                          arith::SubIOp::create(b, m, count))});
          check(inOutput,
                "output_offsets[j] (given by rank j for this rank) + the rows "
                "from j must lie in the output's rows, >= 0 (j = {}: {} + {}, "
                "{} rows)",
                {i64(i), offset, count, m});
          Value valid = andAll({iter[2], inReceived, sizeMatches, inOutput});
          Value size = arith::SelectOp::create(b, valid, indexOf(count), c0);
          Value at = arith::SelectOp::create(b, valid, indexOf(offset), c0);
          Value segment = slice(rows.getRecv(), iter[0], size, h);
          Value out = insert(segment, iter[1], at, size, h);
          return SmallVector<Value>{arith::AddIOp::create(b, iter[0], size),
                                    out, valid};
        });
    return scatter.getResult(1);
  }

  /// scf.for over the ranks j in [0, W) carrying `init`; `body` builds one
  /// iteration with `b` and returns the values carried to the next.
  scf::ForOp forEachRank(ValueRange init, Body body) {
    return forLoop(index(0), index(ranks), init, body);
  }
  /// Unless `ok`, records an invalid-argument error of this rank
  /// (RuntimeChecks.h): "ragged_all_to_all at FILE:LINE:COL: rank R:
  /// `what`", each "{}" in `what` replaced by the next of `values`.
  void check(Value ok, StringRef what, ArrayRef<Value> values) {
    checks.check(ok, what, values);
  }

  Operation *op;
  int64_t ranks;
  TopologyAttr topology;
  /// The texts' globals are shared by the module's imports.
  RuntimeChecks checks;
};

struct ImportRaggedAllToAllPass
    : public WithOptionErrors<
          mlir::moecomm::impl::MoECommImportRaggedAllToAllBase<
              ImportRaggedAllToAllPass>> {
  using WithOptionErrors::WithOptionErrors;

  LogicalResult initialize(MLIRContext *context) override {
    if (ranksPerNode < 0)
      return emitOptionError(context, getArgument())
             << "ranks-per-node must be >= 0 (0: the group's size, one "
                "node), got "
             << static_cast<int64_t>(ranksPerNode);
    return success();
  }

  void runOnOperation() override {
    SmallVector<std::pair<Operation *, int64_t>> calls;
    bool ok = true;
    getOperation().walk([&](Operation *op) {
      if (!isJaxRaggedAllToAll(op))
        return;
      // moecomm-pipeline bufferizes the functions of its module only (One-Shot
      // Module Bufferize): the conversion's loops in a nested module's
      // function would stay on tensors and fail to lower.
      if (auto inner = op->getParentOfType<ModuleOp>();
          inner != getOperation()) {
        InFlightDiagnostic diag =
            op->emitError() << kTarget << ": the call is in a nested module";
        if (std::optional<StringRef> name = inner.getSymName())
          diag << " @" << *name;
        diag << ": moecomm-pipeline compiles only the functions of the "
                "top-level module";
        ok = false;
        return;
      }
      int64_t ranks = 0;
      if (failed(checkJaxRaggedAllToAll(op, ranks))) {
        ok = false;
        return;
      }
      if (ranksPerNode > 0 && ranks % ranksPerNode) {
        op->emitError() << kTarget << ": ranks-per-node="
                        << static_cast<int64_t>(ranksPerNode)
                        << " does not divide the group's " << ranks << " ranks";
        ok = false;
        return;
      }
      calls.push_back({op, ranks});
    });
    // Nothing is converted when any call is refused.
    if (!ok)
      return signalPassFailure();
    CheckTexts texts(getOperation());
    for (auto [op, ranks] : calls)
      Importer(op, ranks, ranksPerNode > 0 ? ranksPerNode : ranks, texts).run();
  }
};

} // namespace

//===- BufferizableOpInterfaceImpl.cpp - moecomm ops -> runtime calls ------===//
//
// One-shot bufferization models for every moecomm op. Each op reads its
// tensor operands and writes fresh buffers (except exchange_wait, which
// completes the buffers its exchange_start allocated, in place); bufferizing
// an op emits the runtime calls that implement it (RuntimeAbi.h), so
// bufferization *is* the lowering to the runtime level. Every model is
// RuntimeCallModel plus one `lower` function: the calls for that op.
//
//===----------------------------------------------------------------------===//

#include "moecomm/Conversion/BufferizableOpInterfaceImpl.h"

#include "Conversion/MoECommToRuntime/RuntimeAbi.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::moecomm;

namespace {

/// Whether rows of `type` are provably contiguous (stride 1 along the last
/// dimension, the row length between rows), as the runtime requires.
bool hasContiguousRows(MemRefType type) {
  return type.areTrailingDimsContiguous(type.getRank());
}

/// What the lowering of one op works with: the rewriter (at the op), the ABI
/// emitter, and the bufferization options and state that give the op's
/// operand buffers and allocate its result buffers.
struct RuntimeLowering {
  RewriterBase &rewriter;
  RuntimeAbi abi;
  const BufferizationOptions &options;
  const BufferizationState &state;

  /// Buffers of the tensors `values` (null values stay null), cast to the
  /// ABI layout. A view whose rows are not contiguous (e.g. a column slice)
  /// is copied into a fresh buffer first.
  FailureOr<SmallVector<Value>> inputs(ValueRange values) {
    SmallVector<Value> buffers;
    for (Value v : values) {
      if (!v) {
        buffers.push_back(Value());
        continue;
      }
      FailureOr<Value> buffer = getBuffer(rewriter, v, options, state);
      if (failed(buffer))
        return failure();
      auto type = cast<MemRefType>(buffer->getType());
      if (!hasContiguousRows(type)) {
        Location loc = v.getLoc();
        SmallVector<Value> sizes;
        for (int64_t d = 0; d < type.getRank(); ++d)
          if (type.isDynamicDim(d))
            sizes.push_back(memref::DimOp::create(rewriter, loc, *buffer, d));
        FailureOr<Value> copy = options.createAlloc(
            rewriter, loc,
            MemRefType::get(type.getShape(), type.getElementType()), sizes);
        if (failed(copy) ||
            failed(options.createMemCpy(rewriter, loc, *buffer, *copy)))
          return failure();
        buffer = *copy;
      }
      buffers.push_back(abi.abiMemRef(*buffer));
    }
    return buffers;
  }

  /// New identity-layout buffers for the tensors `results`, whose dynamic
  /// leading dimension is `rows` (index) each.
  FailureOr<SmallVector<Value>> alloc(ValueRange results, Value rows) {
    SmallVector<Value> buffers;
    for (Value r : results) {
      FailureOr<Value> buffer =
          abi.alloc(options, cast<RankedTensorType>(r.getType()), rows);
      if (failed(buffer))
        return failure();
      buffers.push_back(*buffer);
    }
    return buffers;
  }
};

/// The bufferization every model shares: `Model::lower(op, lowering)` emits
/// the op's runtime calls before it and returns its replacement values (a
/// buffer for each tensor result, a handle or request value for the others,
/// in result order); the op is then replaced by them. An op reads its tensor
/// operands, or, `InPlace`, writes them (exchange_wait).
template <typename Model, typename OpTy, bool InPlace = false>
struct RuntimeCallModel
    : public BufferizableOpInterface::ExternalModel<Model, OpTy> {
  using Op = OpTy;

  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return !InPlace;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return InPlace;
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    rewriter.setInsertionPoint(op);
    RuntimeLowering lowering{rewriter, RuntimeAbi(rewriter, op->getLoc(), op),
                             options, state};
    FailureOr<SmallVector<Value>> replacements =
        Model::lower(cast<OpTy>(op), lowering);
    if (failed(replacements))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op, *replacements);
    return success();
  }
};

/// An op that writes a fresh buffer for each tensor result (all but
/// exchange_wait).
template <typename Model, typename OpTy>
struct FreshResultsModel : RuntimeCallModel<Model, OpTy> {
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  /// Handles and requests are no buffers.
  bool bufferizesToAllocation(Operation *, Value value) const {
    return isa<TensorType>(value.getType());
  }
  FailureOr<BufferLikeType>
  getBufferType(Operation *, Value value, const BufferizationOptions &,
                const BufferizationState &, SmallVector<Value> &) const {
    auto type = cast<RankedTensorType>(value.getType());
    return cast<BufferLikeType>(
        MemRefType::get(type.getShape(), type.getElementType()));
  }
};

/// Appends the ABI form of each non-null buffer.
void appendAbi(RuntimeAbi &abi, SmallVectorImpl<Value> &args,
               ArrayRef<Value> buffers) {
  for (Value b : buffers)
    if (b)
      args.push_back(abi.abiMemRef(b));
}

/// The FP8 format of `rows` (FP8, with their `scales`): that of the
/// quantize or quantizing pack that made them, found back through the ops
/// that move FP8 rows unchanged (permute, pack, exchange and its async
/// form); else the one their scales have (getFp8WireOfScales: rows from
/// elsewhere, e.g. a function argument, whose scales say the format except
/// that one scale per row (H <= 32) does not tell the E8M0 formats apart,
/// which then move and dequantize alike).
WireDtype fp8Format(Value rows, Value scales) {
  // Only FP8 values: a quantizing pack without `wire` (fp8_e4m3) reads
  // bf16/f32 rows, which no quantize made.
  for (Value v = rows;
       v && isa<Float8E4M3FNType>(cast<ShapedType>(v.getType()).getElementType());) {
    Operation *def = v.getDefiningOp();
    if (auto quant = dyn_cast_or_null<QuantizeOp>(def))
      return quant.getFp8Wire();
    if (auto pack = dyn_cast_or_null<PackOp>(def); pack && pack.getWire())
      return *pack.getWire();
    if (auto permute = dyn_cast_or_null<PermuteOp>(def))
      v = permute.getIn();
    else if (auto pack = dyn_cast_or_null<PackOp>(def))
      v = pack.getIn();
    else if (auto exchange = dyn_cast_or_null<ExchangeOp>(def))
      v = exchange.getSend();
    else if (auto wait = dyn_cast_or_null<ExchangeWaitOp>(def))
      v = wait.getRecv();
    else if (auto start = dyn_cast_or_null<ExchangeStartOp>(def))
      v = start.getSend();
    else
      v = Value();
  }
  // Verified: FP8 rows have the scales of one of the formats.
  return *getFp8WireOfScales(cast<RankedTensorType>(scales.getType()),
                             cast<RankedTensorType>(rows.getType()).getDimSize(1));
}

/// ABI name suffix of `rows`: their element type, or for FP8 rows (those
/// with `scales`) their format.
std::string rowsSuffix(Value rows, Value scales) {
  if (scales)
    return RuntimeAbi::suffix(fp8Format(rows, scales)).str();
  return RuntimeAbi::suffix(cast<ShapedType>(rows.getType()).getElementType())
      .str();
}

/// `moecomm_rt_gather_<in>_<out>`: permute, pack and unpack all gather (or
/// sum) rows through the layout's map for one step of a direction.
FailureOr<SmallVector<Value>> lowerGather(Operation *op, RuntimeLowering &l,
                                          Value in, Value scales, Value handle,
                                          Direction direction, int64_t step,
                                          bool weighted) {
  FailureOr<SmallVector<Value>> inputs = l.inputs({in, scales});
  if (failed(inputs))
    return failure();
  Value layout = l.abi.pointer(handle);
  FailureOr<SmallVector<Value>> outputs = l.alloc(
      op->getResults(), l.abi.rows(layout, direction, step, false));
  if (failed(outputs))
    return failure();
  Value outScales = op->getNumResults() > 1 ? op->getResult(1) : Value();
  std::string name = "moecomm_rt_gather_" + rowsSuffix(in, scales) + "_" +
                     rowsSuffix(op->getResult(0), outScales);
  SmallVector<Value> args = {layout, l.abi.i32(static_cast<int32_t>(direction)),
                             l.abi.i64(step), l.abi.i32(weighted)};
  appendAbi(l.abi, args, *inputs);
  appendAbi(l.abi, args, *outputs);
  l.abi.call(name, args);
  return outputs;
}

struct PermuteModel : FreshResultsModel<PermuteModel, PermuteOp> {
  static FailureOr<SmallVector<Value>> lower(PermuteOp op, RuntimeLowering &l) {
    return lowerGather(op, l, op.getIn(), op.getScales(), op.getHandle(),
                       op.getDirection(), op.getStage().value_or(kOutputStep),
                       op.getWeighted());
  }
};

struct PackModel : FreshResultsModel<PackModel, PackOp> {
  static FailureOr<SmallVector<Value>> lower(PackOp op, RuntimeLowering &l) {
    return lowerGather(op, l, op.getIn(), op.getScales(), op.getHandle(),
                       op.getDirection(), op.getStage(), op.getWeighted());
  }
};

struct UnpackModel : FreshResultsModel<UnpackModel, UnpackOp> {
  static FailureOr<SmallVector<Value>> lower(UnpackOp op, RuntimeLowering &l) {
    return lowerGather(op, l, op.getIn(), op.getScales(), op.getHandle(),
                       op.getDirection(), kOutputStep, op.getWeighted());
  }
};

/// quantize / dequantize: local conversions with as many rows as the input,
/// calling `Model::name(op)`.
template <typename Model, typename OpTy>
struct ConvertModel : FreshResultsModel<Model, OpTy> {
  static FailureOr<SmallVector<Value>> lower(OpTy op, RuntimeLowering &l) {
    FailureOr<SmallVector<Value>> inputs = l.inputs(op->getOperands());
    if (failed(inputs))
      return failure();
    Value rows = memref::DimOp::create(l.rewriter, op.getLoc(), (*inputs)[0], 0);
    FailureOr<SmallVector<Value>> outputs = l.alloc(op->getResults(), rows);
    if (failed(outputs))
      return failure();
    SmallVector<Value> args(*inputs);
    appendAbi(l.abi, args, *outputs);
    l.abi.call(Model::name(op), args);
    return outputs;
  }
};

/// `<name>_<elt>` for fp8_e4m3 (the ABI's first FP8 format), else
/// `<name>_<elt>_<format>`.
std::string convertName(StringRef name, Type elt, WireDtype wire) {
  std::string result = (name + "_" + RuntimeAbi::suffix(elt)).str();
  if (wire != WireDtype::fp8_e4m3)
    result += ("_" + RuntimeAbi::suffix(wire)).str();
  return result;
}

struct QuantizeModel : ConvertModel<QuantizeModel, QuantizeOp> {
  static std::string name(QuantizeOp op) {
    Type elt = cast<RankedTensorType>(op.getIn().getType()).getElementType();
    return convertName("moecomm_rt_quantize", elt, op.getFp8Wire());
  }
};

struct DequantizeModel : ConvertModel<DequantizeModel, DequantizeOp> {
  static std::string name(DequantizeOp op) {
    Type elt = cast<RankedTensorType>(op.getOut().getType()).getElementType();
    return convertName("moecomm_rt_dequantize", elt, op.getFp8Wire());
  }
};

/// exchange and exchange_start: receive buffers sized by the layout, then
/// `Model::call`, which returns the op's replacement values.
template <typename Model, typename OpTy>
struct ExchangeModel : FreshResultsModel<Model, OpTy> {
  static FailureOr<SmallVector<Value>> lower(OpTy op, RuntimeLowering &l) {
    FailureOr<SmallVector<Value>> inputs =
        l.inputs({op.getSend(), op.getScales()});
    if (failed(inputs))
      return failure();
    Value layout = l.abi.pointer(op.getHandle());
    SmallVector<Value> recvValues = {op.getRecv()};
    if (op.getRecvScales())
      recvValues.push_back(op.getRecvScales());
    FailureOr<SmallVector<Value>> outputs =
        l.alloc(recvValues,
                l.abi.rows(layout, op.getDirection(), op.getStage(), true));
    if (failed(outputs))
      return failure();
    std::string rows = rowsSuffix(op.getSend(), op.getScales());
    SmallVector<Value> args = {
        layout, l.abi.i32(static_cast<int32_t>(op.getDirection())),
        l.abi.i64(op.getStage())};
    appendAbi(l.abi, args, *inputs);
    appendAbi(l.abi, args, *outputs);
    return Model::call(l.abi, rows, args, *outputs, op);
  }
};

struct ExchangeOpModel : ExchangeModel<ExchangeOpModel, ExchangeOp> {
  static SmallVector<Value> call(RuntimeAbi &abi, StringRef rows,
                                 ValueRange args, ArrayRef<Value> outputs,
                                 ExchangeOp) {
    abi.call(("moecomm_rt_exchange_" + rows).str(), args);
    return SmallVector<Value>(outputs);
  }
};

struct ExchangeStartModel : ExchangeModel<ExchangeStartModel, ExchangeStartOp> {
  static SmallVector<Value> call(RuntimeAbi &abi, StringRef rows,
                                 ValueRange args, ArrayRef<Value> outputs,
                                 ExchangeStartOp op) {
    Type ptr = LLVM::LLVMPointerType::get(op->getContext());
    Value request =
        abi.call(("moecomm_rt_exchange_start_" + rows).str(), args, ptr)[0];
    SmallVector<Value> results = {abi.wrap(request, op.getRequest().getType())};
    results.append(outputs.begin(), outputs.end());
    return results;
  }
};

/// exchange_wait completes the buffers of its exchange_start in place.
struct ExchangeWaitModel
    : RuntimeCallModel<ExchangeWaitModel, ExchangeWaitOp, /*InPlace=*/true> {
  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &) const {
    auto wait = cast<ExchangeWaitOp>(op);
    if (operand.get() == wait.getRecv())
      return {{wait.getOut(), BufferRelation::Equivalent}};
    if (wait.getRecvScales() && operand.get() == wait.getRecvScales())
      return {{wait.getOutScales(), BufferRelation::Equivalent}};
    return {};
  }
  static FailureOr<SmallVector<Value>> lower(ExchangeWaitOp op,
                                             RuntimeLowering &l) {
    SmallVector<Value> buffers;
    for (Value v : {op.getRecv(), op.getRecvScales()}) {
      if (!v)
        continue;
      FailureOr<Value> buffer = getBuffer(l.rewriter, v, l.options, l.state);
      if (failed(buffer))
        return failure();
      buffers.push_back(*buffer);
    }
    l.abi.call("moecomm_rt_wait", {l.abi.pointer(op.getRequest())});
    return buffers;
  }
};

/// The layout call shared by moecomm.layout and the collective dispatch;
/// returns the runtime layout pointer. `hidden` (0: unknown) and `wire`
/// inform the runtime's `auto` and its statistics; `align` (none: 1) pads
/// the expert segments of the dispatch output. The topology's expert
/// placement goes along as its slot count, a constant global of its slots'
/// experts and the replica choice (0, null, locality without one).
Value callLayout(RuntimeAbi &abi, ArrayRef<Value> routing, TopologyAttr topo,
                 Strategy strategy, std::optional<int64_t> capacity,
                 std::optional<int64_t> align, int64_t hidden = 0,
                 WireDtype wire = WireDtype::bf16) {
  Type idx = cast<MemRefType>(routing[0].getType()).getElementType();
  Type ptr = LLVM::LLVMPointerType::get(topo.getContext());
  return abi.call(("moecomm_rt_layout_" + RuntimeAbi::suffix(idx)).str(),
                  {routing[0], routing[1], abi.i64(topo.getRanks()),
                   abi.i64(topo.getRanksPerNode()), abi.i64(topo.getExperts()),
                   abi.i32(static_cast<int32_t>(strategy)),
                   abi.i64(capacity.value_or(0)), abi.i64(hidden),
                   abi.i32(getWireDataType(wire)),
                   abi.i64(align.value_or(1)),
                   abi.i64(topo.getPlacement() ? topo.getSlots() : 0),
                   topo.getPlacement()
                       ? abi.constantArray("moecomm_placement",
                                           topo.getPlacement().asArrayRef())
                       : abi.nullPointer(),
                   abi.i32(static_cast<int32_t>(topo.getReplicaChoice()))},
                  ptr)[0];
}

/// recv_weights and tokens_per_expert buffers of a layout (empty, and not
/// filled, when nothing reads them).
FailureOr<SmallVector<Value>> layoutOutputs(RuntimeLowering &l, Value layout,
                                            Value recvWeights,
                                            Value tokensPerExpert) {
  RuntimeAbi &abi = l.abi;
  Value rows =
      recvWeights.use_empty()
          ? arith::ConstantIndexOp::create(l.rewriter, layout.getLoc(), 0)
          : abi.rows(layout, Direction::dispatch, kOutputStep, false);
  FailureOr<Value> weights = abi.alloc(
      l.options, cast<RankedTensorType>(recvWeights.getType()), rows);
  FailureOr<Value> counts = abi.alloc(
      l.options, cast<RankedTensorType>(tokensPerExpert.getType()), Value());
  if (failed(weights) || failed(counts))
    return failure();
  if (!recvWeights.use_empty())
    abi.call("moecomm_rt_recv_weights", {layout, abi.abiMemRef(*weights)});
  if (!tokensPerExpert.use_empty())
    abi.call("moecomm_rt_tokens_per_expert", {layout, abi.abiMemRef(*counts)});
  return SmallVector<Value>{*weights, *counts};
}

/// The row width and wire dtype of a staged layout, read off the rows its
/// handle's first dispatch exchange sends (or, with a single rank, the rows
/// the first dispatch output is unpacked from) in this function; the
/// runtime reports them to drivers (moecommCompiledGetStats). First in
/// program order: that is the dispatch's, a cached_dispatch along the same
/// handle (a backward) may send rows of another dtype. Without such an op:
/// unknown width, bf16.
std::pair<int64_t, WireDtype> stagedRowFormat(LayoutOp op) {
  Value wireRows, wireScales;
  Operation *from = nullptr;
  bool fromExchange = false;
  auto take = [&](Operation *user, Value rows, Value scales, bool exchange) {
    // An exchange beats an unpack; among the same kind, the earlier op.
    bool earlier = from && from->getBlock() == user->getBlock() &&
                   user->isBeforeInBlock(from);
    if (from &&
        (fromExchange > exchange || (fromExchange == exchange && !earlier)))
      return;
    from = user;
    fromExchange = exchange;
    wireRows = rows;
    wireScales = scales;
  };
  for (Operation *user : op.getHandle().getUsers()) {
    if (auto exchange = dyn_cast<ExchangeOp>(user);
        exchange && exchange.getDirection() == Direction::dispatch)
      take(user, exchange.getSend(), exchange.getScales(), true);
    else if (auto start = dyn_cast<ExchangeStartOp>(user);
             start && start.getDirection() == Direction::dispatch)
      take(user, start.getSend(), start.getScales(), true);
    else if (auto unpack = dyn_cast<UnpackOp>(user);
             unpack && unpack.getDirection() == Direction::dispatch)
      take(user, unpack.getIn(), unpack.getScales(), false);
  }
  if (!wireRows)
    return {0, WireDtype::bf16};
  auto rows = cast<RankedTensorType>(wireRows.getType());
  WireDtype wire = wireScales ? fp8Format(wireRows, wireScales)
                   : rows.getElementType().isF32() ? WireDtype::f32
                                                   : WireDtype::bf16;
  return {rows.isDynamicDim(1) ? 0 : rows.getDimSize(1), wire};
}

struct LayoutModel : FreshResultsModel<LayoutModel, LayoutOp> {
  static FailureOr<SmallVector<Value>> lower(LayoutOp op, RuntimeLowering &l) {
    FailureOr<SmallVector<Value>> routing = l.inputs(op->getOperands());
    if (failed(routing))
      return failure();
    auto [hidden, wire] = stagedRowFormat(op);
    Value layout =
        callLayout(l.abi, *routing, op.getTopology(), op.getStrategy(),
                   op.getCapacity(), op.getAlign(), hidden, wire);
    FailureOr<SmallVector<Value>> outputs = layoutOutputs(
        l, layout, op.getRecvWeights(), op.getTokensPerExpert());
    if (failed(outputs))
      return failure();
    return SmallVector<Value>{l.abi.wrap(layout, op.getHandle().getType()),
                             (*outputs)[0], (*outputs)[1]};
  }
};

/// The segment offsets of the handle's layout (local: no communication).
struct ExpertOffsetsModel
    : FreshResultsModel<ExpertOffsetsModel, ExpertOffsetsOp> {
  static FailureOr<SmallVector<Value>> lower(ExpertOffsetsOp op,
                                             RuntimeLowering &l) {
    FailureOr<Value> offsets =
        l.abi.alloc(l.options, op.getOffsets().getType(), Value());
    if (failed(offsets))
      return failure();
    l.abi.call("moecomm_rt_expert_offsets",
               {l.abi.pointer(op.getHandle()), l.abi.abiMemRef(*offsets)});
    return SmallVector<Value>{*offsets};
  }
};

/// `<name>_<elt>(layout, flag, in, out)`: a runtime one-shot collective
/// (dispatch with flag = wire dtype, combine with flag = weighted) from the
/// `in` buffer into a new buffer of `resultType`, sized by `direction`'s
/// output rows.
FailureOr<Value> callOneShot(RuntimeLowering &l, StringRef name, int32_t flag,
                             Value in, Value layout, Direction direction,
                             RankedTensorType resultType) {
  RuntimeAbi &abi = l.abi;
  FailureOr<Value> out = abi.alloc(
      l.options, resultType, abi.rows(layout, direction, kOutputStep, false));
  if (failed(out))
    return failure();
  Type elt = cast<MemRefType>(in.getType()).getElementType();
  abi.call((name + "_" + RuntimeAbi::suffix(elt)).str(),
           {layout, abi.i32(flag), in, abi.abiMemRef(*out)});
  return out;
}

/// Collective dispatch: the runtime's layout + one-shot dispatch (its `auto`
/// chooses the strategy per call from the actual routing).
struct DispatchModel : FreshResultsModel<DispatchModel, DispatchOp> {
  static FailureOr<SmallVector<Value>> lower(DispatchOp op,
                                             RuntimeLowering &l) {
    FailureOr<SmallVector<Value>> inputs = l.inputs(op->getOperands());
    if (failed(inputs))
      return failure();
    Value layout = callLayout(
        l.abi, {(*inputs)[1], (*inputs)[2]}, op.getTopology(),
        op.getStrategy().value_or(Strategy::automatic), op.getCapacity(),
        op.getAlign(), op.getX().getType().getDimSize(1), op.getWireDtype());
    FailureOr<SmallVector<Value>> outputs = layoutOutputs(
        l, layout, op.getRecvWeights(), op.getTokensPerExpert());
    if (failed(outputs))
      return failure();
    FailureOr<Value> recv =
        callOneShot(l, "moecomm_rt_dispatch",
                    getWireDataType(op.getWireDtype()), (*inputs)[0],
                    layout, Direction::dispatch, op.getRecv().getType());
    if (failed(recv))
      return failure();
    return SmallVector<Value>{*recv, (*outputs)[0], (*outputs)[1],
                             l.abi.wrap(layout, op.getHandle().getType())};
  }
};

/// Cached dispatch and combine: one one-shot call on the handle's layout
/// (`Model::kName`, `Model::flag(op)`, `Model::kDirection`).
template <typename Model, typename OpTy>
struct OneShotModel : FreshResultsModel<Model, OpTy> {
  static FailureOr<SmallVector<Value>> lower(OpTy op, RuntimeLowering &l) {
    FailureOr<SmallVector<Value>> inputs = l.inputs({op->getOperand(0)});
    if (failed(inputs))
      return failure();
    FailureOr<Value> out = callOneShot(
        l, Model::kName, Model::flag(op), (*inputs)[0],
        l.abi.pointer(op.getHandle()), Model::kDirection,
        cast<RankedTensorType>(op->getResult(0).getType()));
    if (failed(out))
      return failure();
    return SmallVector<Value>{*out};
  }
};

struct CachedDispatchModel
    : OneShotModel<CachedDispatchModel, CachedDispatchOp> {
  static constexpr const char *kName = "moecomm_rt_dispatch";
  static constexpr Direction kDirection = Direction::dispatch;
  static int32_t flag(CachedDispatchOp op) {
    return getWireDataType(op.getWireDtype());
  }
};

struct CombineModel : OneShotModel<CombineModel, CombineOp> {
  static constexpr const char *kName = "moecomm_rt_combine";
  static constexpr Direction kDirection = Direction::combine;
  static int32_t flag(CombineOp op) { return op.getWeighted(); }
};

/// Ragged all_to_all: learn the receive counts, then move the rows.
struct AllToAllModel : FreshResultsModel<AllToAllModel, AllToAllOp> {
  static FailureOr<SmallVector<Value>> lower(AllToAllOp op,
                                             RuntimeLowering &l) {
    RuntimeAbi &abi = l.abi;
    FailureOr<SmallVector<Value>> inputs = l.inputs(op->getOperands());
    if (failed(inputs))
      return failure();
    FailureOr<Value> counts =
        abi.alloc(l.options, op.getRecvCounts().getType(), Value());
    if (failed(counts))
      return failure();
    TopologyAttr topo = op.getTopology();
    StringRef countSuffix = RuntimeAbi::suffix(
        cast<RankedTensorType>(op.getSendCounts().getType()).getElementType());
    Value ranks = abi.i64(topo.getRanks());
    Value perNode = abi.i64(topo.getRanksPerNode());
    Value total =
        abi.call(("moecomm_rt_all_to_all_counts_" + countSuffix).str(),
                 {ranks, perNode, (*inputs)[1], abi.abiMemRef(*counts)},
                 l.rewriter.getI64Type())[0];
    Value rows = arith::IndexCastOp::create(l.rewriter, op.getLoc(),
                                            l.rewriter.getIndexType(), total);
    FailureOr<Value> recv = abi.alloc(l.options, op.getRecv().getType(), rows);
    if (failed(recv))
      return failure();
    Type elt = op.getSend().getType().getElementType();
    abi.call(("moecomm_rt_all_to_all_" + RuntimeAbi::suffix(elt) + "_" +
              countSuffix)
                 .str(),
             {ranks, perNode, (*inputs)[0], (*inputs)[1], abi.abiMemRef(*recv),
              abi.abiMemRef(*counts)});
    return SmallVector<Value>{*recv, *counts};
  }
};

/// Attaches each model to its op.
template <typename... Models> void attachModels(MLIRContext *ctx) {
  (Models::Op::template attachInterface<Models>(*ctx), ...);
}

} // namespace

void mlir::moecomm::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, MoECommDialect *) {
    attachModels<LayoutModel, PermuteModel, PackModel, UnpackModel,
                 QuantizeModel, DequantizeModel, ExchangeOpModel,
                 ExchangeStartModel, ExchangeWaitModel, DispatchModel,
                 CachedDispatchModel, CombineModel, AllToAllModel,
                 ExpertOffsetsModel>(ctx);
  });
}

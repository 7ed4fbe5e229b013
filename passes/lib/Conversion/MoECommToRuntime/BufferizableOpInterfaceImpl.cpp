//===- BufferizableOpInterfaceImpl.cpp - moecomm ops -> runtime calls ------===//
//
// One-shot bufferization models for every moecomm op. Each op reads its
// tensor operands and writes fresh buffers (except exchange_wait, which
// completes the buffers its exchange_start allocated, in place); bufferizing
// an op emits the runtime calls that implement it (RuntimeAbi.h), so
// bufferization *is* the lowering to the runtime level.
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

/// Buffers of `values` (null values stay null), cast to the ABI layout. A
/// view whose rows are not contiguous (e.g. a column slice) is copied into a
/// fresh buffer first.
FailureOr<SmallVector<Value>> abiBuffers(RewriterBase &rewriter, RuntimeAbi &abi,
                                         ValueRange values,
                                         const BufferizationOptions &options,
                                         const BufferizationState &state) {
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

/// New buffers for the tensor results of `op`, `rows` rows each.
FailureOr<SmallVector<Value>> allocResults(RuntimeAbi &abi, ValueRange results,
                                           const BufferizationOptions &options,
                                           Value rows) {
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

/// Appends the ABI form of each non-null buffer.
void appendAbi(RuntimeAbi &abi, SmallVectorImpl<Value> &args,
               ArrayRef<Value> buffers) {
  for (Value b : buffers)
    if (b)
      args.push_back(abi.abiMemRef(b));
}

/// `moecomm_rt_gather_<in>_<out>`: permute, pack and unpack all gather (or
/// sum) rows through the layout's map for one step of a direction.
LogicalResult lowerGather(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          const BufferizationState &state, Value in,
                          Value scales, Value handle, Direction direction,
                          int64_t step, bool weighted) {
  rewriter.setInsertionPoint(op);
  RuntimeAbi abi(rewriter, op->getLoc(), op);
  FailureOr<SmallVector<Value>> inputs =
      abiBuffers(rewriter, abi, {in, scales}, options, state);
  if (failed(inputs))
    return failure();
  Value layout = abi.pointer(handle);
  FailureOr<SmallVector<Value>> outputs = allocResults(
      abi, op->getResults(), options, abi.rows(layout, direction, step, false));
  if (failed(outputs))
    return failure();
  std::string name =
      ("moecomm_rt_gather_" +
       RuntimeAbi::suffix(cast<ShapedType>(in.getType()).getElementType()) +
       "_" +
       RuntimeAbi::suffix(
           cast<ShapedType>(op->getResult(0).getType()).getElementType()))
          .str();
  SmallVector<Value> args = {layout, abi.i32(static_cast<int32_t>(direction)),
                             abi.i64(step), abi.i32(weighted)};
  appendAbi(abi, args, *inputs);
  appendAbi(abi, args, *outputs);
  abi.call(name, args);
  replaceOpWithBufferizedValues(rewriter, op, *outputs);
  return success();
}

/// Common model: reads every tensor operand, writes fresh result buffers.
template <typename Model, typename OpTy>
struct RuntimeCallModel
    : public BufferizableOpInterface::ExternalModel<Model, OpTy> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  bool bufferizesToAllocation(Operation *, Value) const { return true; }
  FailureOr<BufferLikeType>
  getBufferType(Operation *, Value value, const BufferizationOptions &,
                const BufferizationState &, SmallVector<Value> &) const {
    auto type = cast<RankedTensorType>(value.getType());
    return cast<BufferLikeType>(
        MemRefType::get(type.getShape(), type.getElementType()));
  }
};

struct PermuteModel : RuntimeCallModel<PermuteModel, PermuteOp> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto permute = cast<PermuteOp>(op);
    return lowerGather(op, rewriter, options, state, permute.getIn(),
                       permute.getScales(), permute.getHandle(),
                       permute.getDirection(),
                       permute.getStage().value_or(kOutputStep),
                       permute.getWeighted());
  }
};

struct PackModel : RuntimeCallModel<PackModel, PackOp> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto pack = cast<PackOp>(op);
    return lowerGather(op, rewriter, options, state, pack.getIn(),
                       pack.getScales(), pack.getHandle(), pack.getDirection(),
                       pack.getStage(), pack.getWeighted());
  }
};

struct UnpackModel : RuntimeCallModel<UnpackModel, UnpackOp> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto unpack = cast<UnpackOp>(op);
    return lowerGather(op, rewriter, options, state, unpack.getIn(),
                       unpack.getScales(), unpack.getHandle(),
                       unpack.getDirection(), kOutputStep,
                       unpack.getWeighted());
  }
};

/// quantize / dequantize: local conversions with as many rows as the input.
template <typename Model, typename OpTy>
struct ConvertModel : RuntimeCallModel<Model, OpTy> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    rewriter.setInsertionPoint(op);
    RuntimeAbi abi(rewriter, op->getLoc(), op);
    FailureOr<SmallVector<Value>> inputs =
        abiBuffers(rewriter, abi, op->getOperands(), options, state);
    if (failed(inputs))
      return failure();
    Value rows = memref::DimOp::create(rewriter, op->getLoc(), (*inputs)[0], 0);
    FailureOr<SmallVector<Value>> outputs =
        allocResults(abi, op->getResults(), options, rows);
    if (failed(outputs))
      return failure();
    SmallVector<Value> args(*inputs);
    appendAbi(abi, args, *outputs);
    abi.call(Model::name(cast<OpTy>(op)), args);
    replaceOpWithBufferizedValues(rewriter, op, *outputs);
    return success();
  }
};

struct QuantizeModel : ConvertModel<QuantizeModel, QuantizeOp> {
  static std::string name(QuantizeOp op) {
    Type elt = cast<RankedTensorType>(op.getIn().getType()).getElementType();
    return ("moecomm_rt_quantize_" + RuntimeAbi::suffix(elt)).str();
  }
};

struct DequantizeModel : ConvertModel<DequantizeModel, DequantizeOp> {
  static std::string name(DequantizeOp op) {
    Type elt = cast<RankedTensorType>(op.getOut().getType()).getElementType();
    return ("moecomm_rt_dequantize_" + RuntimeAbi::suffix(elt)).str();
  }
};

/// exchange and exchange_start: receive buffers sized by the layout.
template <typename Model, typename OpTy>
struct ExchangeModel : RuntimeCallModel<Model, OpTy> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto exchange = cast<OpTy>(op);
    rewriter.setInsertionPoint(op);
    RuntimeAbi abi(rewriter, op->getLoc(), op);
    FailureOr<SmallVector<Value>> inputs = abiBuffers(
        rewriter, abi, {exchange.getSend(), exchange.getScales()}, options,
        state);
    if (failed(inputs))
      return failure();
    Value layout = abi.pointer(exchange.getHandle());
    SmallVector<Value> recvValues = {exchange.getRecv()};
    if (exchange.getRecvScales())
      recvValues.push_back(exchange.getRecvScales());
    FailureOr<SmallVector<Value>> outputs = allocResults(
        abi, recvValues, options,
        abi.rows(layout, exchange.getDirection(), exchange.getStage(), true));
    if (failed(outputs))
      return failure();
    Type elt = exchange.getSend().getType().getElementType();
    SmallVector<Value> args = {
        layout, abi.i32(static_cast<int32_t>(exchange.getDirection())),
        abi.i64(exchange.getStage())};
    appendAbi(abi, args, *inputs);
    appendAbi(abi, args, *outputs);
    replaceOpWithBufferizedValues(rewriter, op,
                                  Model::call(abi, elt, args, *outputs, op));
    return success();
  }
};

struct ExchangeOpModel : ExchangeModel<ExchangeOpModel, ExchangeOp> {
  static SmallVector<Value> call(RuntimeAbi &abi, Type elt, ValueRange args,
                                 ArrayRef<Value> outputs, Operation *) {
    abi.call(("moecomm_rt_exchange_" + RuntimeAbi::suffix(elt)).str(), args);
    return SmallVector<Value>(outputs);
  }
};

struct ExchangeStartModel : ExchangeModel<ExchangeStartModel, ExchangeStartOp> {
  static SmallVector<Value> call(RuntimeAbi &abi, Type elt, ValueRange args,
                                 ArrayRef<Value> outputs, Operation *op) {
    Type ptr = LLVM::LLVMPointerType::get(op->getContext());
    Value request = abi.call(
        ("moecomm_rt_exchange_start_" + RuntimeAbi::suffix(elt)).str(), args,
        ptr)[0];
    SmallVector<Value> results = {abi.wrap(request, op->getResult(0).getType())};
    results.append(outputs.begin(), outputs.end());
    return results;
  }
  bool bufferizesToAllocation(Operation *op, Value value) const {
    return value != op->getResult(0);
  }
};

/// exchange_wait completes the buffers of its exchange_start in place.
struct ExchangeWaitModel
    : public BufferizableOpInterface::ExternalModel<ExchangeWaitModel,
                                                    ExchangeWaitOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return false;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return true;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &) const {
    auto wait = cast<ExchangeWaitOp>(op);
    if (operand.get() == wait.getRecv())
      return {{wait.getOut(), BufferRelation::Equivalent}};
    if (wait.getRecvScales() && operand.get() == wait.getRecvScales())
      return {{wait.getOutScales(), BufferRelation::Equivalent}};
    return {};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto wait = cast<ExchangeWaitOp>(op);
    rewriter.setInsertionPoint(op);
    RuntimeAbi abi(rewriter, op->getLoc(), op);
    SmallVector<Value> buffers;
    for (Value v : {wait.getRecv(), wait.getRecvScales()}) {
      if (!v)
        continue;
      FailureOr<Value> buffer = getBuffer(rewriter, v, options, state);
      if (failed(buffer))
        return failure();
      buffers.push_back(*buffer);
    }
    abi.call("moecomm_rt_wait", {abi.pointer(wait.getRequest())});
    replaceOpWithBufferizedValues(rewriter, op, buffers);
    return success();
  }
};

/// The layout call shared by moecomm.layout and the collective dispatch;
/// returns the runtime layout pointer. `hidden` (0: unknown) and `wire`
/// inform the runtime's `auto` and its statistics.
Value callLayout(RuntimeAbi &abi, ArrayRef<Value> routing, TopologyAttr topo,
                 Strategy strategy, std::optional<int64_t> capacity,
                 int64_t hidden = 0, WireDtype wire = WireDtype::bf16) {
  Type idx = cast<MemRefType>(routing[0].getType()).getElementType();
  Type ptr = LLVM::LLVMPointerType::get(topo.getContext());
  return abi.call(("moecomm_rt_layout_" + RuntimeAbi::suffix(idx)).str(),
                  {routing[0], routing[1], abi.i64(topo.getRanks()),
                   abi.i64(topo.getRanksPerNode()), abi.i64(topo.getExperts()),
                   abi.i32(static_cast<int32_t>(strategy)),
                   abi.i64(capacity.value_or(0)), abi.i64(hidden),
                   abi.i32(static_cast<int32_t>(wire))},
                  ptr)[0];
}

/// recv_weights and tokens_per_expert buffers of a layout (empty, and not
/// filled, when nothing reads them).
FailureOr<SmallVector<Value>>
layoutOutputs(OpBuilder &b, RuntimeAbi &abi, Value layout, Value recvWeights,
              Value tokensPerExpert, const BufferizationOptions &options) {
  Value rows = recvWeights.use_empty()
                   ? arith::ConstantIndexOp::create(b, layout.getLoc(), 0)
                   : abi.rows(layout, Direction::dispatch, kOutputStep, false);
  FailureOr<Value> weights = abi.alloc(
      options, cast<RankedTensorType>(recvWeights.getType()), rows);
  FailureOr<Value> counts = abi.alloc(
      options, cast<RankedTensorType>(tokensPerExpert.getType()), Value());
  if (failed(weights) || failed(counts))
    return failure();
  if (!recvWeights.use_empty())
    abi.call("moecomm_rt_recv_weights", {layout, abi.abiMemRef(*weights)});
  if (!tokensPerExpert.use_empty())
    abi.call("moecomm_rt_tokens_per_expert", {layout, abi.abiMemRef(*counts)});
  return SmallVector<Value>{*weights, *counts};
}

/// The row width and wire dtype of a staged layout, read off the rows its
/// handle's dispatch exchanges send (or, with a single rank, the rows the
/// dispatch output is unpacked from) in this function; the runtime reports
/// them to drivers (moecommCompiledGetStats). Without such an op: unknown
/// width, bf16.
std::pair<int64_t, WireDtype> stagedRowFormat(LayoutOp op) {
  Value wireRows;
  for (Operation *user : op.getHandle().getUsers()) {
    if (auto exchange = dyn_cast<ExchangeOp>(user);
        exchange && exchange.getDirection() == Direction::dispatch) {
      wireRows = exchange.getSend();
      break;
    }
    if (auto start = dyn_cast<ExchangeStartOp>(user);
        start && start.getDirection() == Direction::dispatch) {
      wireRows = start.getSend();
      break;
    }
    if (auto unpack = dyn_cast<UnpackOp>(user);
        unpack && unpack.getDirection() == Direction::dispatch)
      wireRows = unpack.getIn();
  }
  if (!wireRows)
    return {0, WireDtype::bf16};
  auto rows = cast<RankedTensorType>(wireRows.getType());
  Type elt = rows.getElementType();
  WireDtype wire = isa<Float8E4M3FNType>(elt) ? WireDtype::fp8_e4m3
                   : elt.isF32()              ? WireDtype::f32
                                              : WireDtype::bf16;
  return {rows.isDynamicDim(1) ? 0 : rows.getDimSize(1), wire};
}

struct LayoutModel : RuntimeCallModel<LayoutModel, LayoutOp> {
  bool bufferizesToAllocation(Operation *op, Value value) const {
    return value != cast<LayoutOp>(op).getHandle();
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto layoutOp = cast<LayoutOp>(op);
    rewriter.setInsertionPoint(op);
    RuntimeAbi abi(rewriter, op->getLoc(), op);
    FailureOr<SmallVector<Value>> routing =
        abiBuffers(rewriter, abi, op->getOperands(), options, state);
    if (failed(routing))
      return failure();
    auto [hidden, wire] = stagedRowFormat(layoutOp);
    Value layout = callLayout(abi, *routing, layoutOp.getTopology(),
                              layoutOp.getStrategy(), layoutOp.getCapacity(),
                              hidden, wire);
    FailureOr<SmallVector<Value>> outputs =
        layoutOutputs(rewriter, abi, layout, layoutOp.getRecvWeights(),
                      layoutOp.getTokensPerExpert(), options);
    if (failed(outputs))
      return failure();
    replaceOpWithBufferizedValues(
        rewriter, op,
        {abi.wrap(layout, layoutOp.getHandle().getType()), (*outputs)[0],
         (*outputs)[1]});
    return success();
  }
};

/// `<name>_<elt>(layout, flag, in, out)`: a runtime one-shot collective
/// (dispatch with flag = wire dtype, combine with flag = weighted) from the
/// `in` buffer into a new buffer of `resultType`, sized by `direction`'s
/// output rows.
FailureOr<Value> callOneShot(RuntimeAbi &abi,
                             const BufferizationOptions &options,
                             StringRef name, int32_t flag, Value in,
                             Value layout, Direction direction,
                             RankedTensorType resultType) {
  FailureOr<Value> out = abi.alloc(
      options, resultType, abi.rows(layout, direction, kOutputStep, false));
  if (failed(out))
    return failure();
  Type elt = cast<MemRefType>(in.getType()).getElementType();
  abi.call((name + "_" + RuntimeAbi::suffix(elt)).str(),
           {layout, abi.i32(flag), in, abi.abiMemRef(*out)});
  return out;
}

/// Collective dispatch: the runtime's layout + one-shot dispatch (its `auto`
/// chooses the strategy per call from the actual routing).
struct DispatchModel : RuntimeCallModel<DispatchModel, DispatchOp> {
  bool bufferizesToAllocation(Operation *op, Value value) const {
    return value != cast<DispatchOp>(op).getHandle();
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto dispatch = cast<DispatchOp>(op);
    rewriter.setInsertionPoint(op);
    RuntimeAbi abi(rewriter, op->getLoc(), op);
    FailureOr<SmallVector<Value>> inputs =
        abiBuffers(rewriter, abi, op->getOperands(), options, state);
    if (failed(inputs))
      return failure();
    Value layout = callLayout(
        abi, {(*inputs)[1], (*inputs)[2]}, dispatch.getTopology(),
        dispatch.getStrategy().value_or(Strategy::automatic),
        dispatch.getCapacity(), dispatch.getX().getType().getDimSize(1),
        dispatch.getWireDtype());
    FailureOr<SmallVector<Value>> outputs =
        layoutOutputs(rewriter, abi, layout, dispatch.getRecvWeights(),
                      dispatch.getTokensPerExpert(), options);
    if (failed(outputs))
      return failure();
    FailureOr<Value> recv = callOneShot(
        abi, options, "moecomm_rt_dispatch",
        static_cast<int32_t>(dispatch.getWireDtype()), (*inputs)[0], layout,
        Direction::dispatch, dispatch.getRecv().getType());
    if (failed(recv))
      return failure();
    replaceOpWithBufferizedValues(
        rewriter, op,
        {*recv, (*outputs)[0], (*outputs)[1],
         abi.wrap(layout, dispatch.getHandle().getType())});
    return success();
  }
};

/// Cached dispatch and combine: one one-shot call on the handle's layout.
template <typename Model, typename OpTy>
struct OneShotModel : RuntimeCallModel<Model, OpTy> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto concrete = cast<OpTy>(op);
    rewriter.setInsertionPoint(op);
    RuntimeAbi abi(rewriter, op->getLoc(), op);
    FailureOr<SmallVector<Value>> inputs =
        abiBuffers(rewriter, abi, {op->getOperand(0)}, options, state);
    if (failed(inputs))
      return failure();
    FailureOr<Value> out = callOneShot(
        abi, options, Model::kName, Model::flag(concrete), (*inputs)[0],
        abi.pointer(concrete.getHandle()), Model::kDirection,
        cast<RankedTensorType>(op->getResult(0).getType()));
    if (failed(out))
      return failure();
    replaceOpWithBufferizedValues(rewriter, op, *out);
    return success();
  }
};

struct CachedDispatchModel
    : OneShotModel<CachedDispatchModel, CachedDispatchOp> {
  static constexpr const char *kName = "moecomm_rt_dispatch";
  static constexpr Direction kDirection = Direction::dispatch;
  static int32_t flag(CachedDispatchOp op) {
    return static_cast<int32_t>(op.getWireDtype());
  }
};

struct CombineModel : OneShotModel<CombineModel, CombineOp> {
  static constexpr const char *kName = "moecomm_rt_combine";
  static constexpr Direction kDirection = Direction::combine;
  static int32_t flag(CombineOp op) { return op.getWeighted(); }
};

/// Ragged all_to_all: learn the receive counts, then move the rows.
struct AllToAllModel : RuntimeCallModel<AllToAllModel, AllToAllOp> {
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto a2a = cast<AllToAllOp>(op);
    rewriter.setInsertionPoint(op);
    Location loc = op->getLoc();
    RuntimeAbi abi(rewriter, loc, op);
    FailureOr<SmallVector<Value>> inputs =
        abiBuffers(rewriter, abi, op->getOperands(), options, state);
    if (failed(inputs))
      return failure();
    FailureOr<Value> counts =
        abi.alloc(options, a2a.getRecvCounts().getType(), Value());
    if (failed(counts))
      return failure();
    TopologyAttr topo = a2a.getTopology();
    StringRef countSuffix = RuntimeAbi::suffix(
        cast<RankedTensorType>(a2a.getSendCounts().getType()).getElementType());
    Value ranks = abi.i64(topo.getRanks()), perNode = abi.i64(topo.getRanksPerNode());
    Value total = abi.call(("moecomm_rt_all_to_all_counts_" + countSuffix).str(),
                           {ranks, perNode, (*inputs)[1], abi.abiMemRef(*counts)},
                           rewriter.getI64Type())[0];
    Value rows = arith::IndexCastOp::create(rewriter, loc,
                                            rewriter.getIndexType(), total);
    FailureOr<Value> recv = abi.alloc(options, a2a.getRecv().getType(), rows);
    if (failed(recv))
      return failure();
    Type elt = a2a.getSend().getType().getElementType();
    abi.call(("moecomm_rt_all_to_all_" + RuntimeAbi::suffix(elt) + "_" +
              countSuffix)
                 .str(),
             {ranks, perNode, (*inputs)[0], (*inputs)[1], abi.abiMemRef(*recv),
              abi.abiMemRef(*counts)});
    replaceOpWithBufferizedValues(rewriter, op, {*recv, *counts});
    return success();
  }
};

} // namespace

void mlir::moecomm::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, MoECommDialect *) {
    LayoutOp::attachInterface<LayoutModel>(*ctx);
    PermuteOp::attachInterface<PermuteModel>(*ctx);
    PackOp::attachInterface<PackModel>(*ctx);
    UnpackOp::attachInterface<UnpackModel>(*ctx);
    QuantizeOp::attachInterface<QuantizeModel>(*ctx);
    DequantizeOp::attachInterface<DequantizeModel>(*ctx);
    ExchangeOp::attachInterface<ExchangeOpModel>(*ctx);
    ExchangeStartOp::attachInterface<ExchangeStartModel>(*ctx);
    ExchangeWaitOp::attachInterface<ExchangeWaitModel>(*ctx);
    DispatchOp::attachInterface<DispatchModel>(*ctx);
    CachedDispatchOp::attachInterface<CachedDispatchModel>(*ctx);
    CombineOp::attachInterface<CombineModel>(*ctx);
    AllToAllOp::attachInterface<AllToAllModel>(*ctx);
  });
}

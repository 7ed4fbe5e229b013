//===- MoECommOps.cpp - moecomm op verifiers and type inference ------------===//
//
// Every statically checkable rule of DESIGN.md §3 is a verifier here; each
// message says what is wrong and what was expected, with the numbers.
//
//===----------------------------------------------------------------------===//

#include "moecomm/Dialect/MoEComm/MoEComm.h"
#include "moecomm/Model/Limits.h"
#include "moecomm/Model/StageRule.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::moecomm;

//===----------------------------------------------------------------------===//
// Stage rule (moecomm/Model/StageRule.h)
//===----------------------------------------------------------------------===//

// The dialect's enums are the C ABI's, value for value.
static_assert(int(Strategy::per_expert) == moecommPerExpert &&
              int(Strategy::flat) == moecommFlat &&
              int(Strategy::hierarchical) == moecommHierarchical &&
              int(Strategy::automatic) == moecommAuto);
static_assert(int(Scope::global) == moecommScopeGlobal &&
              int(Scope::intra_node) == moecommScopeIntraNode &&
              int(Scope::inter_node) == moecommScopeInterNode);
static_assert(int(Direction::dispatch) == moecommDirectionDispatch &&
              int(Direction::combine) == moecommDirectionCombine);
static_assert(int(ReplicaChoice::locality) == moecommReplicaLocality &&
              int(ReplicaChoice::load_only) == moecommReplicaLoadOnly);

int64_t mlir::moecomm::getNumStages(Strategy strategy, int64_t ranks,
                                    int64_t ranksPerNode) {
  return ::moecomm::numStages(ranks, ranksPerNode,
                              static_cast<moecommStrategy_t>(strategy));
}

Scope mlir::moecomm::getStageScope(Strategy strategy, int64_t ranks,
                                   int64_t ranksPerNode, Direction direction,
                                   int64_t stage) {
  return static_cast<Scope>(::moecomm::stageScope(
      ranks, ranksPerNode, static_cast<moecommStrategy_t>(strategy),
      static_cast<moecommDirection_t>(direction), stage));
}

moecommDataType_t mlir::moecomm::getWireDataType(WireDtype wire) {
  switch (wire) {
  case WireDtype::f32:
    return moecommFloat32;
  case WireDtype::bf16:
    return moecommBfloat16;
  case WireDtype::fp8_e4m3:
    return moecommFloat8E4M3;
  case WireDtype::fp8_e4m3_ue8m0:
    return moecommFloat8E4M3UE8M0;
  case WireDtype::mxfp8:
    return moecommMxfp8;
  }
  llvm_unreachable("unknown wire dtype");
}

/// Whether `hidden` is a static row length in [1, kMaxHidden].
static bool isValidHidden(int64_t hidden) {
  return !ShapedType::isDynamic(hidden) && hidden >= 1 && hidden <= kMaxHidden;
}

RankedTensorType mlir::moecomm::getScalesType(MLIRContext *ctx,
                                              WireDtype wire, int64_t rows,
                                              int64_t hidden) {
  moecommDataType_t type = getWireDataType(wire);
  // Out-of-range hidden sizes are the verifier's to report.
  int64_t blocks = isValidHidden(hidden) ? ::moecomm::fp8Blocks(type, hidden)
                                         : ShapedType::kDynamic;
  Type elt = ::moecomm::hasE8M0Scales(type)
                 ? Type(Float8E8M0FNUType::get(ctx))
                 : Type(Float32Type::get(ctx));
  return RankedTensorType::get({rows, blocks}, elt);
}

std::optional<WireDtype>
mlir::moecomm::getFp8WireOfScales(RankedTensorType scales, int64_t hidden) {
  // Listed so that the first match is the answer (ue8m0 before mxfp8).
  for (WireDtype wire : {WireDtype::fp8_e4m3, WireDtype::fp8_e4m3_ue8m0,
                         WireDtype::mxfp8})
    if (getScalesType(scales.getContext(), wire, ShapedType::kDynamic, hidden)
            .getElementType() == scales.getElementType() &&
        ::moecomm::fp8Blocks(getWireDataType(wire), hidden) ==
            scales.getDimSize(1))
      return wire;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Shared checks
//===----------------------------------------------------------------------===//

static std::string shapeStr(ShapedType type) {
  std::string s = "[";
  llvm::raw_string_ostream os(s);
  llvm::interleave(
      type.getShape(), os,
      [&](int64_t d) { ShapedType::isDynamic(d) ? os << "?" : os << d; }, ",");
  os << "]";
  return s;
}

static bool isFp8(Type t) { return isa<Float8E4M3FNType>(t); }
static bool isRowFloat(Type t) { return t.isBF16() || t.isF32(); }

/// Rows are [N, H] with a static hidden size H >= 1.
static LogicalResult verifyHidden(Operation *op, StringRef name,
                                  RankedTensorType rows) {
  if (!isValidHidden(rows.getDimSize(1)))
    return op->emitOpError() << name
                             << " must have a static hidden size in [1, "
                             << kMaxHidden << "], got " << rows;
  return success();
}

/// FP8 rows come with scales [N, B] of one of the FP8 formats (of `wire`
/// when given: getScalesType) and only FP8 rows do.
static LogicalResult verifyScales(Operation *op, StringRef name,
                                  RankedTensorType rows, Value scales,
                                  std::optional<WireDtype> wire = {}) {
  if (failed(verifyHidden(op, name, rows)))
    return failure();
  bool fp8 = isFp8(rows.getElementType());
  if (fp8 && !scales)
    return op->emitOpError() << name
                             << " are f8E4M3FN and need their block scales";
  if (!fp8 && scales)
    return op->emitOpError() << "scales are only allowed with f8E4M3FN rows, "
                             << name << " are " << rows.getElementType();
  if (!scales)
    return success();
  auto scalesType = cast<RankedTensorType>(scales.getType());
  int64_t hidden = rows.getDimSize(1);
  auto blocks = [&](WireDtype w) {
    return ::moecomm::fp8Blocks(getWireDataType(w), hidden);
  };
  // f32 scales of fp8_e4m3 keep the column message below.
  if (wire && !(*wire == WireDtype::fp8_e4m3 &&
                scalesType.getElementType().isF32())) {
    RankedTensorType expected = getScalesType(op->getContext(), *wire,
                                              ShapedType::kDynamic, hidden);
    if (scalesType.getElementType() != expected.getElementType() ||
        scalesType.getDimSize(1) != expected.getDimSize(1))
      return op->emitOpError()
             << "scales of wire<" << stringifyWireDtype(*wire) << "> must be "
             << expected.getElementType() << " with "
             << expected.getDimSize(1) << " columns for " << hidden
             << " elements per row, got " << scalesType;
  }
  if (scalesType.getElementType().isF32()) {
    if (scalesType.getDimSize(1) != blocks(WireDtype::fp8_e4m3))
      return op->emitOpError()
             << "scales must have ceil(" << hidden
             << "/128) = " << blocks(WireDtype::fp8_e4m3) << " columns, got "
             << shapeStr(scalesType);
  } else if (!getFp8WireOfScales(scalesType, hidden)) {
    return op->emitOpError()
           << "E8M0 scales must have ceil(" << hidden
           << "/128) = " << blocks(WireDtype::fp8_e4m3_ue8m0)
           << " (fp8_e4m3_ue8m0) or ceil(" << hidden
           << "/32) = " << blocks(WireDtype::mxfp8)
           << " (mxfp8) columns, got " << shapeStr(scalesType);
  }
  int64_t n = rows.getDimSize(0), sn = scalesType.getDimSize(0);
  if (!ShapedType::isDynamic(n) && !ShapedType::isDynamic(sn) && n != sn)
    return op->emitOpError() << "scales have " << sn << " rows but " << name
                             << " have " << n;
  return success();
}

/// topk_idx [T, K] and topk_weights [T, K] with the same static K in
/// [1, min(E, kMaxTopk)], and one token count T wherever it is static: in
/// topk_idx, topk_weights and (when given) the rows x. Passes slice all three
/// by the tokens of topk_idx, so a weight column or token count that only a
/// dynamic dimension hides would be read out of bounds.
static LogicalResult verifyRouting(Operation *op, TopologyAttr topology,
                                   Type idxType, Type weightsType,
                                   RankedTensorType x = {}) {
  if (topology.getExperts() < 1)
    return op->emitOpError()
           << "needs the expert count: topology has no `experts`";
  auto idx = cast<RankedTensorType>(idxType);
  auto weights = cast<RankedTensorType>(weightsType);
  if (idx.getRank() != 2)
    return op->emitOpError() << "topk_idx must be 2-D [T, K], got rank "
                             << idx.getRank();
  if (weights.getRank() != 2)
    return op->emitOpError() << "topk_weights must be 2-D [T, K], got rank "
                             << weights.getRank();
  int64_t k = idx.getDimSize(1);
  if (ShapedType::isDynamic(k) || k < 1)
    return op->emitOpError() << "topk must be static and >= 1, got topk_idx "
                             << shapeStr(idx);
  if (k > kMaxTopk)
    return op->emitOpError() << "topk (" << k << ") exceeds the limit of "
                             << kMaxTopk;
  if (k > topology.getExperts())
    return op->emitOpError() << "topk (" << k << ") exceeds the number of experts ("
                             << topology.getExperts() << ")";
  if (weights.getDimSize(1) != k)
    return op->emitOpError() << "topk_weights must have topk_idx's " << k
                             << " columns (a static K), got topk_weights "
                             << shapeStr(weights);
  // The first static token count is the reference for the others.
  std::pair<StringRef, int64_t> tokens[] = {
      {"topk_idx", idx.getDimSize(0)},
      {"topk_weights", weights.getDimSize(0)},
      {"x", x ? x.getDimSize(0) : ShapedType::kDynamic}};
  std::optional<std::pair<StringRef, int64_t>> reference;
  for (auto [name, t] : tokens) {
    if (ShapedType::isDynamic(t))
      continue;
    if (!reference)
      reference = {name, t};
    else if (t != reference->second)
      return op->emitOpError() << name << " has " << t << " tokens but "
                               << reference->first << " has "
                               << reference->second;
  }
  return success();
}

static LogicalResult verifyCapacity(Operation *op,
                                    std::optional<int64_t> capacity) {
  if (capacity && *capacity <= 0)
    return op->emitOpError() << "capacity must be > 0 rows, got " << *capacity;
  return success();
}

/// `align(N)`: the runtime's rule (moecomm/Model/Limits.h).
static LogicalResult verifyAlign(Operation *op, std::optional<int64_t> align) {
  if (align && !::moecomm::isValidAlign(*align))
    return op->emitOpError()
           << "align must be a power of two in [1, " << ::moecomm::kMaxAlign
           << "] rows, got " << *align;
  return success();
}

/// When the handle's type records its strategy, `stage` must exist for that
/// strategy and topology and, when given, have `scope`.
static LogicalResult verifyStage(Operation *op, Value handle,
                                 Direction direction, int64_t stage,
                                 std::optional<Scope> scope = {}) {
  if (stage < 0)
    return op->emitOpError() << "stage must be >= 0, got " << stage;
  auto type = cast<HandleType>(handle.getType());
  std::optional<Strategy> strategy = type.getStrategy();
  if (!strategy)
    return success();
  int64_t ranks = type.getRanks(), perNode = type.getRanksPerNode();
  int64_t stages = getNumStages(*strategy, ranks, perNode);
  if (stage >= stages)
    return op->emitOpError()
           << "stage " << stage << " out of range: "
           << stringifyStrategy(*strategy) << " on " << ranks << " ranks x "
           << perNode << " per node has " << stages << " exchange stage(s)";
  Scope expected = getStageScope(*strategy, ranks, perNode, direction, stage);
  if (scope && *scope != expected)
    return op->emitOpError()
           << "stage " << stage << " of " << stringifyDirection(direction)
           << " is " << stringifyScope(expected) << " for "
           << stringifyStrategy(*strategy) << " on " << ranks << " ranks x "
           << perNode << " per node, not " << stringifyScope(*scope);
  return success();
}

/// The strategy a handle type records: concrete strategies only.
static std::optional<Strategy> concreteStrategy(StrategyAttr attr) {
  if (!attr || attr.getValue() == Strategy::automatic)
    return std::nullopt;
  return attr.getValue();
}

/// The type of rows like `rows` (a [N, H] tensor) whose count N is known
/// only at run time (what an exchange or a permute returns).
static RankedTensorType dynamicRows(Value rows) {
  auto type = cast<RankedTensorType>(rows.getType());
  return RankedTensorType::get({ShapedType::kDynamic, type.getDimSize(1)},
                               type.getElementType());
}

/// The type of scales like `scales` (a [N, B] tensor) whose count N is
/// known only at run time (what an exchange or a permute returns with
/// their rows).
static RankedTensorType dynamicScales(Value scales) {
  auto type = cast<RankedTensorType>(scales.getType());
  return RankedTensorType::get({ShapedType::kDynamic, type.getDimSize(1)},
                               type.getElementType());
}

//===----------------------------------------------------------------------===//
// Step directive: `stage N` or `output`
//===----------------------------------------------------------------------===//

static ParseResult parseStep(OpAsmParser &parser, IntegerAttr &stage) {
  if (succeeded(parser.parseOptionalKeyword("output")))
    return success();
  int64_t value;
  if (parser.parseKeyword("stage") || parser.parseInteger(value))
    return failure();
  stage = parser.getBuilder().getI64IntegerAttr(value);
  return success();
}

static void printStep(OpAsmPrinter &printer, Operation *, IntegerAttr stage) {
  if (stage)
    printer << "stage " << stage.getInt();
  else
    printer << "output";
}

//===----------------------------------------------------------------------===//
// Direction directive: a bare `dispatch` / `combine` keyword
//===----------------------------------------------------------------------===//

static ParseResult parseDirection(OpAsmParser &parser, DirectionAttr &attr) {
  StringRef keyword;
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<Direction> direction = symbolizeDirection(keyword);
  if (!direction)
    return parser.emitError(loc) << "expected `dispatch` or `combine`, got `"
                                 << keyword << "`";
  attr = DirectionAttr::get(parser.getContext(), *direction);
  return success();
}

static void printDirection(OpAsmPrinter &printer, Operation *,
                           DirectionAttr attr) {
  printer << stringifyDirection(attr.getValue());
}

#define GET_OP_CLASSES
#include "moecomm/Dialect/MoEComm/MoECommOps.cpp.inc"

//===----------------------------------------------------------------------===//
// DispatchOp
//===----------------------------------------------------------------------===//

/// The wire dtype in effect for rows of `x` and an optional `wire`.
static WireDtype wireDtypeFor(RankedTensorType x,
                              std::optional<WireDtype> wire) {
  if (wire)
    return *wire;
  return x.getElementType().isF32() ? WireDtype::f32 : WireDtype::bf16;
}

/// A non-FP8 wire dtype must be x's dtype.
static LogicalResult verifyWire(Operation *op, RankedTensorType x,
                                std::optional<WireDtype> wire) {
  if (!wire || isFp8Wire(*wire))
    return success();
  if ((*wire == WireDtype::f32) == x.getElementType().isF32())
    return success();
  return op->emitOpError() << "wire dtype " << stringifyWireDtype(*wire)
                           << " does not match x's " << x.getElementType()
                           << "; use x's dtype or fp8_e4m3";
}


WireDtype DispatchOp::getWireDtype() {
  return wireDtypeFor(getX().getType(), getWire());
}

LogicalResult DispatchOp::inferReturnTypes(MLIRContext *ctx,
                                           std::optional<Location>,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  TopologyAttr topology = adaptor.getTopology();
  results.push_back(dynamicRows(adaptor.getX()));
  results.push_back(RankedTensorType::get({ShapedType::kDynamic},
                                          Float32Type::get(ctx)));
  results.push_back(RankedTensorType::get({topology.getLocalExperts()},
                                          IntegerType::get(ctx, 64)));
  results.push_back(
      HandleType::get(topology, concreteStrategy(adaptor.getStrategyAttr())));
  return success();
}

LogicalResult DispatchOp::verify() {
  RankedTensorType x = getX().getType();
  if (failed(verifyHidden(*this, "x", x)) ||
      failed(verifyRouting(*this, getTopology(), getTopkIdx().getType(),
                           getTopkWeights().getType(), x)) ||
      failed(verifyCapacity(*this, getCapacity())) ||
      failed(verifyAlign(*this, getAlign())))
    return failure();
  return verifyWire(*this, x, getWire());
}

/// The token count T of `dispatch`: static in any of topk_idx, topk_weights
/// and x (its verifier makes those agree), else dynamic.
static int64_t dispatchTokens(DispatchOp dispatch) {
  for (Value v :
       {dispatch.getTopkIdx(), dispatch.getTopkWeights(), dispatch.getX()}) {
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getRank() >= 1 && !type.isDynamicDim(0))
      return type.getDimSize(0);
  }
  return ShapedType::kDynamic;
}

/// The rules of combine and cached_dispatch against the dispatch of their
/// handle, when it is in sight: `rows` (named `rowsName`) have the hidden
/// size of the dispatch's x, and `tokens` rows of `tokensName` (one per
/// token) agree with its token count when both are static.
static LogicalResult verifyAgainstDispatch(Operation *op, Value handle,
                                           StringRef rowsName,
                                           RankedTensorType rows,
                                           StringRef tokensName,
                                           int64_t tokens) {
  auto dispatch = handle.getDefiningOp<DispatchOp>();
  if (!dispatch)
    return success();
  RankedTensorType x = dispatch.getX().getType();
  if (x.getDimSize(1) != rows.getDimSize(1))
    return op->emitOpError()
           << rowsName << " hidden size " << rows.getDimSize(1)
           << " differs from the dispatch's x hidden size " << x.getDimSize(1);
  int64_t t = dispatchTokens(dispatch);
  if (!ShapedType::isDynamic(t) && !ShapedType::isDynamic(tokens) &&
      t != tokens)
    return op->emitOpError() << tokensName << " has " << tokens
                             << " rows but the dispatch has " << t << " tokens";
  return success();
}

//===----------------------------------------------------------------------===//
// CombineOp
//===----------------------------------------------------------------------===//

LogicalResult CombineOp::verify() {
  RankedTensorType y = getY().getType(), out = getOut().getType();
  if (failed(verifyHidden(*this, "y", y)))
    return failure();
  if (out.getElementType() != y.getElementType())
    return emitOpError() << "result dtype " << out.getElementType()
                         << " must match y's " << y.getElementType();
  if (out.getDimSize(1) != y.getDimSize(1))
    return emitOpError() << "result hidden size " << out.getDimSize(1)
                         << " must match y's " << y.getDimSize(1);
  return verifyAgainstDispatch(*this, getHandle(), "y", y, "result",
                               out.getDimSize(0));
}

//===----------------------------------------------------------------------===//
// CachedDispatchOp
//===----------------------------------------------------------------------===//

WireDtype CachedDispatchOp::getWireDtype() {
  return wireDtypeFor(getX().getType(), getWire());
}

LogicalResult
CachedDispatchOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                   Adaptor adaptor,
                                   SmallVectorImpl<Type> &results) {
  results.push_back(dynamicRows(adaptor.getX()));
  return success();
}

LogicalResult CachedDispatchOp::verify() {
  RankedTensorType x = getX().getType();
  if (failed(verifyHidden(*this, "x", x)) ||
      failed(verifyWire(*this, x, getWire())))
    return failure();
  return verifyAgainstDispatch(*this, getHandle(), "x", x, "x",
                               x.getDimSize(0));
}

//===----------------------------------------------------------------------===//
// AllToAllOp
//===----------------------------------------------------------------------===

LogicalResult AllToAllOp::inferReturnTypes(MLIRContext *ctx,
                                           std::optional<Location>,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  results.push_back(dynamicRows(adaptor.getSend()));
  results.push_back(RankedTensorType::get({adaptor.getTopology().getRanks()},
                                          IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult AllToAllOp::verify() {
  if (failed(verifyHidden(*this, "send rows", getSend().getType())))
    return failure();
  auto counts = cast<RankedTensorType>(getSendCounts().getType());
  int64_t ranks = getTopology().getRanks();
  // A dynamic count is checked against the ranks at run time.
  if (counts.getRank() != 1 ||
      (!counts.isDynamicDim(0) && counts.getDimSize(0) != ranks))
    return emitOpError() << "send_counts must have one count per rank, shape ["
                         << ranks << "] or [?], got " << shapeStr(counts);
  return success();
}

//===----------------------------------------------------------------------===//
// LayoutOp
//===----------------------------------------------------------------------===//

LogicalResult LayoutOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location>,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  TopologyAttr topology = adaptor.getTopology();
  results.push_back(
      HandleType::get(topology, concreteStrategy(adaptor.getStrategyAttr())));
  results.push_back(RankedTensorType::get({ShapedType::kDynamic},
                                          Float32Type::get(ctx)));
  results.push_back(RankedTensorType::get({topology.getLocalExperts()},
                                          IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult LayoutOp::verify() {
  if (failed(verifyRouting(*this, getTopology(), getTopkIdx().getType(),
                           getTopkWeights().getType())) ||
      failed(verifyCapacity(*this, getCapacity())) ||
      failed(verifyAlign(*this, getAlign())))
    return failure();
  if (getStrategy() == Strategy::automatic)
    return emitOpError() << "needs a concrete strategy (per_expert, flat or "
                            "hierarchical); auto is resolved by "
                            "moecomm-split-hierarchical";
  return success();
}

int64_t LayoutOp::getNumStages() {
  TopologyAttr topo = getTopology();
  return mlir::moecomm::getNumStages(getStrategy(), topo.getRanks(),
                               topo.getRanksPerNode());
}

Scope LayoutOp::getStageScope(Direction direction, int64_t stage) {
  TopologyAttr topo = getTopology();
  return mlir::moecomm::getStageScope(getStrategy(), topo.getRanks(),
                                topo.getRanksPerNode(), direction, stage);
}

//===----------------------------------------------------------------------===//
// ExpertOffsetsOp
//===----------------------------------------------------------------------===//

LogicalResult
ExpertOffsetsOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location>,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &results) {
  auto handle = cast<HandleType>(adaptor.getHandle().getType());
  results.push_back(RankedTensorType::get(
      {handle.getLocalExperts() + 1}, IntegerType::get(ctx, 64)));
  return success();
}

//===----------------------------------------------------------------------===//
// Framework level: PermuteTokensOp, UnpermuteTokensOp, SortChunksOp,
// UnsortChunksOp
//===----------------------------------------------------------------------===//

/// A static dimension `d` or ShapedType::kDynamic for a tensor of rank < d+1
/// (the verifier reports the rank).
static int64_t dimOr(Type type, unsigned d) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  return ranked && ranked.getRank() > d ? ranked.getDimSize(d)
                                        : ShapedType::kDynamic;
}

/// [n, H] rows of `rows`'s element type, H read with dimOr (types are
/// inferred before the operands' constraints are verified).
static RankedTensorType rowsOf(Value rows, int64_t n) {
  return RankedTensorType::get({n, dimOr(rows.getType(), 1)},
                               getElementTypeOrSelf(rows.getType()));
}

/// The routing weights of permute_tokens / unpermute_tokens: [T, K] like
/// `slots` (topk_idx or slot_rows, named `slotsName`), T compared where both
/// are static.
static LogicalResult verifyTopkWeights(Operation *op, Value weights,
                                       RankedTensorType slots,
                                       StringRef slotsName) {
  auto w = cast<RankedTensorType>(weights.getType());
  bool sameT =
      w.getRank() == 2 && (w.isDynamicDim(0) || slots.isDynamicDim(0) ||
                           w.getDimSize(0) == slots.getDimSize(0));
  if (!sameT || w.getDimSize(1) != slots.getDimSize(1))
    return op->emitOpError()
           << "weights must be [T, K] like " << slotsName << " "
           << shapeStr(slots) << ", got " << shapeStr(w);
  return success();
}

LogicalResult
PermuteTokensOp::inferReturnTypes(MLIRContext *ctx,
                                  std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &results) {
  // An expert count no tensor can have is reported here: the types are
  // built before the verifier runs.
  int64_t experts = adaptor.getExpertsAttr().getInt();
  if (experts < 1 || experts > kMaxExperts)
    return emitOptionalError(loc, "moecomm.permute_tokens: experts must be in "
                                  "[1, ",
                             kMaxExperts, "], got ", experts);
  Type i64 = IntegerType::get(ctx, 64);
  results.push_back(rowsOf(adaptor.getX(), ShapedType::kDynamic));
  results.push_back(RankedTensorType::get({experts}, i64));
  results.push_back(RankedTensorType::get(
      {dimOr(adaptor.getTopkIdx().getType(), 0),
       dimOr(adaptor.getTopkIdx().getType(), 1)},
      i64));
  return success();
}

LogicalResult PermuteTokensOp::verify() {
  auto x = cast<RankedTensorType>(getX().getType());
  if (failed(verifyHidden(*this, "x", x)))
    return failure();
  auto idx = cast<RankedTensorType>(getTopkIdx().getType());
  if (idx.getRank() != 2)
    return emitOpError() << "topk_idx must be 2-D [T, K], got rank "
                         << idx.getRank();
  int64_t k = idx.getDimSize(1);
  if (ShapedType::isDynamic(k) || k < 1 || k > kMaxTopk ||
      k > int64_t(getExperts()))
    return emitOpError() << "topk must be static, >= 1 and at most "
                         << std::min<int64_t>(kMaxTopk, getExperts())
                         << " (the experts and the limit), got topk_idx "
                         << shapeStr(idx);
  if (!x.isDynamicDim(0) && !idx.isDynamicDim(0) &&
      x.getDimSize(0) != idx.getDimSize(0))
    return emitOpError() << "x has " << x.getDimSize(0)
                         << " tokens but topk_idx has " << idx.getDimSize(0);
  if (Value weights = getTopkWeights())
    return verifyTopkWeights(*this, weights, idx, "topk_idx");
  return success();
}

LogicalResult
UnpermuteTokensOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &results) {
  results.push_back(
      rowsOf(adaptor.getRows(), dimOr(adaptor.getSlotRows().getType(), 0)));
  return success();
}

LogicalResult UnpermuteTokensOp::verify() {
  if (failed(verifyHidden(*this, "rows",
                          cast<RankedTensorType>(getRows().getType()))))
    return failure();
  auto slots = cast<RankedTensorType>(getSlotRows().getType());
  if (slots.getRank() != 2 || slots.isDynamicDim(1) || slots.getDimSize(1) < 1)
    return emitOpError() << "slot_rows must be 2-D [T, K] with a static K "
                            ">= 1, got "
                         << shapeStr(slots);
  if (Value weights = getTopkWeights())
    return verifyTopkWeights(*this, weights, slots, "slot_rows");
  return success();
}

/// sort_chunks and unsort_chunks: counts [W, L] with a static L >= 1.
static LogicalResult verifyChunks(Operation *op, Value in, Value counts) {
  if (failed(verifyHidden(op, "in", cast<RankedTensorType>(in.getType()))))
    return failure();
  auto type = cast<RankedTensorType>(counts.getType());
  if (type.getRank() != 2 || type.isDynamicDim(1) || type.getDimSize(1) < 1)
    return op->emitOpError()
           << "counts must be 2-D [W, L] (rows from each source rank to each "
              "local expert) with a static L >= 1, got "
           << shapeStr(type);
  return success();
}

LogicalResult SortChunksOp::inferReturnTypes(MLIRContext *ctx,
                                             std::optional<Location>,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &results) {
  results.push_back(rowsOf(adaptor.getIn(), ShapedType::kDynamic));
  results.push_back(RankedTensorType::get(
      {dimOr(adaptor.getCounts().getType(), 1)}, IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult SortChunksOp::verify() {
  return verifyChunks(*this, getIn(), getCounts());
}

LogicalResult UnsortChunksOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location>,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &results) {
  results.push_back(rowsOf(adaptor.getIn(), dimOr(adaptor.getIn().getType(), 0)));
  return success();
}

LogicalResult UnsortChunksOp::verify() {
  return verifyChunks(*this, getIn(), getCounts());
}

//===----------------------------------------------------------------------===//
// PermuteOp
//===----------------------------------------------------------------------===//

/// Rules shared by the row-moving staged ops: scales pairing, no FP8 on
/// combine, `weighted` only on combine.
static LogicalResult verifyStagedRows(Operation *op, RankedTensorType in,
                                      Value scales, Direction direction,
                                      bool weighted) {
  if (failed(verifyScales(op, "rows", in, scales)))
    return failure();
  if (direction == Direction::combine && !isRowFloat(in.getElementType()))
    return op->emitOpError() << "combine rows must be bf16 or f32, got "
                             << in.getElementType();
  if (weighted && direction != Direction::combine)
    return op->emitOpError() << "`weighted` applies to combine only";
  return success();
}

LogicalResult PermuteOp::inferReturnTypes(MLIRContext *ctx,
                                          std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  results.push_back(dynamicRows(adaptor.getIn()));
  if (adaptor.getScales())
    results.push_back(dynamicScales(adaptor.getScales()));
  return success();
}

LogicalResult PermuteOp::verify() {
  if (failed(verifyStagedRows(*this, getIn().getType(), getScales(),
                              getDirection(), getWeighted())))
    return failure();
  if (auto stage = getStage())
    return verifyStage(*this, getHandle(), getDirection(), *stage);
  return success();
}

//===----------------------------------------------------------------------===//
// QuantizeOp / DequantizeOp
//===----------------------------------------------------------------------===//

LogicalResult QuantizeOp::inferReturnTypes(MLIRContext *ctx,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  auto in = cast<RankedTensorType>(adaptor.getIn().getType());
  if (in.getRank() != 2)
    return emitOptionalError(loc, "'moecomm.quantize' op input must be 2-D "
                                  "rows [N, H], got rank ",
                             in.getRank());
  results.push_back(
      RankedTensorType::get(in.getShape(), Float8E4M3FNType::get(ctx)));
  std::optional<WireDtype> wire = adaptor.getWire();
  // A wire that is not FP8 is the verifier's to report.
  results.push_back(getScalesType(
      ctx, wire && isFp8Wire(*wire) ? *wire : WireDtype::fp8_e4m3,
      in.getDimSize(0), in.getDimSize(1)));
  return success();
}

/// The `wire` attribute of an op that converts to or from FP8 rows: absent
/// for fp8_e4m3 (the default, so that its IR reads as before the E8M0
/// formats).
static WireDtypeAttr fp8WireAttr(MLIRContext *ctx, WireDtype wire) {
  return wire == WireDtype::fp8_e4m3 ? WireDtypeAttr()
                                     : WireDtypeAttr::get(ctx, wire);
}

/// A `wire` attribute of a quantize, dequantize or pack names an FP8 format.
static LogicalResult verifyFp8Wire(Operation *op,
                                   std::optional<WireDtype> wire) {
  if (!wire || isFp8Wire(*wire))
    return success();
  return op->emitOpError() << "wire<" << stringifyWireDtype(*wire)
                           << "> is not an FP8 format (fp8_e4m3, "
                              "fp8_e4m3_ue8m0 or mxfp8)";
}

void QuantizeOp::build(OpBuilder &builder, OperationState &state, Value in,
                       WireDtype wire) {
  build(builder, state, in, fp8WireAttr(builder.getContext(), wire));
}

WireDtype QuantizeOp::getFp8Wire() {
  return getWire().value_or(WireDtype::fp8_e4m3);
}

LogicalResult QuantizeOp::verify() {
  if (failed(verifyFp8Wire(*this, getWire())))
    return failure();
  return verifyHidden(*this, "input", cast<RankedTensorType>(getIn().getType()));
}

void DequantizeOp::build(OpBuilder &builder, OperationState &state, Type out,
                         Value q, Value scales, WireDtype wire) {
  build(builder, state, out, q, scales,
        fp8WireAttr(builder.getContext(), wire));
}

WireDtype DequantizeOp::getFp8Wire() {
  return getWire().value_or(WireDtype::fp8_e4m3);
}

LogicalResult DequantizeOp::verify() {
  RankedTensorType q = getQ().getType();
  auto out = cast<RankedTensorType>(getOut().getType());
  if (!isFp8(q.getElementType()))
    return emitOpError() << "input must be f8E4M3FN rows, got "
                         << q.getElementType();
  if (failed(verifyFp8Wire(*this, getWire())) ||
      failed(verifyScales(*this, "input rows", q, getScales(), getFp8Wire())))
    return failure();
  if (out.getRank() != 2 ||
      failed(verifyCompatibleShape(out.getShape(), q.getShape())))
    return emitOpError() << "result shape " << shapeStr(out)
                         << " must match the input's " << shapeStr(q);
  return success();
}

//===----------------------------------------------------------------------===//
// PackOp / UnpackOp
//===----------------------------------------------------------------------===//

/// pack and unpack move rows without changing their hidden size.
static LogicalResult verifySameHidden(Operation *op, RankedTensorType in,
                                      RankedTensorType out) {
  if (out.getDimSize(1) == in.getDimSize(1))
    return success();
  return op->emitOpError() << "result hidden size " << out.getDimSize(1)
                           << " must match the input's " << in.getDimSize(1);
}

LogicalResult PackOp::verify() {
  RankedTensorType in = getIn().getType(), out = getOut().getType();
  Type inElt = in.getElementType(), outElt = out.getElementType();
  bool quantize = isRowFloat(inElt) && isFp8(outElt);
  if (getWire() && !quantize)
    return emitOpError() << "wire<" << stringifyWireDtype(*getWire())
                         << "> is the format a pack quantizes to, but this "
                            "pack does not quantize";
  if (failed(verifyFp8Wire(*this, getWire())))
    return failure();
  // A quantizing pack writes its format's scales (fp8_e4m3 by default).
  std::optional<WireDtype> outWire;
  if (quantize)
    outWire = getWire().value_or(WireDtype::fp8_e4m3);
  if (failed(verifyStagedRows(*this, in, getScales(), getDirection(),
                              getWeighted())) ||
      failed(verifyScales(*this, "result rows", out, getOutScales(), outWire)))
    return failure();
  if (failed(verifySameHidden(*this, in, out)))
    return failure();
  if (inElt != outElt && !(quantize && getDirection() == Direction::dispatch))
    return emitOpError() << "cannot pack " << inElt << " rows into " << outElt
                         << " rows; only dispatch may quantize bf16/f32 to "
                            "f8E4M3FN";
  return verifyStage(*this, getHandle(), getDirection(), getStage());
}

LogicalResult UnpackOp::verify() {
  RankedTensorType in = getIn().getType(), out = getOut().getType();
  if (failed(verifyStagedRows(*this, in, getScales(), getDirection(),
                              getWeighted())) ||
      failed(verifyHidden(*this, "result", out)))
    return failure();
  if (failed(verifySameHidden(*this, in, out)))
    return failure();
  if (isRowFloat(in.getElementType()) &&
      in.getElementType() != out.getElementType())
    return emitOpError() << "cannot unpack " << in.getElementType()
                         << " rows into " << out.getElementType() << " rows";
  return success();
}

//===----------------------------------------------------------------------===//
// ExchangeOp / ExchangeStartOp / ExchangeWaitOp
//===----------------------------------------------------------------------===//

static void inferExchangeResults(Value send, Value scales,
                                 SmallVectorImpl<Type> &results) {
  results.push_back(dynamicRows(send));
  if (scales)
    results.push_back(dynamicScales(scales));
}

/// The rules exchange and exchange_start share: unweighted staged rows,
/// sent in the stage and scope of their handle's plan.
template <typename ExchangeOpT>
static LogicalResult verifyExchangeRows(ExchangeOpT op) {
  if (failed(verifyStagedRows(op, op.getSend().getType(), op.getScales(),
                              op.getDirection(), /*weighted=*/false)))
    return failure();
  return verifyStage(op, op.getHandle(), op.getDirection(), op.getStage(),
                     op.getScope());
}

LogicalResult ExchangeOp::inferReturnTypes(MLIRContext *ctx,
                                           std::optional<Location>,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  inferExchangeResults(adaptor.getSend(), adaptor.getScales(), results);
  return success();
}

LogicalResult ExchangeOp::verify() { return verifyExchangeRows(*this); }

LogicalResult
ExchangeStartOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location>,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &results) {
  results.push_back(RequestType::get(ctx));
  inferExchangeResults(adaptor.getSend(), adaptor.getScales(), results);
  return success();
}

LogicalResult ExchangeStartOp::verify() {
  if (failed(verifyExchangeRows(*this)))
    return failure();
  // The receive buffers are not readable before the wait: their one use is
  // the wait that completes this request.
  if (!getRequest().hasOneUse())
    return emitOpError() << "request must have exactly one use (its "
                            "moecomm.exchange_wait), got "
                         << std::distance(getRequest().use_begin(),
                                          getRequest().use_end());
  auto wait = dyn_cast<ExchangeWaitOp>(*getRequest().user_begin());
  if (!wait)
    return emitOpError() << "request must be used by a moecomm.exchange_wait";
  // Every rank must complete the exchange: no wait that may be skipped.
  if (wait->getBlock() != getOperation()->getBlock())
    return emitOpError() << "its moecomm.exchange_wait must be in the same "
                            "block (a wait that may not run leaves every rank "
                            "waiting)";
  for (Value recv : {getRecv(), getRecvScales()}) {
    if (!recv)
      continue;
    for (Operation *user : recv.getUsers())
      if (user != wait.getOperation())
        return emitOpError() << "receive buffers may only be used by the "
                                "matching moecomm.exchange_wait until it "
                                "completes";
  }
  return success();
}

LogicalResult ExchangeWaitOp::inferReturnTypes(MLIRContext *ctx,
                                               std::optional<Location>,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &results) {
  results.push_back(adaptor.getRecv().getType());
  if (adaptor.getRecvScales())
    results.push_back(adaptor.getRecvScales().getType());
  return success();
}

LogicalResult ExchangeWaitOp::verify() {
  if (failed(verifyScales(*this, "receive rows", getRecv().getType(),
                          getRecvScales())))
    return failure();
  auto start = getRequest().getDefiningOp<ExchangeStartOp>();
  if (!start)
    return emitOpError() << "request must come from a moecomm.exchange_start "
                            "in the same block";
  if (start.getRecv() != getRecv() || start.getRecvScales() != getRecvScales())
    return emitOpError() << "receive buffers must be the ones produced by the "
                            "moecomm.exchange_start of this request";
  return success();
}

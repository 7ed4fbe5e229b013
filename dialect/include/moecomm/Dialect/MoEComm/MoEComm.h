//===- MoEComm.h - moecomm dialect ------------------------------*- C++ -*-===//
//
// The moecomm dialect: MoE dispatch/combine/all_to_all at the collective
// level and the staged ops (layout, permute, pack, exchange, unpack, FP8
// quantize/dequantize) they are compiled into. See MoECommOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_DIALECT_MOECOMM_MOECOMM_H
#define MOECOMM_DIALECT_MOECOMM_MOECOMM_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "moecomm/Model/Limits.h"
#include "moecomm/Model/WireFormat.h"

#include "moecomm/Dialect/MoEComm/MoECommDialect.h.inc"
#include "moecomm/Dialect/MoEComm/MoECommEnums.h.inc"

namespace mlir::moecomm {

/// The resource every collective reads and writes, so that collectives keep
/// the order in which all ranks issue them.
struct CollectiveResource
    : public SideEffects::Resource::Base<CollectiveResource> {
  StringRef getName() final { return "MoECommCollective"; }
};

/// The limits of what the runtime can address (moecomm/Model/Limits.h) and
/// which the verifiers check.
using ::moecomm::kMaxExperts;
using ::moecomm::kMaxHidden;
using ::moecomm::kMaxRanks;
using ::moecomm::kMaxTopk;

/// Parses an integer topology parameter (MoEComm_CountParameter), rejecting
/// `true` and `false`.
FailureOr<int64_t> parseCount(AsmParser &parser);

/// Parses a topology's expert placement, written in full as
/// `array<i64: ...>` (the form it prints in).
FailureOr<DenseI64ArrayAttr> parsePlacement(AsmParser &parser);

/// True for the FP8 wire dtypes (fp8_e4m3, fp8_e4m3_ue8m0, mxfp8).
inline bool isFp8Wire(WireDtype wire) {
  return wire == WireDtype::fp8_e4m3 || wire == WireDtype::fp8_e4m3_ue8m0 ||
         wire == WireDtype::mxfp8;
}

/// The runtime's data type (moecommDataType_t) of rows sent as `wire`; the
/// two enums number the E8M0 formats differently.
moecommDataType_t getWireDataType(WireDtype wire);

/// The block scales of rows of FP8 wire `wire` with hidden size `hidden`:
/// `tensor<rows x fp8Blocks(wire, H) x f32>` for fp8_e4m3,
/// `tensor<rows x fp8Blocks(wire, H) x f8E8M0FNU>` for the E8M0 formats
/// (moecomm/Model/WireFormat.h); the column count is dynamic for a hidden
/// size the verifiers reject (not in [1, kMaxHidden]).
RankedTensorType getScalesType(MLIRContext *ctx, WireDtype wire, int64_t rows,
                               int64_t hidden);

/// The FP8 wire whose scales for rows of `hidden` elements have the type of
/// `scales` ([N, B]): f32 scales are fp8_e4m3's; E8M0 scales with
/// ceil(H/128) columns fp8_e4m3_ue8m0's, with ceil(H/32) columns mxfp8's;
/// none for other scales. When H <= 32 both E8M0 formats have one scale per
/// row, store, move and dequantize alike, and this answers fp8_e4m3_ue8m0:
/// only quantizing (and the dequantize a consumer's quantize may cancel)
/// tell them apart, so those ops carry their format (`wire`).
std::optional<WireDtype> getFp8WireOfScales(RankedTensorType scales,
                                            int64_t hidden);

/// Exchange stages of `strategy` on a topology of `ranks` ranks with
/// `ranksPerNode` per node: the stage rule of moecomm/Model/StageRule.h (0
/// when W == 1; 1 (global) for per_expert and flat; hierarchical: 1
/// (intra_node) when G == W, 1 (inter_node) when G == 1, else 2).
int64_t getNumStages(Strategy strategy, int64_t ranks, int64_t ranksPerNode);

/// Scope of exchange stage `stage` (< getNumStages) of `direction`; combine
/// stages mirror dispatch stages in reverse order (StageRule.h).
Scope getStageScope(Strategy strategy, int64_t ranks, int64_t ranksPerNode,
                    Direction direction, int64_t stage);

} // namespace mlir::moecomm

#define GET_ATTRDEF_CLASSES
#include "moecomm/Dialect/MoEComm/MoECommAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "moecomm/Dialect/MoEComm/MoECommTypes.h.inc"

#define GET_OP_CLASSES
#include "moecomm/Dialect/MoEComm/MoECommOps.h.inc"

#endif // MOECOMM_DIALECT_MOECOMM_MOECOMM_H

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

#include "moecomm/Dialect/MoEComm/MoECommDialect.h.inc"
#include "moecomm/Dialect/MoEComm/MoECommEnums.h.inc"

namespace mlir::moecomm {

/// The resource every collective reads and writes, so that collectives keep
/// the order in which all ranks issue them.
struct CollectiveResource
    : public SideEffects::Resource::Base<CollectiveResource> {
  StringRef getName() final { return "MoECommCollective"; }
};

/// Elements per FP8 scale block (DeepSeek-V3's 1x128 activation blocks).
constexpr int64_t kFp8BlockSize = 128;

/// Limits of what the runtime can address: ranks, experts (31-bit ids) and
/// the hidden size (elements of one row).
constexpr int64_t kMaxRanks = int64_t(1) << 20;
constexpr int64_t kMaxExperts = (int64_t(1) << 31) - 1;
constexpr int64_t kMaxHidden = (int64_t(1) << 31) - 1;

/// The largest top-k the verifier accepts. Compiling a layer takes time
/// linear in a static K (the cost model sums over the K slots), a minute
/// near 2^31; models route to at most a few dozen experts. The same bound
/// as moecomm-run's routing files.
constexpr int64_t kMaxTopk = 4096;

/// Parses an integer topology parameter (MoEComm_CountParameter), rejecting
/// `true` and `false`.
FailureOr<int64_t> parseCount(AsmParser &parser);

/// Scales per row of hidden size `hidden`: ceil(hidden / 128).
inline int64_t getNumScaleBlocks(int64_t hidden) {
  return (hidden + kFp8BlockSize - 1) / kFp8BlockSize;
}

/// Exchange stages of `strategy` on a topology of `ranks` ranks with
/// `ranksPerNode` per node (the runtime uses the same rule): 0 when W == 1;
/// 1 (global) for per_expert and flat; hierarchical: 1 (intra_node) when
/// G == W, 1 (inter_node) when G == 1, else 2.
int64_t getNumStages(Strategy strategy, int64_t ranks, int64_t ranksPerNode);

/// Scope of exchange stage `stage` (< getNumStages) of `direction`; combine
/// stages mirror dispatch stages in reverse order.
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

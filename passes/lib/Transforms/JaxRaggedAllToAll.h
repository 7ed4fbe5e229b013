//===- JaxRaggedAllToAll.h - what moecomm reads of JAX's call ---*- C++ -*-===//
//
// JAX's `stablehlo.custom_call @ragged_all_to_all` (isJaxRaggedAllToAll,
// Passes.h) as moecomm reads it, shared by the passes that take it in:
// moecomm-import-ragged-all-to-all converts any such call, and
// moecomm-raise-dispatch replaces the ones of a per-expert exchange.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_TRANSFORMS_JAXRAGGEDALLTOALL_H
#define MOECOMM_TRANSFORMS_JAXRAGGEDALLTOALL_H

#include "mlir/IR/Operation.h"

namespace mlir::moecomm {

/// The operands of the call, in XLA's order and by its names (operand,
/// output, input_offsets, send_sizes, output_offsets, recv_sizes).
enum class RaggedOperand : unsigned {
  operand,
  output,
  inputOffsets,
  sendSizes,
  outputOffsets,
  recvSizes
};

/// Checks a call (isJaxRaggedAllToAll) against what moecomm supports of
/// XLA's RaggedAllToAll and sets `ranks` to its group's size W: in a
/// function body; api_version 4; backend_config with replica_groups one
/// group of all W ranks in order (and channel_id); no other attribute; 6
/// operands, 1 result of the output's type; operand and output 2-D bf16 or
/// f32 rows of one static width >= 1; offsets and sizes tensor<W x i32|i64>;
/// no encodings. Fails after one error diagnostic at the call naming the
/// attribute or operand.
LogicalResult checkJaxRaggedAllToAll(Operation *op, int64_t &ranks);

/// The call's operand `which`.
inline Value raggedOperand(Operation *op, RaggedOperand which) {
  return op->getOperand(static_cast<unsigned>(which));
}

} // namespace mlir::moecomm

#endif // MOECOMM_TRANSFORMS_JAXRAGGEDALLTOALL_H

//===- RowWise.h - may a MoE layer's tokens be chunked? ---------*- C++ -*-===//
//
// moecomm-schedule-overlap clones a staged MoE layer once per token chunk.
// That changes no output row only if the layer's expert computation gives
// every received row a result that depends on that row, its expert and
// values that are the same in every chunk (weights, constants), never on
// which other rows came with it. This is the check of that property,
// including the per-expert loop over the segments (sized by
// tokens_per_expert, starting at moecomm.expert_offsets or, unpadded, at
// the prefix sums; the pass's description in Passes.td states the rules).
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_TRANSFORMS_ROWWISE_H
#define MOECOMM_TRANSFORMS_ROWWISE_H

#include "moecomm/Dialect/MoEComm/MoEComm.h"

#include "llvm/ADT/SetVector.h"

#include <string>

namespace mlir::moecomm {

/// Checks the ops of one staged layer: `ops` are the ops of `layout`'s block
/// from the layout to its combine outputs (program order, the layout
/// first). Every op that is not a moecomm op must be row-wise or a segment
/// loop, and the values that change with the chunk without holding rows
/// (tokens_per_expert, row counts, what is computed from them) may only size
/// tensors and place segments, never be data. On failure `why` names the
/// first op that breaks the rules and the reason.
LogicalResult checkRowWise(LayoutOp layout,
                           const llvm::SetVector<Operation *> &ops,
                           std::string &why);

} // namespace mlir::moecomm

#endif // MOECOMM_TRANSFORMS_ROWWISE_H

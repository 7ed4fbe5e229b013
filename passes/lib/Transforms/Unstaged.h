//===- Unstaged.h - staged-level passes on collective-level IR -*- C++ -*-===//
//
// moecomm-fuse-quant, moecomm-fuse-permute and moecomm-schedule-overlap work
// on the staged level. Run on collective-level IR they would change nothing
// without a word; they say so instead.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_TRANSFORMS_UNSTAGED_H
#define MOECOMM_TRANSFORMS_UNSTAGED_H

#include "mlir/IR/Operation.h"

namespace mlir::moecomm {

/// Emits one remark of `pass` on the first collective-level dispatch,
/// combine or cached_dispatch in `root`, when there is one: `pass` leaves
/// them alone until moecomm-split-hierarchical has staged them.
void remarkUnstaged(Operation *root, StringRef pass);

} // namespace mlir::moecomm

#endif // MOECOMM_TRANSFORMS_UNSTAGED_H

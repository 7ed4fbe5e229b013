//===- ConfigureCollectives.h - options of the configure step ---*- C++ -*-===//
//
// moecomm-configure-collectives and moecomm-split-hierarchical (which runs
// it) check the same options with the same messages.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_TRANSFORMS_CONFIGURECOLLECTIVES_H
#define MOECOMM_TRANSFORMS_CONFIGURECOLLECTIVES_H

#include "moecomm/Dialect/MoEComm/MoEComm.h"

namespace mlir::moecomm {

/// Checks the configure options of `pass`: `ranks`, `ranksPerNode` and
/// `experts` >= 0 (0: keep the IR's), `capacity` >= 0 rows (0: keep),
/// `align` 0 (keep) or a power of two in [1, kMaxAlign]
/// (moecomm/Model/Limits.h). Emits an option error (OptionErrors.h)
/// otherwise. (`wire-dtype` is checked by llvm::cl.)
LogicalResult checkConfigureOptions(MLIRContext *context, StringRef pass,
                                    int64_t ranks, int64_t ranksPerNode,
                                    int64_t experts, int64_t capacity,
                                    int64_t align);

} // namespace mlir::moecomm

#endif // MOECOMM_TRANSFORMS_CONFIGURECOLLECTIVES_H

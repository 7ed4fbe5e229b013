//===- ConfigureCollectives.h - options of the configure step ---*- C++ -*-===//
//
// moecomm-configure-collectives and moecomm-split-hierarchical (which runs
// it) check the same options with the same messages.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_TRANSFORMS_CONFIGURECOLLECTIVES_H
#define MOECOMM_TRANSFORMS_CONFIGURECOLLECTIVES_H

#include "moecomm/Dialect/MoEComm/MoEComm.h"

#include <optional>

namespace mlir::moecomm {

/// Checks the configure options of `pass`: `ranks` and `ranksPerNode` >= 0
/// (0: keep the IR's), `wireDtype` empty (keep) or f32, bf16, fp8_e4m3 or
/// fp8 (the override is returned in `wire`), `capacity` >= 0 rows (0:
/// keep). Emits an option error (OptionErrors.h) otherwise.
LogicalResult checkConfigureOptions(MLIRContext *context, StringRef pass,
                                    int64_t ranks, int64_t ranksPerNode,
                                    StringRef wireDtype, int64_t capacity,
                                    std::optional<WireDtype> &wire);

} // namespace mlir::moecomm

#endif // MOECOMM_TRANSFORMS_CONFIGURECOLLECTIVES_H

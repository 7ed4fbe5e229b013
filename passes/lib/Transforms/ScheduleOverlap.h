//===- ScheduleOverlap.h - The overlap schedule's option check --*- C++ -*-===//
//
// The check of moecomm-schedule-overlap's option, which moecomm-pipeline
// also runs under its own name.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_TRANSFORMS_SCHEDULEOVERLAP_H
#define MOECOMM_TRANSFORMS_SCHEDULEOVERLAP_H

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>

namespace mlir::moecomm {

/// Checks `chunks` of `pass`: token chunks per MoE layer in
/// [1, kMaxOverlapChunks]. Emits an option error (OptionErrors.h) otherwise.
LogicalResult checkOverlapOptions(MLIRContext *context, StringRef pass,
                                  int64_t chunks);

} // namespace mlir::moecomm

#endif // MOECOMM_TRANSFORMS_SCHEDULEOVERLAP_H

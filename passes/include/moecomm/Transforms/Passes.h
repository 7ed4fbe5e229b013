//===- Passes.h - moecomm passes --------------------------------*- C++ -*-===//
//
// The passes of DESIGN.md §4 that stay within the moecomm dialect (declared
// from Passes.td): collective level -> staged level, fusion, overlap
// scheduling, cost report; and the buffer freeing of the runtime level that
// the lowering leaves (moecomm-buffer-deallocation). The lowering out of the
// dialect is in moecomm/Conversion/Passes.h, the named pipeline in
// moecomm/Pipelines/Pipeline.h.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_TRANSFORMS_PASSES_H
#define MOECOMM_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

#include <cstdint>

namespace mlir::moecomm {

#define GEN_PASS_DECL
#include "moecomm/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "moecomm/Transforms/Passes.h.inc"

/// The most token chunks per MoE layer moecomm-schedule-overlap accepts:
/// every chunk's exchanges start before the first wait, so all chunks' values
/// are live across the runtime calls, and LLVM's register allocation of the
/// lowered function grows faster than linearly with them (moecomm-run's JIT:
/// 2 s at 64 chunks, 22 s at 256). Overlap needs 2 to 8 chunks in practice.
constexpr int64_t kMaxOverlapChunks = 64;

} // namespace mlir::moecomm

#endif // MOECOMM_TRANSFORMS_PASSES_H

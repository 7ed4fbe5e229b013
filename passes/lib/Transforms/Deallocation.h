//===- Deallocation.h - deallocation of bufferized moecomm graphs -*- C++ -*-===//

#ifndef MOECOMM_PASSES_DEALLOCATION_H
#define MOECOMM_PASSES_DEALLOCATION_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::moecomm {

/// Frees the buffers of every function of `module`: in straight-line
/// functions, each buffer that is not returned (or passed to an op the
/// analysis does not know) is freed right after its last use, a buffer given
/// to moecomm_rt_exchange_start_* counting as used until the matching
/// moecomm_rt_wait; other functions get MLIR's buffer-deallocation pipeline,
/// run through `runPipeline` (Pass::runPipeline of the calling pass).
LogicalResult deallocateBuffers(
    ModuleOp module,
    function_ref<LogicalResult(OpPassManager &, Operation *)> runPipeline);

} // namespace mlir::moecomm

#endif // MOECOMM_PASSES_DEALLOCATION_H

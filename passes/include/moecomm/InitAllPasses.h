//===- InitAllPasses.h - register the passes moecomm tools offer -*- C++ -*-===//
//
// torch-mlir style one-stop registration for tools and embedders.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_INITALLPASSES_H
#define MOECOMM_INITALLPASSES_H

namespace mlir::moecomm {

/// Registers moecomm's passes (moecomm/Transforms/Passes.h,
/// moecomm/Conversion/Passes.h) and `moecomm-pipeline`, plus the upstream
/// passes (so pipelines can mix them in moecomm-opt).
void registerAllPasses();

} // namespace mlir::moecomm

#endif // MOECOMM_INITALLPASSES_H

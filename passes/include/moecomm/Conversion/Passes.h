//===- Passes.h - moecomm conversion passes ---------------------*- C++ -*-===//
//
// The lowering out of the moecomm dialect (declared from Passes.td):
// `convert-moecomm-to-runtime`, `moecomm-matmul-to-blas`.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_CONVERSION_PASSES_H
#define MOECOMM_CONVERSION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::moecomm {

#define GEN_PASS_DECL
#include "moecomm/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "moecomm/Conversion/Passes.h.inc"

} // namespace mlir::moecomm

#endif // MOECOMM_CONVERSION_PASSES_H

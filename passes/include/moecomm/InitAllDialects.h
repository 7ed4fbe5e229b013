//===- InitAllDialects.h - register the dialects moecomm uses ---*- C++ -*-===//
//
// torch-mlir style one-stop registration for tools and embedders.
//
//===----------------------------------------------------------------------===//

#ifndef MOECOMM_INITALLDIALECTS_H
#define MOECOMM_INITALLDIALECTS_H

namespace mlir {
class DialectRegistry;
namespace moecomm {

/// Registers the moecomm dialect, the upstream dialects its passes produce or
/// consume (func, arith, tensor, memref, bufferization, scf, linalg, llvm)
/// and those expert computations are written in (math, plus linalg and
/// arith), with the bufferization and conversion interfaces they need, and
/// shard, so graphs that shard their dense layers parse. moecomm-opt,
/// moecomm-run (and so moecomm-aot) all register this one list.
void registerAllDialects(DialectRegistry &registry);

} // namespace moecomm
} // namespace mlir

#endif // MOECOMM_INITALLDIALECTS_H

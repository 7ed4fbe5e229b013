/*===- moecomm-c/Dialects.h - C API for the moecomm dialect -------*- C -*-===*
 *
 * MLIR-style C API (torch-mlir / upstream mlir-c conventions): a dialect handle
 * to register and load `moecomm` into an MlirContext, and accessors for its
 * topology attribute and handle type. moecomm's passes and moecomm-pipeline
 * are in moecomm-c/Passes.h. libMoEComm-C.so also carries the MLIR C API a
 * program needs to compile a graph, so a C program links just this one
 * library: mlir-c/IR.h, Diagnostics.h, BuiltinAttributes.h, BuiltinTypes.h
 * and Pass.h; the dialect handles of mlir-c/Dialect/Func.h, Arith.h, Math.h,
 * Tensor.h, MemRef.h, Bufferization.h, SCF.h, Linalg.h, LLVM.h and Shard.h
 * (the dialects of moecomm::registerAllDialects); mlir-c/Target/LLVMIR.h and
 * mlir-c/RegisterEverything.h (mlirRegisterAllLLVMTranslations before a
 * translation to LLVM IR).
 *===----------------------------------------------------------------------===*/
#ifndef MOECOMM_C_DIALECTS_H
#define MOECOMM_C_DIALECTS_H

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/** mlirGetDialectHandle__moecomm__(): register with
 *  mlirDialectHandleRegisterDialect, load with mlirDialectHandleLoadDialect. */
MLIR_DECLARE_CAPI_DIALECT_REGISTRATION(MoEComm, moecomm);

/** Whether `attr` is a #moecomm.topology. */
MLIR_CAPI_EXPORTED bool mlirAttributeIsAMoECommTopology(MlirAttribute attr);

/** #moecomm.topology<ranks, ranks_per_node, experts>; experts = 0 omits it.
 *  Returns a null attribute (mlirAttributeIsNull) and emits a diagnostic when
 *  the numbers are invalid (ranks < 1, ranks % ranks_per_node != 0,
 *  experts % ranks != 0). */
MLIR_CAPI_EXPORTED MlirAttribute mlirMoECommTopologyAttrGet(
    MlirContext ctx, int64_t ranks, int64_t ranksPerNode, int64_t experts);
MLIR_CAPI_EXPORTED int64_t mlirMoECommTopologyAttrGetRanks(MlirAttribute attr);
MLIR_CAPI_EXPORTED int64_t
mlirMoECommTopologyAttrGetRanksPerNode(MlirAttribute attr);
MLIR_CAPI_EXPORTED int64_t mlirMoECommTopologyAttrGetExperts(MlirAttribute attr);

/** Whether `type` is a !moecomm.handle. */
MLIR_CAPI_EXPORTED bool mlirTypeIsAMoECommHandle(MlirType type);

#ifdef __cplusplus
}
#endif

#endif /* MOECOMM_C_DIALECTS_H */

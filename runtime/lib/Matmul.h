//===- Matmul.h - The expert GEMM on the host (OpenBLAS) --------*- C++ -*-===//
//
// moecomm_rt_matmul_f32's host path (Matmul.cpp), shared with the host
// device (HostDevice.cpp) so both run the same OpenBLAS call.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_MATMUL_H
#define MOECOMM_LIB_MATMUL_H

#include "CompiledDevice.h"

namespace moecomm {

/// C = A op(B) + C through cblas_sgemm on the calling thread (one BLAS
/// thread unless OPENBLAS_NUM_THREADS is set; see Matmul.cpp).
void blasGemm(const GemmArgs &args);

} // namespace moecomm

#endif // MOECOMM_LIB_MATMUL_H

//===- Quantize.h - FP8 conversion of whole row blocks ---------*- C++ -*-===//
//
// moecommQuantizeFp8 / moecommDequantizeFp8 on host rows: the per-row FP8
// codec of Fp8.h applied to a [rows][hidden] block, after the checks every
// caller-given block gets (RowKernels.h's checkRows).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_QUANTIZE_H
#define MOECOMM_LIB_QUANTIZE_H

#include "Status.h"

namespace moecomm {

/// in: [rows][hidden] f32 or bf16; out: the same shape in an FP8 wire type
/// (out's type) with its [rows][fp8Blocks(type, hidden)] scales. InvalidArgument for NULL or
/// malformed blocks, shapes that differ or other types.
Status quantizeRows(const moecommRows_t *in, const moecommRows_t *out);

/// The inverse: in FP8 with scales, out f32 or bf16 of the same shape.
Status dequantizeRows(const moecommRows_t *in, const moecommRows_t *out);

} // namespace moecomm

#endif // MOECOMM_LIB_QUANTIZE_H

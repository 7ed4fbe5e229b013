//===- DeviceRows.h - Row gather / convert / reduce on the GPU --*- C++ -*-===//
//
// The device side of the runtime's row primitives (RowKernels.h and Fp8.h
// are the CPU references, and the results are bit-identical to them):
//
//   gatherRowsDevice: out[i] = convert(in[index[i]]), one term per row:
//     same type           bytes copied (FP8: with its scales)   Pack.cu
//     f32/bf16 -> FP8     block quantization (every FP8 type)   Pack.cu
//     FP8 -> f32/bf16     dequantization                        Unpack.cu
//   reduceRowsDevice: out[i] = sum_j c_j * in[src[j]] over a CSR segment,
//     in f32 from +0 in j order (acc = acc + c * v), then rounded to out's
//     type (f32 or bf16, round to nearest even)                 Reduce.cu
//
// All pointers are device memory of the current device; rows are
// row-major [rows][hidden]; FP8 rows carry [rows][fp8Blocks(type, hidden)]
// scales, f32 or E8M0 bytes (WireFormat.h). Index arrays are int64. Work is enqueued on `stream`; errors are
// argument errors (InvalidArgument / InternalError) or launch failures
// (SystemError).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_CUDA_DEVICEROWS_H
#define MOECOMM_LIB_CUDA_DEVICEROWS_H

#include "Status.h"
#include "moecomm/moecomm.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace moecomm {
namespace cuda {

/// How gatherRowsDevice picks the input row of each output row.
struct GatherIndex {
  /// Device [out.rows]: the input row of each output row; a negative entry
  /// is an empty row. nullptr: identity (out.rows must equal in.rows).
  const int64_t *index = nullptr;
  /// Empty rows are left untouched (true) or written as zeros (false; FP8:
  /// zero codes and scale 1, as gatherRows does).
  bool skipEmpty = false;
};

/// out[i] = convert(in[index[i]]). Types: same type, f32/bf16 -> FP8, FP8 ->
/// f32/bf16; in.hidden == out.hidden. Index entries must be < in.rows (not
/// checked on the device: the plans guarantee it).
Status gatherRowsDevice(const moecommRows_t &in, const moecommRows_t &out,
                        const GatherIndex &gather, cudaStream_t stream);

/// A CSR row map in device memory (Plan.h's RowMap).
struct DeviceCsr {
  const int64_t *offsets = nullptr; ///< [out.rows + 1]
  const int64_t *src = nullptr;     ///< [terms]; a negative entry is skipped
  const float *coefs = nullptr;     ///< [terms], or nullptr: every c_j = 1
};

/// out[i] = sum over j in [offsets[i], offsets[i+1]) with src[j] >= 0 of
/// c_j * in[src[j]] (coefs nullptr: acc = acc + v), accumulated in f32 from
/// +0 in j order; an empty segment gives a zero row. in and out are f32 or
/// bf16 (any combination).
Status reduceRowsDevice(const moecommRows_t &in, const moecommRows_t &out,
                        const DeviceCsr &map, cudaStream_t stream);

//===--- Kernel launchers behind gatherRowsDevice (one per file) ---------===//

/// Same-type row copy (Pack.cu).
Status launchCopyRows(const moecommRows_t &in, const moecommRows_t &out,
                      const GatherIndex &gather, cudaStream_t stream);
/// f32/bf16 -> FP8 with block scales (Pack.cu).
Status launchQuantizeRows(const moecommRows_t &in, const moecommRows_t &out,
                          const GatherIndex &gather, cudaStream_t stream);
/// FP8 -> f32/bf16 (Unpack.cu).
Status launchDequantizeRows(const moecommRows_t &in, const moecommRows_t &out,
                            const GatherIndex &gather, cudaStream_t stream);

} // namespace cuda
} // namespace moecomm

#endif // MOECOMM_LIB_CUDA_DEVICEROWS_H

//===- KernelUtil.cuh - Launch shapes and vector row access -----*- CUDA
//-*-===//
//
// Shared by the row kernels (Pack.cu, Unpack.cu, Reduce.cu, ...): every row
// kernel runs one thread block per output row at a time (grid-stride over
// rows), its threads striding over the row's elements, so no thread divides
// by the row length. Vector forms move 8 elements per thread (16 bytes of
// bf16, 32 of f32, 8 of FP8) when the row length and base pointers allow.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_CUDA_KERNELUTIL_CUH
#define MOECOMM_LIB_CUDA_KERNELUTIL_CUH

#include "CudaCheck.h"
#include "moecomm/moecomm.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

namespace moecomm {
namespace cuda {

/// Threads per block of the row kernels.
constexpr int kRowThreads = 128;

/// Blocks for a grid-stride loop over `rows` rows: enough to fill every
/// multiprocessor (2048 resident threads each), at least 1.
inline int rowGrid(int64_t rows) {
  const int64_t cap = (int64_t)multiprocessorCount() * (2048 / kRowThreads);
  return (int)std::max<int64_t>(1, std::min<int64_t>(rows, cap));
}

/// Blocks for a grid-stride loop over `n` independent items with
/// `threads` threads per block.
inline int itemGrid(int64_t n, int threads) {
  const int64_t cap = (int64_t)multiprocessorCount() * (2048 / threads);
  return (int)std::max<int64_t>(
      1, std::min<int64_t>((n + threads - 1) / threads, cap));
}

inline bool isAligned(const void *p, uintptr_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

/// Launches a row kernel in its vector form when the row length
/// (`out.hidden`) is a multiple of 8 and `in`'s and `out`'s data are aligned
/// to `inAlign` and `outAlign` bytes (what its 8-element loads and stores
/// need), else in its scalar form: `launch(std::bool_constant<Vec>())`.
template <typename Launch>
void launchVectorOrScalar(const moecommRows_t &in, uintptr_t inAlign,
                          const moecommRows_t &out, uintptr_t outAlign,
                          Launch launch) {
  if (out.hidden % 8 == 0 && isAligned(in.data, inAlign) &&
      isAligned(out.data, outAlign))
    launch(std::true_type());
  else
    launch(std::false_type());
}

/// Launches the row kernel of the f32 or bf16 side of an FP8 conversion:
/// nothing for an empty `out`, else `launch(T())` with T float when
/// `hostType` is moecommFloat32 and __nv_bfloat16 otherwise (the only two
/// host types); the launch's status, named `kernel`.
template <typename Launch>
Status launchHostTyped(const moecommRows_t &out, moecommDataType_t hostType,
                       const char *kernel, Launch launch) {
  if (out.rows == 0 || out.hidden == 0)
    return Status::success();
  if (hostType == moecommFloat32)
    launch(float());
  else
    launch(__nv_bfloat16());
  return launchStatus(kernel);
}

//===--- Element conversions (exact widening, round-to-nearest-even) -----===//

__device__ __forceinline__ float toFloat(float v) { return v; }
__device__ __forceinline__ float toFloat(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ __forceinline__ void storeFloat(float *p, float v) { *p = v; }
__device__ __forceinline__ void storeFloat(__nv_bfloat16 *p, float v) {
  *p = __float2bfloat16_rn(v);
}

//===--- 8 consecutive elements ------------------------------------------===//

/// Loads p[0..8) as f32 (p 32-byte aligned for f32, 16 for bf16).
__device__ __forceinline__ void load8(const float *p, float (&v)[8]) {
  const float4 a = __ldg(reinterpret_cast<const float4 *>(p));
  const float4 b = __ldg(reinterpret_cast<const float4 *>(p) + 1);
  v[0] = a.x;
  v[1] = a.y;
  v[2] = a.z;
  v[3] = a.w;
  v[4] = b.x;
  v[5] = b.y;
  v[6] = b.z;
  v[7] = b.w;
}
__device__ __forceinline__ void load8(const __nv_bfloat16 *p, float (&v)[8]) {
  // A bf16 is the upper half of the f32 with the same value.
  const uint4 r = __ldg(reinterpret_cast<const uint4 *>(p));
  const uint32_t w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    v[2 * i] = __uint_as_float(w[i] << 16);
    v[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
  }
}

/// Stores v[0..8) to p (rounded to nearest even for bf16).
__device__ __forceinline__ void store8(float *p, const float (&v)[8]) {
  reinterpret_cast<float4 *>(p)[0] = make_float4(v[0], v[1], v[2], v[3]);
  reinterpret_cast<float4 *>(p)[1] = make_float4(v[4], v[5], v[6], v[7]);
}
__device__ __forceinline__ uint32_t packBf16x2(float lo, float hi) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t *>(&h);
}
__device__ __forceinline__ void store8(__nv_bfloat16 *p, const float (&v)[8]) {
  uint4 r;
  r.x = packBf16x2(v[0], v[1]);
  r.y = packBf16x2(v[2], v[3]);
  r.z = packBf16x2(v[4], v[5]);
  r.w = packBf16x2(v[6], v[7]);
  *reinterpret_cast<uint4 *>(p) = r;
}

} // namespace cuda
} // namespace moecomm

#endif // MOECOMM_LIB_CUDA_KERNELUTIL_CUH

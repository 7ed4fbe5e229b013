//===- Fp8Device.cuh - FP8 e4m3fn block scaling on the device ---*- CUDA
//-*-===//
//
// The device form of Fp8.h with cuda_fp8.h's conversions: scale =
// amax(block) / 448 for fp8_e4m3, a power of two stored as one E8M0 byte for
// fp8_e4m3_ue8m0 and mxfp8 (E8M0Scale.h), 1 for an all-zero block;
// q = e4m3fn(x / scale) rounded to nearest even and saturated to +-448
// (__NV_SATFINITE; on sm_89+ one cvt.rn.satfinite.e4m3x2.f32 instruction),
// x = q * scale. Divisions and products are the IEEE ones (__fdiv_rn,
// __fmul_rn) whatever the compiler flags, so the bits equal Fp8.cpp's (NaN
// payloads aside).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_CUDA_FP8DEVICE_CUH
#define MOECOMM_LIB_CUDA_FP8DEVICE_CUH

#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "E8M0Scale.h"
#include "moecomm/Model/WireFormat.h"
#include "moecomm/moecomm.h"

#include <cstdint>

namespace moecomm {
namespace cuda {

/// Largest finite e4m3fn value.
constexpr float kE4M3Max = 448.0f;

/// Elements per f32 scale of fp8_e4m3 rows (WireFormat.h).
constexpr int64_t kE4M3Block = MOECOMM_FP8_BLOCK;

/// The scale of a block whose largest magnitude is `amax` (NaNs ignored by
/// the caller's fmaxf).
__device__ __forceinline__ float blockScale(float amax) {
  return amax == 0.0f ? 1.0f : __fdiv_rn(amax, kE4M3Max);
}

/// One code: e4m3fn(v / scale).
__device__ __forceinline__ uint8_t encodeE4M3(float v, float scale) {
  return (uint8_t)__nv_cvt_float_to_fp8(__fdiv_rn(v, scale), __NV_SATFINITE,
                                        __NV_E4M3);
}

/// Four codes in one word, a in the lowest byte.
__device__ __forceinline__ uint32_t encodeE4M3x4(float a, float b, float c,
                                                 float d, float scale) {
  const __nv_fp8x2_storage_t lo = __nv_cvt_float2_to_fp8x2(
      make_float2(__fdiv_rn(a, scale), __fdiv_rn(b, scale)), __NV_SATFINITE,
      __NV_E4M3);
  const __nv_fp8x2_storage_t hi = __nv_cvt_float2_to_fp8x2(
      make_float2(__fdiv_rn(c, scale), __fdiv_rn(d, scale)), __NV_SATFINITE,
      __NV_E4M3);
  return (uint32_t)lo | ((uint32_t)hi << 16);
}

/// The value of one code (exact: every e4m3fn value is an f16 value).
__device__ __forceinline__ float decodeE4M3(uint8_t q) {
  const __half_raw h =
      __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)q, __NV_E4M3);
  return __half2float(__half(h));
}

/// The values of two codes packed in 16 bits (low byte -> .x).
__device__ __forceinline__ float2 decodeE4M3x2(uint32_t q2) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(
      (__nv_fp8x2_storage_t)(q2 & 0xFFFFu), __NV_E4M3);
  return __half22float2(__half2(h));
}

} // namespace cuda
} // namespace moecomm

#endif // MOECOMM_LIB_CUDA_FP8DEVICE_CUH

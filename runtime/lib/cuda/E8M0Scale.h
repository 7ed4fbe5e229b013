//===- E8M0Scale.h - E8M0 block scales for host and device ------*- C++ -*-===//
//
// The scale rules of the FP8 types with E8M0 scales (fp8_e4m3_ue8m0,
// mxfp8; Fp8.h states them and Fp8.cpp is the CPU reference) as
// __host__ __device__ functions on cuda_fp8.h's E8M0 conversions: the
// device kernels (Fp8Device.cuh) quantize with them, and
// Fp8HostConversionTest checks them against Fp8.cpp on the host, without a
// GPU (the conversions run on both sides: the library's emulation on the
// host and on older devices, one cvt.ue8m0x2 instruction specified to
// round the same way where the device has it).
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_CUDA_E8M0SCALE_H
#define MOECOMM_LIB_CUDA_E8M0SCALE_H

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "moecomm/moecomm.h"

#include <cmath>
#include <cstdint>

namespace moecomm {
namespace cuda {

/// The E8M0 byte of a scale of 1 (2^(127 - 127)): an all-zero block's.
constexpr uint8_t kE8M0One = 127;

/// The E8M0 byte (e + 127) of the scale of a block whose largest magnitude
/// is `amax` (>= 0, not NaN, possibly infinite) under FP8 type `type`'s
/// rule, as Fp8.cpp's: mxfp8 e = floor(log2 amax) - 8; fp8_e4m3_ue8m0 the
/// smallest e with 448 * 2^e >= amax; 0 for amax == 0, 127 for an infinite
/// amax; e clamped to [-127, 127]. floor(log2 amax) is cuda_fp8.h's E8M0
/// conversion rounding toward zero, which clamps it to [-127, 127] itself;
/// that only moves results that clamp anyway (an ilogb below -127 gives
/// e < -127 under both rules).
__host__ __device__ inline uint8_t e8m0ScaleByte(moecommDataType_t type,
                                                 float amax) {
  int e = 0;
  if (amax > 3.40282347e+38f) { // infinite
    e = 127;
  } else if (amax > 0.0f) {
    e = (int)__nv_cvt_float_to_e8m0(amax, __NV_SATFINITE, cudaRoundZero) -
        127 - 8;
    // 448 * 2^e is exact in double, as in Fp8.cpp.
    if (type == moecommFloat8E4M3UE8M0)
      while (scalbn(448.0, e) < (double)amax)
        ++e;
  }
  e = e < -127 ? -127 : e > 127 ? 127 : e;
  return (uint8_t)(e + 127);
}

/// The scale an E8M0 byte stands for, 2^(byte - 127), exactly (every E8M0
/// value is a bf16 value, 2^-127 a subnormal one; 255 is NaN).
__host__ __device__ inline float decodeE8M0(uint8_t byte) {
  return __bfloat162float(
      __nv_bfloat16(__nv_cvt_e8m0_to_bf16raw((__nv_fp8_storage_t)byte)));
}

} // namespace cuda
} // namespace moecomm

#endif // MOECOMM_LIB_CUDA_E8M0SCALE_H

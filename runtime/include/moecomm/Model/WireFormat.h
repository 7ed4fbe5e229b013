//===- WireFormat.h - Bytes of a row on the wire ----------------*- C++ -*-===//
//
// The size of one row of H elements in each wire format: f32 and bf16 rows
// are H elements; an FP8 row (e4m3fn codes) is H bytes plus one scale per
// block of the format's block size, the last block possibly partial:
//   fp8_e4m3        (moecommFloat8E4M3):      128-element blocks, f32 scales
//                   (DeepSeek-V3's 1x128 activation blocks);
//   fp8_e4m3_ue8m0  (moecommFloat8E4M3UE8M0): 128-element blocks, one E8M0
//                   byte each (DeepSeek-V3's power-of-two UE8M0 scales);
//   mxfp8           (moecommMxfp8):           32-element blocks, one E8M0
//                   byte each (OCP Microscaling v1.0 MXFP8).
// The dialect's scale shapes, the compiler's cost model, the runtime's
// buffers and its traffic counts all size rows with these functions.
//
// Library: moecomm_model (C++17, no dependencies). Namespace moecomm.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_MODEL_WIREFORMAT_H
#define MOECOMM_MODEL_WIREFORMAT_H

#include "moecomm/moecomm.h"

#include <cstdint>

namespace moecomm {

/// True for the FP8 wire types: e4m3fn codes with block scales.
constexpr bool isFp8(moecommDataType_t type) {
  return type == moecommFloat8E4M3 || type == moecommFloat8E4M3UE8M0 ||
         type == moecommMxfp8;
}

/// True for the FP8 types whose scales are E8M0 bytes (2^(byte - 127)).
constexpr bool hasE8M0Scales(moecommDataType_t type) {
  return type == moecommFloat8E4M3UE8M0 || type == moecommMxfp8;
}

/// Elements per scale block of an FP8 type (MOECOMM_FP8_BLOCK, or
/// MOECOMM_MXFP8_BLOCK for mxfp8); 0 for other types.
constexpr int64_t fp8BlockSize(moecommDataType_t type) {
  return type == moecommMxfp8 ? MOECOMM_MXFP8_BLOCK
         : isFp8(type)        ? MOECOMM_FP8_BLOCK
                              : 0;
}

/// Bytes of one scale of an FP8 type: 4 (f32) or 1 (E8M0); 0 for other
/// types.
constexpr int64_t fp8ScaleBytes(moecommDataType_t type) {
  return hasE8M0Scales(type) ? 1 : isFp8(type) ? 4 : 0;
}

/// Scale blocks of a row of `hidden` >= 0 elements of FP8 type `type`:
/// ceil(hidden / block), computed without forming hidden + block - 1 so
/// that it is defined for every int64 `hidden`; 0 for other types.
constexpr int64_t fp8Blocks(moecommDataType_t type, int64_t hidden) {
  const int64_t block = fp8BlockSize(type);
  return block == 0 ? 0 : hidden / block + (hidden % block != 0);
}

/// Bytes of the scales of one row of `hidden` >= 0 elements of `type` (0
/// for a type without scales; at most 2^58: defined for every int64
/// `hidden`).
constexpr int64_t fp8ScaleRowBytes(moecommDataType_t type, int64_t hidden) {
  return fp8ScaleBytes(type) * fp8Blocks(type, hidden);
}

/// Bytes of one row of `hidden` >= 0 elements of `type` on the wire:
/// hidden * sizeof(element); FP8: hidden + fp8ScaleRowBytes(type, hidden)
/// (fp8_e4m3: H + 4 * ceil(H / 128); fp8_e4m3_ue8m0: H + ceil(H / 128);
/// mxfp8: H + ceil(H / 32)). INT64_MAX
/// when that does not fit in int64 (a size from a hint, not from memory);
/// 0 for a type outside the enum.
int64_t wireRowBytes(moecommDataType_t type, int64_t hidden);

} // namespace moecomm

#endif // MOECOMM_MODEL_WIREFORMAT_H

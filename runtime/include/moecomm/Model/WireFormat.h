//===- WireFormat.h - Bytes of a row on the wire ----------------*- C++ -*-===//
//
// The size of one row of H elements in each wire format: f32 and bf16 rows
// are H elements; an FP8 (e4m3fn) row is H bytes plus one f32 scale per
// block of kFp8BlockSize elements, the last block possibly partial
// (DeepSeek-V3's 1x128 activation blocks). The dialect's scale shapes, the
// compiler's cost model, the runtime's buffers and its traffic counts all
// size rows with these functions.
//
// Library: moecomm_model (C++17, no dependencies). Namespace moecomm.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_MODEL_WIREFORMAT_H
#define MOECOMM_MODEL_WIREFORMAT_H

#include "moecomm/moecomm.h"

#include <cstdint>

namespace moecomm {

/// Elements per FP8 scale block (the C ABI's MOECOMM_FP8_BLOCK).
constexpr int64_t kFp8BlockSize = MOECOMM_FP8_BLOCK;

/// Scale blocks (f32 scales) of an FP8 row of `hidden` >= 0 elements:
/// ceil(hidden / 128), computed without forming hidden + 127 so that it is
/// defined for every int64 `hidden`.
constexpr int64_t fp8Blocks(int64_t hidden) {
  return hidden / kFp8BlockSize + (hidden % kFp8BlockSize != 0);
}

/// Bytes of the f32 scales of one FP8 row of `hidden` >= 0 elements (at most
/// 2^58: defined for every int64 `hidden`).
constexpr int64_t fp8ScaleRowBytes(int64_t hidden) {
  return 4 * fp8Blocks(hidden);
}

/// Bytes of one row of `hidden` >= 0 elements of `type` on the wire:
/// hidden * sizeof(element); FP8: hidden + 4 * fp8Blocks(hidden). INT64_MAX
/// when that does not fit in int64 (a size from a hint, not from memory);
/// 0 for a type outside the enum.
int64_t wireRowBytes(moecommDataType_t type, int64_t hidden);

} // namespace moecomm

#endif // MOECOMM_MODEL_WIREFORMAT_H

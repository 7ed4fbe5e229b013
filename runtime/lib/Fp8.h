//===- Fp8.h - FP8 e4m3fn block quantization --------------------*- C++ -*-===//
//
// e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities;
// 0x7F/0xFF are NaN; largest finite 448; smallest subnormal 2^-9.
// Rows are quantized per block of fp8BlockSize(type) elements, the last
// block possibly partial (WireFormat.h). With amax = max |x| over the block
// (NaNs ignored), each FP8 wire type has its own scale rule:
//   fp8_e4m3:       scale = amax / 448 in f32, stored as an f32;
//   fp8_e4m3_ue8m0: scale = 2^e with e the smallest integer such that
//                   amax / 2^e <= 448: DeepSeek-V3's UE8M0 scales, 2^ceil(
//                   log2(amax / 448)) (DeepGEMM's per_token_cast_to_fp8
//                   with use_ue8m0), so no element saturates;
//   mxfp8:          scale = 2^e with e = floor(log2(amax)) - 8, 8 being
//                   e4m3's largest exponent: OCP Microscaling Formats (MX)
//                   v1.0, §6.3 ("X = 2^(floor(log2(max_i |V_i|)) -
//                   emax_elem)"); elements up to amax / 2^e < 512 then
//                   saturate to 448 as the spec's conversion does;
// 1 for an all-zero block. An E8M0 scale is one byte, 2^(byte - 127), e
// clamped to [-127, 127]: an infinite amax gives 2^127 (its elements
// saturate), so 255 (NaN) is never written. q = e4m3fn(x / scale) rounded
// to nearest even and saturated to +-448 (the division by a power of two is
// exact); dequantized x = decode(q) * scale in f32.
//
//===----------------------------------------------------------------------===//
#ifndef MOECOMM_LIB_FP8_H
#define MOECOMM_LIB_FP8_H

#include "moecomm/Model/WireFormat.h"

#include <cstdint>

namespace moecomm {

/// Largest finite e4m3fn value.
constexpr float kFp8Max = 448.0f;

/// Encodes one f32 value: round to nearest even, saturating to +-448
/// (infinities too); NaN -> 0x7F (sign kept).
uint8_t fp8Encode(float v);

/// The 256 e4m3fn values (NaN for 0x7F and 0xFF).
const float *fp8Table();
inline float fp8Decode(uint8_t q) { return fp8Table()[q]; }

/// The scale an E8M0 byte stands for: 2^(byte - 127) (255: NaN).
float e8m0Decode(uint8_t byte);

/// Quantizes one row of `hidden` f32 values into q[hidden] and the
/// fp8Blocks(type, hidden) scales of FP8 wire type `type` at `scales`
/// (f32 or E8M0 bytes).
void fp8QuantizeRow(moecommDataType_t type, const float *x, int64_t hidden,
                    uint8_t *q, void *scales);
/// Same for a bf16 row (raw bits).
void fp8QuantizeRowBf16(moecommDataType_t type, const uint16_t *x,
                        int64_t hidden, uint8_t *q, void *scales);
/// out[h] = decode(q[h]) * scale of h's block, in f32.
void fp8DequantizeRow(moecommDataType_t type, const uint8_t *q,
                      const void *scales, int64_t hidden, float *out);
/// Same, rounded to bf16 (nearest even).
void fp8DequantizeRowBf16(moecommDataType_t type, const uint8_t *q,
                          const void *scales, int64_t hidden, uint16_t *out);
/// Writes the fp8Blocks(type, hidden) scales of a zero row (scale 1) at
/// `scales`.
void fp8FillUnitScales(moecommDataType_t type, int64_t hidden, void *scales);

} // namespace moecomm

#endif // MOECOMM_LIB_FP8_H

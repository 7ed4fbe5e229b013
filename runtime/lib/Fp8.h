//===- Fp8.h - FP8 e4m3fn block quantization --------------------*- C++ -*-===//
//
// e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities;
// 0x7F/0xFF are NaN; largest finite 448; smallest subnormal 2^-9.
// Rows are quantized per block of kFp8BlockSize (128) elements, the last
// block possibly partial (WireFormat.h): scale = amax(block) / 448 (1.0 if amax == 0),
// q = e4m3fn(x / scale) rounded to nearest even and saturated to +-448;
// dequantized x = q * scale (f32).
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

/// Quantizes one row of `hidden` f32 values into q[hidden] and
/// scales[fp8Blocks(hidden)].
void fp8QuantizeRow(const float *x, int64_t hidden, uint8_t *q, float *scales);
/// Same for a bf16 row (raw bits).
void fp8QuantizeRowBf16(const uint16_t *x, int64_t hidden, uint8_t *q,
                        float *scales);
/// out[h] = decode(q[h]) * scales[h / kFp8BlockSize] in f32.
void fp8DequantizeRow(const uint8_t *q, const float *scales, int64_t hidden,
                      float *out);
/// Same, rounded to bf16 (nearest even).
void fp8DequantizeRowBf16(const uint8_t *q, const float *scales, int64_t hidden,
                          uint16_t *out);

} // namespace moecomm

#endif // MOECOMM_LIB_FP8_H

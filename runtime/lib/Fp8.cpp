//===- Fp8.cpp - FP8 e4m3fn block quantization ----------------------------===//
#include "Fp8.h"
#include "RowKernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace moecomm {

uint8_t fp8Encode(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
  uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) // NaN
    return sign | 0x7F;
  if (a >= 0x43E00000u) // |v| >= 448 (and infinities): saturate
    return sign | 0x7E;
  if (a < 0x3C800000u) { // |v| < 2^-6: subnormal range, steps of 2^-9
    float f;
    std::memcpy(&f, &a, 4);
    f *= 512.0f; // exact: a power of two, f < 8
    // Round to nearest even integer (f < 2^23, default rounding mode).
    float r = (f + 8388608.0f) - 8388608.0f;
    return sign | (uint8_t)r; // 8 encodes 2^-6, the smallest normal
  }
  // Normal: exponent in [-6, 8], keep 3 of the 23 mantissa bits.
  uint32_t exp = (a >> 23) - 127 + 7;
  uint32_t mant = a & 0x7FFFFFu;
  uint32_t q = mant >> 20;
  uint32_t rem = mant & 0xFFFFFu;
  if (rem > 0x80000u || (rem == 0x80000u && (q & 1u)))
    ++q;
  uint32_t code = (exp << 3) + q; // a mantissa carry bumps the exponent
  if (code > 0x7Eu)
    code = 0x7Eu;
  return sign | (uint8_t)code;
}

const float *fp8Table() {
  static const struct Table {
    float v[256];
    Table() {
      for (int c = 0; c < 256; ++c) {
        int exp = (c >> 3) & 0xF, man = c & 7;
        float mag;
        if (exp == 0xF && man == 7)
          mag = std::nanf("");
        else if (exp == 0)
          mag = std::ldexp((float)man, -9);
        else
          mag = std::ldexp((float)(8 + man), exp - 10);
        v[c] = (c & 0x80) ? -mag : mag;
      }
    }
  } table;
  return table.v;
}

namespace {
template <typename Load>
void quantizeRow(Load load, int64_t hidden, uint8_t *q, float *scales) {
  for (int64_t b0 = 0, blk = 0; b0 < hidden; b0 += kFp8BlockSize, ++blk) {
    int64_t b1 = std::min<int64_t>(hidden, b0 + kFp8BlockSize);
    float amax = 0.0f;
    for (int64_t h = b0; h < b1; ++h)
      amax = std::max(amax, std::fabs(load(h)));
    float scale = amax == 0.0f ? 1.0f : amax / kFp8Max;
    scales[blk] = scale;
    for (int64_t h = b0; h < b1; ++h)
      q[h] = fp8Encode(load(h) / scale);
  }
}
} // namespace

void fp8QuantizeRow(const float *x, int64_t hidden, uint8_t *q, float *scales) {
  quantizeRow([x](int64_t h) { return x[h]; }, hidden, q, scales);
}

void fp8QuantizeRowBf16(const uint16_t *x, int64_t hidden, uint8_t *q,
                        float *scales) {
  quantizeRow([x](int64_t h) { return bf16ToF32(x[h]); }, hidden, q, scales);
}

void fp8DequantizeRow(const uint8_t *q, const float *scales, int64_t hidden,
                      float *out) {
  const float *table = fp8Table();
  for (int64_t h = 0; h < hidden; ++h)
    out[h] = table[q[h]] * scales[h / kFp8BlockSize];
}

void fp8DequantizeRowBf16(const uint8_t *q, const float *scales, int64_t hidden,
                          uint16_t *out) {
  const float *table = fp8Table();
  for (int64_t h = 0; h < hidden; ++h)
    out[h] = f32ToBf16(table[q[h]] * scales[h / kFp8BlockSize]);
}

} // namespace moecomm

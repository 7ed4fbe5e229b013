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

/// The E8M0 byte of the scale of a block whose largest magnitude is `amax`
/// (>= 0, possibly infinite) under `type`'s rule (fp8_e4m3_ue8m0 or mxfp8,
/// Fp8.h): e + 127.
static uint8_t e8m0ScaleOf(moecommDataType_t type, float amax) {
  int e = 0; // amax == 0: scale 1
  if (std::isinf(amax))
    e = 127;
  else if (amax > 0.0f && type == moecommMxfp8)
    e = std::ilogb(amax) - 8; // floor(log2(amax)), subnormals included
  else if (amax > 0.0f) {
    // The smallest e with 448 * 2^e >= amax: 448 < 2^9 puts it in
    // (ilogb(amax) - 9, ilogb(amax) - 6]; 448 * 2^e is exact in double.
    e = std::ilogb(amax) - 8;
    while (std::ldexp(448.0, e) < (double)amax)
      ++e;
  }
  return (uint8_t)(std::clamp(e, -127, 127) + 127);
}

float e8m0Decode(uint8_t byte) {
  return byte == 255 ? std::nanf("") : std::ldexp(1.0f, (int)byte - 127);
}

namespace {

/// Quantizes one row under `type`'s scale rule (Fp8.h); `load(h)` is
/// element h in f32.
template <typename Load>
void quantizeRow(moecommDataType_t type, Load load, int64_t hidden,
                 uint8_t *q, void *scales) {
  const int64_t block = fp8BlockSize(type);
  for (int64_t b0 = 0, blk = 0; b0 < hidden; b0 += block, ++blk) {
    int64_t b1 = std::min<int64_t>(hidden, b0 + block);
    float amax = 0.0f;
    for (int64_t h = b0; h < b1; ++h)
      amax = std::max(amax, std::fabs(load(h)));
    float scale;
    if (hasE8M0Scales(type)) {
      uint8_t byte = e8m0ScaleOf(type, amax);
      static_cast<uint8_t *>(scales)[blk] = byte;
      scale = e8m0Decode(byte);
    } else {
      scale = amax == 0.0f ? 1.0f : amax / kFp8Max;
      static_cast<float *>(scales)[blk] = scale;
    }
    for (int64_t h = b0; h < b1; ++h)
      q[h] = fp8Encode(load(h) / scale);
  }
}

/// The f32 scale of block `blk` of a row's scales.
float scaleAt(moecommDataType_t type, const void *scales, int64_t blk) {
  return hasE8M0Scales(type)
             ? e8m0Decode(static_cast<const uint8_t *>(scales)[blk])
             : static_cast<const float *>(scales)[blk];
}

/// out(h, x) for each element x = decode(q[h]) * scale of its block.
template <typename Store>
void dequantizeRow(moecommDataType_t type, const uint8_t *q,
                   const void *scales, int64_t hidden, Store store) {
  const float *table = fp8Table();
  const int64_t block = fp8BlockSize(type);
  for (int64_t b0 = 0, blk = 0; b0 < hidden; b0 += block, ++blk) {
    const float scale = scaleAt(type, scales, blk);
    for (int64_t h = b0, b1 = std::min<int64_t>(hidden, b0 + block); h < b1;
         ++h)
      store(h, table[q[h]] * scale);
  }
}

} // namespace

void fp8QuantizeRow(moecommDataType_t type, const float *x, int64_t hidden,
                    uint8_t *q, void *scales) {
  quantizeRow(type, [x](int64_t h) { return x[h]; }, hidden, q, scales);
}

void fp8QuantizeRowBf16(moecommDataType_t type, const uint16_t *x,
                        int64_t hidden, uint8_t *q, void *scales) {
  quantizeRow(type, [x](int64_t h) { return bf16ToF32(x[h]); }, hidden, q,
              scales);
}

void fp8DequantizeRow(moecommDataType_t type, const uint8_t *q,
                      const void *scales, int64_t hidden, float *out) {
  dequantizeRow(type, q, scales, hidden,
                [out](int64_t h, float v) { out[h] = v; });
}

void fp8DequantizeRowBf16(moecommDataType_t type, const uint8_t *q,
                          const void *scales, int64_t hidden, uint16_t *out) {
  dequantizeRow(type, q, scales, hidden,
                [out](int64_t h, float v) { out[h] = f32ToBf16(v); });
}

void fp8FillUnitScales(moecommDataType_t type, int64_t hidden, void *scales) {
  const int64_t nb = fp8Blocks(type, hidden);
  if (hasE8M0Scales(type))
    std::fill_n(static_cast<uint8_t *>(scales), nb, (uint8_t)127);
  else
    std::fill_n(static_cast<float *>(scales), nb, 1.0f);
}

} // namespace moecomm

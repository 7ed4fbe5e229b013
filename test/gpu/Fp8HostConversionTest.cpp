//===- Fp8HostConversionTest.cpp - cuda_fp8.h / cuda_bf16.h vs Fp8.cpp ----===//
//
// The GPU kernels convert with cuda_fp8.h / cuda_bf16.h (__NV_SATFINITE,
// round to nearest even). Those functions also run on the host (the
// library's reference emulation, the same code sm_80 builds run on the
// device; sm_89+ use one cvt instruction specified to round identically),
// so this test needs no GPU: it checks that they give the same bits as the
// runtime's CPU conversions for every bf16 value, a million random floats
// and every rounding midpoint of e4m3fn. NaN inputs only need to stay NaN
// (payload and sign bits of NaN codes may differ, as docs/gpu.md says).
// The E8M0 scale rules of the device kernels (E8M0Scale.h, on cuda_fp8.h's
// E8M0 conversions) give Fp8.cpp's scale bytes for every finite bf16
// magnitude, a million random floats, both sides of every 448 * 2^k and
// 2^k, subnormals and infinity, and decode every byte alike.
//
//===----------------------------------------------------------------------===//
#include "E8M0Scale.h"
#include "Fp8.h"
#include "RowKernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>

using namespace moecomm;

namespace {

float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint8_t cudaEncode(float v) {
  return (uint8_t)__nv_cvt_float_to_fp8(v, __NV_SATFINITE, __NV_E4M3);
}

void expectSameEncoding(float v) {
  const uint8_t want = fp8Encode(v), got = cudaEncode(v);
  if (std::isnan(v)) {
    EXPECT_EQ(got & 0x7F, 0x7F) << "NaN must stay NaN";
    return;
  }
  ASSERT_EQ(got, want) << "value " << v << " (bits 0x" << std::hex << [&] {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    return u;
  }();
}

TEST(Fp8HostConversion, EveryBf16ValueEncodesAlike) {
  for (uint32_t b = 0; b < 0x10000; ++b)
    expectSameEncoding(fromBits(b << 16));
}

TEST(Fp8HostConversion, RandomFloatsEncodeAlike) {
  std::mt19937 rng(12345);
  for (int i = 0; i < 1000000; ++i) {
    // Exponents concentrated where e4m3 lives (2^-12 .. 2^10).
    const uint32_t sign = rng() & 0x80000000u;
    const uint32_t exp = 115 + rng() % 22;
    const uint32_t mant = rng() & 0x7FFFFFu;
    expectSameEncoding(fromBits(sign | (exp << 23) | mant));
  }
}

TEST(Fp8HostConversion, MidpointsAndLimitsEncodeAlike) {
  const float *table = fp8Table();
  for (int c = 0; c < 0x7E; ++c) {
    const float lo = table[c], hi = table[c + 1];
    const float mid = (lo + hi) / 2; // exact: one more bit than e4m3
    for (float v : {mid, std::nextafter(mid, 0.0f),
                    std::nextafter(mid, 1000.0f), lo, hi}) {
      expectSameEncoding(v);
      expectSameEncoding(-v);
    }
  }
  for (float v : {448.0f, 464.0f, 465.0f, 1e30f, INFINITY, 0.0f, -0.0f,
                  std::ldexp(1.0f, -10), std::ldexp(1.0f, -11),
                  std::ldexp(3.0f, -11), 1e-40f}) {
    expectSameEncoding(v);
    expectSameEncoding(-v);
  }
  expectSameEncoding(NAN);
}

/// The same bits (any NaN for a NaN); `what` names the value.
void expectSameDecoding(float got, float want, const std::string &what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what;
    return;
  }
  EXPECT_EQ(std::memcmp(&got, &want, 4), 0)
      << what << ": " << got << " vs " << want;
}

TEST(Fp8HostConversion, EveryCodeDecodesAlike) {
  for (int c = 0; c < 256; ++c) {
    const __half_raw h =
        __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)c, __NV_E4M3);
    expectSameDecoding(__half2float(__half(h)), fp8Decode((uint8_t)c),
                       "code " + std::to_string(c));
  }
}

TEST(Fp8HostConversion, Bf16RoundingMatchesRowKernels) {
  std::mt19937 rng(7);
  for (int i = 0; i < 1000000; ++i) {
    const float v = fromBits(rng());
    const __nv_bfloat16 b = __float2bfloat16_rn(v);
    uint16_t got;
    std::memcpy(&got, &b, 2);
    const uint16_t want = f32ToBf16(v);
    if (std::isnan(v)) {
      EXPECT_EQ(got & 0x7F80, 0x7F80);
      EXPECT_NE(got & 0x7F, 0);
      continue;
    }
    ASSERT_EQ(got, want) << "value " << v;
  }
}

/// Fp8.cpp's E8M0 scale byte for a block whose largest magnitude is `amax`:
/// that of a one-element row holding it.
uint8_t hostScaleByte(moecommDataType_t type, float amax) {
  uint8_t q, byte;
  fp8QuantizeRow(type, &amax, 1, &q, &byte);
  return byte;
}

void expectSameScale(float amax) {
  for (moecommDataType_t type : {moecommFloat8E4M3UE8M0, moecommMxfp8})
    ASSERT_EQ(cuda::e8m0ScaleByte(type, amax), hostScaleByte(type, amax))
        << "type " << type << " amax " << amax << " (bits 0x" << std::hex
        << [&] {
             uint32_t u;
             std::memcpy(&u, &amax, 4);
             return u;
           }();
}

TEST(Fp8HostConversion, E8M0ScalesMatchFp8Cpp) {
  // Every non-negative bf16 value but NaN (subnormals, the largest, inf).
  for (uint32_t b = 0; b <= 0x7F80; ++b)
    expectSameScale(fromBits(b << 16));
  std::mt19937 rng(99);
  for (int i = 0; i < 1000000; ++i)
    expectSameScale(fromBits(rng() % 0x7F800000u));
  // Where the rules turn: 448 * 2^k (ue8m0) and 2^k (mxfp8), each with its
  // neighbours, over the whole float range.
  for (int k = -160; k <= 128; ++k)
    for (float edge : {std::ldexp(448.0f, k), std::ldexp(1.0f, k)})
      for (float v : {edge, std::nextafter(edge, 0.0f),
                      std::nextafter(edge, INFINITY)})
        expectSameScale(v);
}

TEST(Fp8HostConversion, EveryE8M0ByteDecodesAlike) {
  for (int b = 0; b < 256; ++b)
    expectSameDecoding(cuda::decodeE8M0((uint8_t)b), e8m0Decode((uint8_t)b),
                       "byte " + std::to_string(b));
}

} // namespace

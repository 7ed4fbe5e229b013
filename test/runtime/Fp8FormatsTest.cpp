//===- Fp8FormatsTest.cpp - The FP8 wire formats against llvm::APFloat ----===//
//
// An independent quantizer for each FP8 wire format (fp8_e4m3,
// fp8_e4m3_ue8m0, mxfp8), written with llvm::APFloat's Float8E4M3FN (the
// codes) and Float8E8M0FNU (the scale bytes) semantics, checks the
// runtime's codes and scales bit for bit through moecommQuantizeFp8 and
// moecommDequantizeFp8, and the reference's scale rule (ref::fp8BlockScale):
// partial last blocks, zeros, all-zero blocks, subnormal inputs, blocks at
// the saturation edge, infinities and NaNs. The scale rules are stated in
// runtime/lib/Fp8.h (DeepSeek-V3's UE8M0 scales; OCP MX v1.0 §6.3).
//
//===----------------------------------------------------------------------===//
#include "Fp8.h"
#include "RowKernels.h"
#include "moecomm/Reference/Reference.h"
#include "moecomm/moecomm.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>

using namespace moecomm;
using llvm::APFloat;

namespace {

constexpr moecommDataType_t kFormats[] = {
    moecommFloat8E4M3, moecommFloat8E4M3UE8M0, moecommMxfp8};

const APFloat::roundingMode kRne = APFloat::rmNearestTiesToEven;

/// The oracle's rows: codes and the raw bytes of the scales.
struct Quantized {
  std::vector<uint8_t> q;
  std::vector<uint8_t> scales;
};

APFloat toDouble(float v) {
  APFloat a(v);
  bool loses = false;
  a.convert(APFloat::IEEEdouble(), kRne, &loses);
  return a;
}

/// The E8M0 byte of 2^e per APFloat's Float8E8M0FNU.
uint8_t e8m0Byte(int e) {
  APFloat two = llvm::scalbn(APFloat(1.0), e, kRne);
  bool loses = false;
  two.convert(APFloat::Float8E8M0FNU(), kRne, &loses);
  EXPECT_FALSE(loses) << e;
  return (uint8_t)two.bitcastToAPInt().getZExtValue();
}

/// The power-of-two exponent of a block's E8M0 scale: 0 for amax 0,
/// fp8_e4m3_ue8m0 the smallest e with 448 * 2^e >= amax (a search over
/// E8M0's range), mxfp8 ilogb(amax) - 8; infinite amax 127.
int oracleExponent(moecommDataType_t type, const APFloat &amax) {
  if (amax.isZero())
    return 0;
  if (amax.isInfinity())
    return 127;
  if (type == moecommMxfp8)
    return std::clamp(llvm::ilogb(amax) - 8, -127, 127);
  for (int e = -127; e < 127; ++e)
    if (llvm::scalbn(APFloat(448.0), e, kRne).compare(amax) !=
        APFloat::cmpLessThan)
      return e;
  return 127;
}

/// e4m3fn code of v (double), saturated to +-448 first.
uint8_t oracleCode(APFloat v) {
  if (!v.isNaN()) {
    APFloat max(448.0);
    if (v.isNegative())
      max.changeSign();
    if ((v.isNegative() && v.compare(max) == APFloat::cmpLessThan) ||
        (!v.isNegative() && v.compare(max) == APFloat::cmpGreaterThan))
      v = max;
  }
  bool loses = false;
  v.convert(APFloat::Float8E4M3FN(), kRne, &loses);
  return (uint8_t)v.bitcastToAPInt().getZExtValue();
}

/// One row quantized under `type`'s rule, element by element with APFloat.
Quantized oracleQuantize(moecommDataType_t type, const std::vector<float> &x) {
  const int64_t H = (int64_t)x.size();
  const int64_t block = type == moecommMxfp8 ? 32 : 128;
  Quantized out;
  out.q.resize(H);
  for (int64_t b0 = 0; b0 < H; b0 += block) {
    const int64_t b1 = std::min(H, b0 + block);
    APFloat amax(0.0);
    for (int64_t h = b0; h < b1; ++h) {
      APFloat a = llvm::abs(toDouble(x[h]));
      if (!a.isNaN() && a.compare(amax) == APFloat::cmpGreaterThan)
        amax = a;
    }
    if (type == moecommFloat8E4M3) {
      // scale = amax / 448 in f32 (1 for amax 0); q = e4m3(x / scale in f32).
      APFloat scale(1.0f);
      if (!amax.isZero()) {
        scale = APFloat((float)amax.convertToDouble());
        scale.divide(APFloat(448.0f), kRne);
      }
      uint32_t bits = (uint32_t)scale.bitcastToAPInt().getZExtValue();
      for (int i = 0; i < 4; ++i)
        out.scales.push_back((uint8_t)(bits >> (8 * i))); // little endian
      for (int64_t h = b0; h < b1; ++h) {
        APFloat v(x[h]);
        v.divide(scale, kRne);
        bool loses = false;
        v.convert(APFloat::IEEEdouble(), kRne, &loses);
        out.q[h] = oracleCode(v);
      }
    } else {
      const int e = oracleExponent(type, amax);
      out.scales.push_back(e8m0Byte(e));
      for (int64_t h = b0; h < b1; ++h) // exact in double
        out.q[h] = oracleCode(llvm::scalbn(toDouble(x[h]), -e, kRne));
    }
  }
  return out;
}

/// decode(q) * scale of its block in f32, per APFloat.
float oracleDequantize(moecommDataType_t type, uint8_t q,
                       const uint8_t *scales, int64_t blk) {
  APFloat v(APFloat::Float8E4M3FN(), llvm::APInt(8, q));
  bool loses = false;
  v.convert(APFloat::IEEEsingle(), kRne, &loses);
  APFloat scale(0.0f);
  if (type == moecommFloat8E4M3) {
    uint32_t bits;
    std::memcpy(&bits, scales + 4 * blk, 4);
    scale = APFloat(APFloat::IEEEsingle(), llvm::APInt(32, bits));
  } else {
    scale = APFloat(APFloat::Float8E8M0FNU(), llvm::APInt(8, scales[blk]));
    scale.convert(APFloat::IEEEsingle(), kRne, &loses);
  }
  v.multiply(scale, kRne);
  return v.convertToFloat();
}

/// Quantizes `x` (one row, f32) with the C API and compares codes and scale
/// bytes with the oracle, NaN codes by their magnitude bits; then
/// dequantizes and compares with the oracle's products.
void checkFormat(moecommDataType_t type, const std::vector<float> &x) {
  SCOPED_TRACE(::testing::Message() << "type " << (int)type << " H "
                                    << x.size());
  const int64_t H = (int64_t)x.size();
  const Quantized want = oracleQuantize(type, x);
  ASSERT_EQ((int64_t)want.scales.size(), fp8ScaleRowBytes(type, H));
  ASSERT_EQ(wireRowBytes(type, H), H + (int64_t)want.scales.size());
  std::vector<uint8_t> q(H), scales(want.scales.size() + 4, 0xEE);
  moecommRows_t in{const_cast<float *>(x.data()), nullptr, 1, H,
                   moecommFloat32};
  moecommRows_t out{q.data(), scales.data(), 1, H, type};
  ASSERT_EQ(moecommQuantizeFp8(&in, &out), moecommSuccess)
      << moecommCommGetLastError(nullptr);
  for (size_t i = 0; i < want.scales.size(); ++i)
    ASSERT_EQ(scales[i], want.scales[i]) << "scale byte " << i;
  EXPECT_EQ(scales[want.scales.size()], 0xEE) << "wrote past the scales";
  for (int64_t h = 0; h < H; ++h) {
    if ((want.q[h] & 0x7F) == 0x7F) {
      ASSERT_EQ(q[h] & 0x7F, 0x7F) << "h " << h << " x " << x[h];
      continue;
    }
    ASSERT_EQ(q[h], want.q[h]) << "h " << h << " x " << x[h];
  }
  std::vector<float> deq(H);
  moecommRows_t dq{deq.data(), nullptr, 1, H, moecommFloat32};
  ASSERT_EQ(moecommDequantizeFp8(&out, &dq), moecommSuccess);
  const int64_t block = fp8BlockSize(type);
  for (int64_t h = 0; h < H; ++h) {
    float w = oracleDequantize(type, q[h], scales.data(), h / block);
    if (std::isnan(w))
      EXPECT_TRUE(std::isnan(deq[h])) << h;
    else
      EXPECT_EQ(std::memcmp(&deq[h], &w, 4), 0)
          << "h " << h << " " << deq[h] << " vs " << w;
  }
  // The reference's scale rule (what dispatch's oracle dequantizes with)
  // gives the same scales.
  for (int64_t b0 = 0, blk = 0; b0 < H; b0 += block, ++blk) {
    float amax = 0.0f;
    for (int64_t h = b0; h < std::min(H, b0 + block); ++h)
      amax = std::max(amax, std::fabs(x[h]));
    float r = ref::fp8BlockScale(type, amax);
    float got = type == moecommFloat8E4M3
                    ? reinterpret_cast<const float *>(scales.data())[blk]
                    : e8m0Decode(scales[blk]);
    EXPECT_EQ(std::memcmp(&r, &got, 4), 0) << "block " << blk;
  }
}

/// Rows of mixed magnitudes (so x / scale reaches e4m3's subnormals), exact
/// zeros, and an all-zero block when H has room for one.
std::vector<float> mixedRow(int64_t H, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(H);
  for (int64_t h = 0; h < H; ++h) {
    float mag = std::ldexp(1.0f, (int)(h % 23) - 12);
    x[h] = h % 17 == 0 ? 0.0f : normal(rng) * mag;
  }
  if (H >= 256)
    std::fill(x.begin() + 128, x.begin() + 256, 0.0f);
  return x;
}

TEST(Fp8Formats, E8M0DecodeMatchesAPFloat) {
  for (int b = 0; b < 256; ++b) {
    APFloat a(APFloat::Float8E8M0FNU(), llvm::APInt(8, b));
    const float got = e8m0Decode((uint8_t)b);
    if (a.isNaN()) { // 255 (LLVM 22 converts it to +inf, not NaN)
      EXPECT_TRUE(std::isnan(got)) << b;
      continue;
    }
    bool loses = false;
    a.convert(APFloat::IEEEsingle(), kRne, &loses);
    const float want = a.convertToFloat();
    EXPECT_EQ(std::memcmp(&want, &got, 4), 0) << "byte " << b;
  }
  EXPECT_EQ(e8m0Byte(0), 127);
  EXPECT_EQ(e8m0Byte(-127), 0);
  EXPECT_EQ(e8m0Byte(127), 254);
}

TEST(Fp8Formats, RowSizesPerFormat) {
  // Bytes per row: H + 4 * ceil(H / 128), H + ceil(H / 128), H + ceil(H / 32).
  for (int64_t H : {0, 1, 31, 32, 33, 127, 128, 129, 7168}) {
    EXPECT_EQ(wireRowBytes(moecommFloat8E4M3, H), H + 4 * ((H + 127) / 128));
    EXPECT_EQ(wireRowBytes(moecommFloat8E4M3UE8M0, H), H + (H + 127) / 128);
    EXPECT_EQ(wireRowBytes(moecommMxfp8, H), H + (H + 31) / 32);
    for (moecommDataType_t t : kFormats)
      EXPECT_EQ(wireRowBytes(t, H), ref::rowBytes(t, H)) << (int)t;
  }
  EXPECT_EQ(wireRowBytes(moecommMxfp8, 7168), 7168 + 224);
  EXPECT_EQ(wireRowBytes(moecommFloat8E4M3UE8M0, 7168), 7168 + 56);
}

TEST(Fp8Formats, MatchOracleForOddHiddenSizes) {
  for (moecommDataType_t type : kFormats)
    for (int64_t H : {1, 7, 31, 32, 33, 40, 127, 128, 129, 300, 7168})
      checkFormat(type, mixedRow(H, 11 * H + (int64_t)type));
}

TEST(Fp8Formats, MatchOracleOnZerosSubnormalsAndSaturationEdge) {
  const float minSub = std::ldexp(1.0f, -149), minNormal = FLT_MIN;
  const float maxF = FLT_MAX;
  std::vector<std::vector<float>> rows = {
      std::vector<float>(40, 0.0f),  // amax 0: scale 1, zero codes
      std::vector<float>(33, -0.0f), // signed zeros
      {minSub, -minSub, 0.0f, 3 * minSub},             // f32 subnormals
      {minNormal, std::nextafter(minNormal, 0.0f), 1.0f}, // wide block
      {448.0f, 1.0f, -0.5f},           // amax = 448: UE8M0 scale 1
      {std::nextafter(448.0f, 1e9f), 1.0f}, // just above: scale 2
      {511.0f, 480.0f, 464.0f, 449.0f, 256.0f}, // mxfp8: scale 1, saturation
      {-511.99f, 463.99f, 448.0f, 0.001f},
      {std::ldexp(1.0f, 20), std::ldexp(1.0f, -20)}, // one tiny in a block
      {maxF, -maxF, 1.0f},               // f32's extremes
      {INFINITY, 3.0f, -2.0f},           // infinite amax: scale 2^127
      {NAN, 5.0f, -NAN, 0.25f},          // NaNs keep NaN codes
  };
  for (moecommDataType_t type : kFormats)
    for (const std::vector<float> &x : rows)
      checkFormat(type, x);
  // Each power-of-two amax, across E8M0's range, partial blocks.
  for (moecommDataType_t type : {moecommFloat8E4M3UE8M0, moecommMxfp8})
    for (int e = -149; e <= 127; e += 3) {
      std::vector<float> x(45, 0.0f);
      x[3] = std::ldexp(1.0f, e);
      x[40] = -std::ldexp(1.5f, std::max(e - 1, -149));
      checkFormat(type, x);
    }
}

TEST(Fp8Formats, MatchOracleOnRandomBlocks) {
  std::mt19937_64 rng(99);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> exp(-140, 120), width(0, 30);
  for (moecommDataType_t type : kFormats)
    for (int i = 0; i < 60; ++i) {
      std::vector<float> x(1 + i * 7);
      const int e0 = exp(rng);
      for (float &v : x)
        v = std::ldexp(mant(rng), std::min(e0 + width(rng), 126)) *
            (rng() % 2 ? 1.0f : -1.0f);
      checkFormat(type, x);
    }
}

TEST(Fp8Formats, Bf16InputsAndErrors) {
  const int64_t rows = 2, H = 70;
  std::vector<float> xf(rows * H);
  std::vector<uint16_t> xb(rows * H);
  for (int64_t i = 0; i < rows * H; ++i) {
    xf[i] = ref::roundTo(std::cos((float)i) * std::ldexp(1.0f, (int)(i % 9)),
                         moecommBfloat16);
    xb[i] = f32ToBf16(xf[i]);
  }
  for (moecommDataType_t type : {moecommFloat8E4M3UE8M0, moecommMxfp8}) {
    const int64_t sb = fp8ScaleRowBytes(type, H);
    // Codes then scales of all rows, quantized from `data` of type `in`.
    auto quantize = [&](void *data, moecommDataType_t in) {
      std::vector<uint8_t> bytes(rows * (H + sb));
      moecommRows_t from{data, nullptr, rows, H, in};
      moecommRows_t to{bytes.data(), bytes.data() + rows * H, rows, H, type};
      EXPECT_EQ(moecommQuantizeFp8(&from, &to), moecommSuccess) << (int)in;
      return bytes;
    };
    const std::vector<uint8_t> fromF32 = quantize(xf.data(), moecommFloat32);
    EXPECT_EQ(quantize(xb.data(), moecommBfloat16), fromF32);
    // Row r's codes and scales are the oracle's for row r alone.
    for (int64_t r = 0; r < rows; ++r) {
      Quantized want = oracleQuantize(
          type, std::vector<float>(xf.begin() + r * H, xf.begin() + (r + 1) * H));
      EXPECT_TRUE(std::equal(want.q.begin(), want.q.end(),
                             fromF32.begin() + r * H)) << r;
      EXPECT_TRUE(std::equal(want.scales.begin(), want.scales.end(),
                             fromF32.begin() + rows * H + r * sb)) << r;
    }
    std::vector<uint8_t> q(rows * H);
    moecommRows_t noScales{q.data(), nullptr, rows, H, type};
    moecommRows_t inF{xf.data(), nullptr, rows, H, moecommFloat32};
    EXPECT_EQ(moecommQuantizeFp8(&inF, &noScales), moecommInvalidArgument);
    EXPECT_EQ(moecommDequantizeFp8(&noScales, &inF), moecommInvalidArgument);
  }
}

} // namespace

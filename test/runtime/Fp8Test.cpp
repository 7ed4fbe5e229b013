//===- Fp8Test.cpp - FP8 e4m3fn and bf16 against llvm::APFloat ------------===//
//
// DESIGN.md §5 oracle 6: the runtime's quantizer (runtime/lib/Fp8.cpp) and
// the reference's (table search) are compared with LLVM's independent
// APFloat implementation of Float8E4M3FN and BFloat.
//
//===----------------------------------------------------------------------===//
#include "Fp8.h"
#include "RowKernels.h"
#include "moecomm/Reference/Reference.h"
#include "moecomm/moecomm.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace moecomm;

namespace {

// e4m3fn code of v per APFloat; `overflow` set when APFloat overflows
// (|v| beyond the largest finite value after rounding).
uint8_t apfloatEncode(float v, bool &overflow) {
  llvm::APFloat a(v);
  bool loses = false;
  llvm::APFloat::opStatus st =
      a.convert(llvm::APFloat::Float8E4M3FN(),
                llvm::APFloat::rmNearestTiesToEven, &loses);
  overflow = (st & llvm::APFloat::opOverflow) != 0;
  return (uint8_t)a.bitcastToAPInt().getZExtValue();
}

float apfloatDecode(uint8_t code) {
  llvm::APFloat a(llvm::APFloat::Float8E4M3FN(), llvm::APInt(8, code));
  bool loses = false;
  a.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven,
            &loses);
  return a.convertToFloat();
}

uint16_t apfloatBf16(float v) {
  llvm::APFloat a(v);
  bool loses = false;
  a.convert(llvm::APFloat::BFloat(), llvm::APFloat::rmNearestTiesToEven,
            &loses);
  return (uint16_t)a.bitcastToAPInt().getZExtValue();
}

void expectEncodes(float v) {
  bool overflow = false;
  uint8_t want = apfloatEncode(v, overflow);
  if (std::isnan(v)) {
    EXPECT_EQ(fp8Encode(v) & 0x7F, 0x7F) << v;
    EXPECT_EQ(ref::fp8Encode(v) & 0x7F, 0x7F) << v;
    return;
  }
  if (overflow || std::fabs(v) > 448.0f) {
    // moecomm saturates where APFloat's fn semantics overflow to NaN.
    uint8_t sat = (uint8_t)((std::signbit(v) ? 0x80 : 0) | 0x7E);
    EXPECT_EQ(fp8Encode(v), sat) << v;
    EXPECT_EQ(ref::fp8Encode(v), sat) << v;
    return;
  }
  EXPECT_EQ(fp8Encode(v), want) << "v = " << v;
  EXPECT_EQ(ref::fp8Encode(v), want) << "v = " << v;
}

TEST(Fp8, DecodeTableMatchesAPFloat) {
  for (int c = 0; c < 256; ++c) {
    float want = apfloatDecode((uint8_t)c);
    float got = fp8Decode((uint8_t)c);
    float refGot = ref::fp8Decode((uint8_t)c);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << c;
      EXPECT_TRUE(std::isnan(refGot)) << c;
    } else {
      EXPECT_EQ(std::memcmp(&want, &got, 4), 0) << "code " << c;
      EXPECT_EQ(std::memcmp(&want, &refGot, 4), 0) << "code " << c;
    }
  }
  EXPECT_EQ(fp8Decode(0x7E), 448.0f);
  EXPECT_EQ(fp8Decode(0x01), std::ldexp(1.0f, -9));
}

TEST(Fp8, EncodeMatchesAPFloatOnEveryValueAndTie) {
  // Every finite code, the midpoints between neighbours (ties: round to the
  // even code), and the floats just around each midpoint.
  for (int c = 0; c < 0x7E; ++c) {
    float lo = fp8Decode((uint8_t)c), hi = fp8Decode((uint8_t)(c + 1));
    float mid = (lo + hi) / 2; // exact: few mantissa bits
    for (float v : {lo, hi, mid, std::nextafter(mid, 0.0f),
                    std::nextafter(mid, 1000.0f)}) {
      expectEncodes(v);
      expectEncodes(-v);
    }
  }
}

TEST(Fp8, EncodeMatchesAPFloatOnSubnormalsAndSaturation) {
  for (int k = 0; k <= 4096; ++k) // [0, 2^-6] in steps of 2^-18
    expectEncodes(std::ldexp((float)k, -18));
  for (float v :
       {0.0f, -0.0f, 448.0f, 449.0f, 463.99f, 464.0f, 465.0f, 480.0f, 1e6f,
        1e30f, INFINITY, -INFINITY, -449.0f, std::ldexp(1.0f, -10),
        std::ldexp(1.0f, -11), std::ldexp(3.0f, -11), std::ldexp(1.0f, -30)})
    expectEncodes(v);
  expectEncodes(NAN);
}

TEST(Fp8, EncodeMatchesAPFloatOnRandomValues) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> exp(-24, 10);
  for (int i = 0; i < 200000; ++i) {
    float v = std::ldexp(mant(rng), exp(rng));
    expectEncodes(i % 2 ? v : -v);
  }
}

// The 1x128 block quantizer, row by row, against APFloat.
void checkRow(const std::vector<float> &x) {
  const int64_t H = (int64_t)x.size(), nb = fp8Blocks(moecommFloat8E4M3, H);
  std::vector<uint8_t> q(H);
  std::vector<float> scales(nb), deq(H);
  fp8QuantizeRow(moecommFloat8E4M3, x.data(), H, q.data(), scales.data());
  fp8DequantizeRow(moecommFloat8E4M3, q.data(), scales.data(), H, deq.data());
  for (int64_t b = 0; b < nb; ++b) {
    float amax = 0;
    for (int64_t h = b * 128; h < std::min<int64_t>(H, (b + 1) * 128); ++h)
      amax = std::max(amax, std::fabs(x[h]));
    float scale = amax == 0 ? 1.0f : amax / 448.0f;
    EXPECT_EQ(std::memcmp(&scales[b], &scale, 4), 0) << "block " << b;
    for (int64_t h = b * 128; h < std::min<int64_t>(H, (b + 1) * 128); ++h) {
      bool overflow = false;
      uint8_t want = apfloatEncode(x[h] / scale, overflow);
      if (overflow)
        want = (uint8_t)((x[h] < 0 ? 0x80 : 0) | 0x7E);
      ASSERT_EQ(q[h], want) << "H " << H << " h " << h << " x " << x[h];
      // Dequantized within e4m3 rounding: half an ulp (2^-4 relative) for
      // normals, half the subnormal step (2^-10 * scale) below.
      double err = std::fabs((double)deq[h] - x[h]);
      EXPECT_LE(err, std::ldexp(std::fabs((double)x[h]), -4) +
                         std::ldexp((double)scale, -10) * 1.0000001)
          << "h " << h;
    }
  }
}

TEST(Fp8, BlockQuantizerMatchesAPFloatForOddHiddenSizes) {
  std::mt19937_64 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t H : {1, 7, 24, 127, 128, 129, 300, 7168}) {
    std::vector<float> x(H);
    for (int64_t h = 0; h < H; ++h) {
      // Mixed magnitudes inside a block so small values land in the
      // subnormal range of x / scale; some exact zeros.
      float mag = std::ldexp(1.0f, (int)(h % 23) - 12);
      x[h] = h % 17 == 0 ? 0.0f : normal(rng) * mag;
    }
    if (H >= 256) // one all-zero block: scale 1
      for (int64_t h = 128; h < 256; ++h)
        x[h] = 0.0f;
    SCOPED_TRACE(H);
    checkRow(x);
  }
}

TEST(Fp8, CApiQuantizeBf16AndF32Agree) {
  const int64_t rows = 3, H = 300;
  std::vector<float> xf(rows * H);
  std::vector<uint16_t> xb(rows * H);
  for (int64_t i = 0; i < rows * H; ++i) {
    // bf16-exact values with magnitudes that differ per row.
    float v = ref::roundTo(std::sin((float)i) *
                               std::ldexp(1.0f, (int)(i / H) * 5 - 3),
                           moecommBfloat16);
    xf[i] = v;
    xb[i] = f32ToBf16(v);
  }
  std::vector<uint8_t> qf(rows * H), qb(rows * H);
  std::vector<float> sf(rows * 3), sb(rows * 3);
  moecommRows_t inF{xf.data(), nullptr, rows, H, moecommFloat32};
  moecommRows_t inB{xb.data(), nullptr, rows, H, moecommBfloat16};
  moecommRows_t outF{qf.data(), sf.data(), rows, H, moecommFloat8E4M3};
  moecommRows_t outB{qb.data(), sb.data(), rows, H, moecommFloat8E4M3};
  ASSERT_EQ(moecommQuantizeFp8(&inF, &outF), moecommSuccess);
  ASSERT_EQ(moecommQuantizeFp8(&inB, &outB), moecommSuccess);
  EXPECT_EQ(qf, qb);
  EXPECT_EQ(sf, sb);
  for (int64_t r = 0; r < rows; ++r)
    checkRow(std::vector<float>(xf.begin() + r * H, xf.begin() + (r + 1) * H));
  // Dequantize to bf16 == dequantize to f32, rounded.
  std::vector<float> df(rows * H);
  std::vector<uint16_t> db(rows * H);
  moecommRows_t dF{df.data(), nullptr, rows, H, moecommFloat32};
  moecommRows_t dB{db.data(), nullptr, rows, H, moecommBfloat16};
  ASSERT_EQ(moecommDequantizeFp8(&outF, &dF), moecommSuccess);
  ASSERT_EQ(moecommDequantizeFp8(&outF, &dB), moecommSuccess);
  for (int64_t i = 0; i < rows * H; ++i)
    EXPECT_EQ(db[i], apfloatBf16(df[i])) << i;
  // Wrong types are errors, not crashes.
  EXPECT_EQ(moecommQuantizeFp8(&outF, &inF), moecommInvalidArgument);
  EXPECT_EQ(moecommDequantizeFp8(&inF, &outF), moecommInvalidArgument);
  moecommRows_t noScales{qf.data(), nullptr, rows, H, moecommFloat8E4M3};
  EXPECT_EQ(moecommQuantizeFp8(&inF, &noScales), moecommInvalidArgument);
  EXPECT_NE(std::string(moecommCommGetLastError(nullptr)), "");
  // Shapes taken from the rows themselves are checked too: negative counts,
  // and counts whose byte size overflows.
  for (auto [badRows, badHidden] : {std::pair<int64_t, int64_t>{-1, H},
                                    {rows, -H},
                                    {INT64_MAX / 2, H}}) {
    moecommRows_t in{xf.data(), nullptr, badRows, badHidden, moecommFloat32};
    moecommRows_t out{qf.data(), sf.data(), badRows, badHidden,
                      moecommFloat8E4M3};
    EXPECT_EQ(moecommQuantizeFp8(&in, &out), moecommInvalidArgument)
        << badRows << " x " << badHidden;
    EXPECT_EQ(moecommDequantizeFp8(&out, &in), moecommInvalidArgument)
        << badRows << " x " << badHidden;
  }
}

TEST(Bf16, RoundingMatchesAPFloat) {
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<uint32_t> bits;
  auto check = [](float v) {
    if (std::isnan(v))
      return;
    uint16_t want = apfloatBf16(v);
    EXPECT_EQ(f32ToBf16(v), want) << v;
    float r = ref::roundTo(v, moecommBfloat16);
    uint32_t u;
    std::memcpy(&u, &r, 4);
    EXPECT_EQ((uint16_t)(u >> 16), want) << v;
    EXPECT_EQ(u & 0xFFFF, 0u);
  };
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = bits(rng);
    float v;
    std::memcpy(&v, &u, 4);
    check(v);
  }
  // Ties in both directions, and overflow to infinity.
  for (uint32_t hi : {0x3F80u, 0x3F81u, 0x7F7Fu, 0x0001u, 0xBF80u, 0xBF81u}) {
    uint32_t u = (hi << 16) | 0x8000u;
    float v;
    std::memcpy(&v, &u, 4);
    check(v);
  }
  EXPECT_TRUE(std::isnan(bf16ToF32(f32ToBf16(NAN))));
}

} // namespace

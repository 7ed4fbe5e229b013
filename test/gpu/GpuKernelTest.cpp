//===- GpuKernelTest.cpp - Device row kernels and layout vs the CPU -------===//
//
// Every device kernel against its CPU reference in the runtime, bitwise:
//  - gather (same type, FP8 with scales), pack + quantize, unpack +
//    dequantize against gatherRows (RowKernels.cpp / Fp8.cpp), for every
//    FP8 type (fp8_e4m3's f32 scales, fp8_e4m3_ue8m0's and mxfp8's E8M0
//    bytes, whose scale rules meet their edge cases in E8M0ScaleEdges);
//  - the CSR f32 reduction against reduceRows (same order of IEEE ops, so
//    the stated bound for combine is 0 ulp here: bit-identical);
//  - the routing layout against pairCountsOfRank / summarizeRank and an
//    independent sort of the pairs (and Plan.cpp's per_expert pack).
// Row lengths cover the vector paths (H % 8 == 0, aligned) and the scalar
// ones (odd H, misaligned bases), partial FP8 blocks and empty rows.
//
//===----------------------------------------------------------------------===//
#include "GpuTestUtil.h"

#include "DeviceRows.h"
#include "Fp8.h"
#include "Layout.h"
#include "RowKernels.h"
#include "moecomm/Runtime/Plan.h"
#include "moecomm/moecomm_nccl.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>

using namespace moecomm;
using namespace moecomm::test;

namespace {

constexpr moecommDataType_t F32 = moecommFloat32, BF16 = moecommBfloat16,
                            FP8 = moecommFloat8E4M3,
                            UE8M0 = moecommFloat8E4M3UE8M0,
                            MXFP8 = moecommMxfp8;

const int64_t kHiddens[] = {1, 7, 8, 24, 127, 128, 129, 300, 1024, 7168};

/// Host rows with values over a wide range: per 128-block a random
/// exponent, some all-zero blocks, negative zeros, values near the FP8
/// rounding midpoints after scaling.
Rows randomRows(int64_t n, int64_t H, moecommDataType_t type, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(n * H);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t b0 = 0; b0 < H; b0 += 128) {
      const int mode = (int)(rng() % 8);
      const float scale = std::ldexp(1.0f, (int)(rng() % 60) - 30);
      for (int64_t h = b0; h < std::min(H, b0 + 128); ++h) {
        float x = u(rng) * scale;
        if (mode == 0)
          x = 0.0f; // an all-zero block: scale 1
        else if (mode == 1 && h % 3 == 0)
          x = -0.0f;
        else if (mode == 2)
          x = std::ldexp((float)(int)(u(rng) * 32), -12); // few distinct
        v[r * H + h] = x;
      }
    }
  return Rows::fromValues(v, H, type);
}

/// Random FP8 rows of FP8 type `type`: codes other than NaN, scales over a
/// wide range (E8M0: any byte but 255, NaN, which quantization never
/// writes).
Rows randomFp8(int64_t n, int64_t H, uint64_t seed,
               moecommDataType_t type = FP8) {
  std::mt19937_64 rng(seed);
  Rows r(n, H, type);
  for (auto &c : r.data) {
    uint8_t q = (uint8_t)rng();
    if ((q & 0x7F) == 0x7F)
      q ^= 1; // not NaN
    c = q;
  }
  if (type == FP8)
    for (float &s : r.scales)
      s = std::ldexp(1.0f + (float)(rng() % 1000) / 1000.0f,
                     (int)(rng() % 40) - 30);
  else
    for (int64_t k = 0; k < n * fp8Blocks(type, H); ++k)
      reinterpret_cast<uint8_t *>(r.scales.data())[k] = (uint8_t)(rng() % 255);
  return r;
}

/// A gather map of `outRows` rows over `inRows` inputs, every fifth row
/// empty (when allowed).
RowMap randomGather(int64_t outRows, int64_t inRows, bool empties,
                    uint64_t seed) {
  std::mt19937_64 rng(seed);
  RowMap m;
  for (int64_t i = 0; i < outRows; ++i) {
    if (!(empties && rng() % 5 == 0) && inRows > 0)
      m.addTerm((int64_t)(rng() % inRows));
    m.endRow();
  }
  return m;
}

std::vector<int64_t> gatherIndex(const RowMap &m) {
  std::vector<int64_t> idx(m.rows());
  for (int64_t i = 0; i < m.rows(); ++i)
    idx[i] = m.offsets[i + 1] > m.offsets[i] ? m.src[m.offsets[i]] : -1;
  return idx;
}

/// Runs the device gather of `in` through `map` (optionally with the input
/// and output offset by `shift` elements to break alignment) and the CPU
/// gather, and compares data and scales bitwise.
void checkGather(const Rows &in, moecommDataType_t outType, const RowMap &map,
                 int shift, const std::string &what) {
  SCOPED_TRACE(what);
  const int64_t H = in.rows.hidden;
  Rows want(map.rows(), H, outType);
  moecommRows_t wv = want.rows;
  ASSERT_TRUE(gatherRows(map, in.rows, wv).ok());

  // Device buffers one row (plus `shift` elements) larger, used from
  // `shift` elements in.
  Rows inPadded(in.rows.rows + 1, H, in.rows.type);
  const int64_t es = elementSize(in.rows.type);
  std::memcpy(inPadded.data.data() + shift * es, in.data.data(),
              in.rows.rows * H * es);
  if (isFp8(in.rows.type))
    std::copy(in.scales.begin(), in.scales.end(), inPadded.scales.begin());
  DeviceRows din = DeviceRows::from(inPadded);
  DeviceRows dout(map.rows() + 1, H, outType);
  moecommRows_t i = din.rows(), o = dout.rows();
  i.data = static_cast<uint8_t *>(i.data) + shift * es;
  i.rows = in.rows.rows;
  o.data = static_cast<uint8_t *>(o.data) + shift * elementSize(outType);
  o.rows = map.rows();
  DeviceArray<int64_t> idx(gatherIndex(map));
  Status st = cuda::gatherRowsDevice(i, o, cuda::GatherIndex{idx.data(), false},
                                     nullptr);
  ASSERT_TRUE(st.ok()) << st.message;
  Rows got = dout.toHost();
  const int64_t eo = elementSize(outType);
  std::vector<uint8_t> gotBytes(got.data.begin() + shift * eo,
                                got.data.begin() + shift * eo +
                                    map.rows() * H * eo);
  std::vector<uint8_t> wantBytes(want.data.begin(),
                                 want.data.begin() + map.rows() * H * eo);
  EXPECT_TRUE(sameBytes(gotBytes, wantBytes)) << "data";
  if (outType == FP8) {
    const int64_t nb = fp8Blocks(FP8, H);
    for (int64_t k = 0; k < map.rows() * nb; ++k)
      ASSERT_EQ(std::memcmp(&got.scales[k], &want.scales[k], 4), 0)
          << "scale " << k << ": " << got.scales[k] << " vs " << want.scales[k];
  } else if (isFp8(outType)) {
    const auto *g = reinterpret_cast<const uint8_t *>(got.scales.data());
    const auto *w = reinterpret_cast<const uint8_t *>(want.scales.data());
    for (int64_t k = 0; k < map.rows() * fp8Blocks(outType, H); ++k)
      ASSERT_EQ(g[k], w[k]) << "E8M0 scale " << k;
  }
}

/// "type T H N shift S" for a check's trace.
std::string caseName(const std::string &what, moecommDataType_t t, int64_t H,
                     int shift) {
  return what + " type " + std::to_string(t) + " H " +
         std::to_string(H) + " shift " + std::to_string(shift);
}

TEST(GpuKernels, GatherSameTypeIsACopy) {
  MOECOMM_REQUIRE_GPU();
  for (moecommDataType_t t : {F32, BF16})
    for (int64_t H : kHiddens)
      for (int shift : {0, 1}) {
        Rows in = randomRows(37, H, t, H * 7 + shift);
        checkGather(in, t, randomGather(53, 37, true, H), shift,
                    "type " + std::to_string(t) + " H " + std::to_string(H) +
                        " shift " + std::to_string(shift));
      }
  for (int64_t H : kHiddens) {
    Rows in = randomFp8(29, H, H);
    checkGather(in, FP8, randomGather(41, 29, true, H + 1), 0,
                "fp8 H " + std::to_string(H));
  }
}

TEST(GpuKernels, PackQuantizeMatchesFp8Cpp) {
  MOECOMM_REQUIRE_GPU();
  for (moecommDataType_t t : {F32, BF16})
    for (int64_t H : kHiddens)
      for (int shift : {0, 1}) {
        Rows in = randomRows(33, H, t, H * 13 + t + shift);
        checkGather(in, FP8, randomGather(47, 33, true, H + 5), shift,
                    "quantize type " + std::to_string(t) + " H " +
                        std::to_string(H) + " shift " + std::to_string(shift));
      }
}

TEST(GpuKernels, UnpackDequantizeMatchesFp8Cpp) {
  MOECOMM_REQUIRE_GPU();
  for (moecommDataType_t t : {F32, BF16})
    for (int64_t H : kHiddens)
      for (int shift : {0, 1}) {
        Rows in = randomFp8(31, H, H * 3 + shift);
        // Misalign the FP8 input only (its scales stay aligned).
        checkGather(in, t, randomGather(45, 31, true, H + 9), shift,
                    "dequantize type " + std::to_string(t) + " H " +
                        std::to_string(H) + " shift " + std::to_string(shift));
      }
}

// The E8M0 types: copies with their scale bytes, quantization (both scale
// rules, from f32 and bf16) and dequantization, bit for bit as Fp8.cpp.
TEST(GpuKernels, E8M0TypesMatchFp8Cpp) {
  MOECOMM_REQUIRE_GPU();
  for (moecommDataType_t fp8 : {UE8M0, MXFP8})
    for (int64_t H : kHiddens) {
      Rows copied = randomFp8(29, H, H + fp8, fp8);
      checkGather(copied, fp8, randomGather(41, 29, true, H + 2), 0,
                  caseName("copy", fp8, H, 0));
      for (moecommDataType_t t : {F32, BF16})
        for (int shift : {0, 1}) {
          Rows in = randomRows(33, H, t, H * 17 + t + fp8 + shift);
          checkGather(in, fp8, randomGather(47, 33, true, H + 5), shift,
                      caseName("quantize to " + std::to_string(fp8), t, H,
                               shift));
          Rows q = randomFp8(31, H, H * 5 + fp8 + shift, fp8);
          checkGather(q, t, randomGather(45, 31, true, H + 9), shift,
                      caseName("dequantize from " + std::to_string(fp8), t, H,
                               shift));
        }
    }
}

// Blocks whose amax sits where the E8M0 rules are easy to get wrong: at and
// just above 448 * 2^k (ue8m0 rounds up there), in [448, 512) * 2^k (mxfp8
// saturates), subnormal (ilogb below -126, where the scale clamps to
// 2^-127), the largest float, infinities; each row one amax, H = 300 so
// every format has a partial last block.
TEST(GpuKernels, E8M0ScaleEdges) {
  MOECOMM_REQUIRE_GPU();
  const float edges[] = {0.0f,
                         448.0f,
                         std::nextafter(448.0f, 1e9f),
                         std::ldexp(448.0f, -20),
                         std::nextafter(std::ldexp(448.0f, -20), 1.0f),
                         500.0f,
                         511.9f,
                         std::ldexp(448.0f, -127),
                         std::nextafter(std::ldexp(448.0f, -127), 1.0f),
                         std::ldexp(1.0f, -149),
                         std::ldexp(1.0f, -130),
                         std::ldexp(1.0f, -126),
                         std::numeric_limits<float>::max(),
                         std::numeric_limits<float>::infinity()};
  const int64_t H = 300;
  const int64_t n = sizeof(edges) / sizeof(edges[0]);
  std::vector<float> v(n * H);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t h = 0; h < H; ++h)
      // The amax, then smaller values of both signs in the block.
      v[r * H + h] = h % 32 == 5 ? edges[r]
                                 : (h % 2 ? -edges[r] : edges[r]) / 3.0f;
  for (moecommDataType_t t : {F32, BF16}) {
    Rows in = Rows::fromValues(v, H, t);
    for (moecommDataType_t fp8 : {UE8M0, MXFP8})
      checkGather(in, fp8, randomGather(n, n, false, 1), 0,
                  caseName("edges to " + std::to_string(fp8), t, H, 0));
  }
}

TEST(GpuKernels, SkippedRowsAreLeftUntouched) {
  MOECOMM_REQUIRE_GPU();
  const int64_t H = 256;
  for (moecommDataType_t out : {BF16, FP8}) {
    Rows in = randomRows(4, H, BF16, 3);
    DeviceRows din = DeviceRows::from(in);
    DeviceRows dout(3, H, out);
    DeviceArray<int64_t> idx(std::vector<int64_t>{2, -1, 0});
    ASSERT_TRUE(cuda::gatherRowsDevice(din.rows(), dout.rows(),
                                       cuda::GatherIndex{idx.data(), true},
                                       nullptr)
                    .ok());
    Rows got = dout.toHost();
    const int64_t eo = elementSize(out);
    for (int64_t b = H * eo; b < 2 * H * eo; ++b)
      ASSERT_EQ(got.data[b], 0xCD) << "byte " << b << " of the skipped row";
    if (out == FP8)
      EXPECT_EQ(got.scales[2], -7.0f) << "scale of the skipped row";
    Rows want(3, H, out);
    RowMap m;
    for (int64_t s : {2, -1, 0}) {
      if (s >= 0)
        m.addTerm(s);
      m.endRow();
    }
    moecommRows_t wv = want.rows;
    ASSERT_TRUE(gatherRows(m, in.rows, wv).ok());
    EXPECT_EQ(std::memcmp(got.data.data(), want.data.data(), H * eo), 0);
    EXPECT_EQ(std::memcmp(got.data.data() + 2 * H * eo,
                          want.data.data() + 2 * H * eo, H * eo),
              0);
  }
}

TEST(GpuKernels, ReduceMatchesReduceRowsBitwise) {
  MOECOMM_REQUIRE_GPU();
  for (moecommDataType_t ti : {F32, BF16})
    for (moecommDataType_t to : {F32, BF16})
      for (int64_t H : {(int64_t)1, (int64_t)24, (int64_t)129, (int64_t)7168})
        for (bool weighted : {false, true}) {
          SCOPED_TRACE("in " + std::to_string(ti) + " out " +
                       std::to_string(to) + " H " + std::to_string(H) +
                       (weighted ? " weighted" : ""));
          const int64_t inRows = 40, outRows = 23;
          Rows in = randomRows(inRows, H, ti, H + ti * 3 + to);
          std::mt19937_64 rng(H * 31 + weighted);
          // Device map: up to 9 terms, some skipped (-1); the CPU map is
          // the same without the skipped terms.
          RowMap dev, cpu;
          for (int64_t i = 0; i < outRows; ++i) {
            const int terms = (int)(rng() % 10);
            for (int j = 0; j < terms; ++j) {
              const float c =
                  std::ldexp((float)(int)(rng() % 2001) - 1000.0f, -10);
              const bool skip = rng() % 7 == 0;
              const int64_t s = (int64_t)(rng() % inRows);
              dev.addTerm(skip ? -1 : s, c);
              if (!skip)
                cpu.addTerm(s, c);
            }
            dev.endRow();
            cpu.endRow();
          }
          Rows want(outRows, H, to);
          moecommRows_t wv = want.rows;
          ASSERT_TRUE(reduceRows(cpu, in.rows, weighted, wv).ok());
          DeviceRows din = DeviceRows::from(in);
          DeviceRows dout(outRows, H, to);
          DeviceArray<int64_t> off(dev.offsets), src(dev.src);
          DeviceArray<float> coefs(dev.coefs);
          cuda::DeviceCsr m;
          m.offsets = off.data();
          m.src = src.data();
          m.coefs = weighted ? coefs.data() : nullptr;
          Status st =
              cuda::reduceRowsDevice(din.rows(), dout.rows(), m, nullptr);
          ASSERT_TRUE(st.ok()) << st.message;
          Rows got = dout.toHost();
          EXPECT_TRUE(sameBytes(got.data, want.data));
        }
}

TEST(GpuKernels, QuantizeDequantizeThroughTheCApi) {
  MOECOMM_REQUIRE_GPU();
  moecommComm_t comm = nullptr;
  ASSERT_EQ(moecommCommInitNcclSingle(&comm, -1), moecommSuccess)
      << moecommCommGetLastError(nullptr);
  const int64_t H = 300;
  Rows in = randomRows(9, H, BF16, 77);
  DeviceRows din = DeviceRows::from(in);
  // Every FP8 type (the E8M0 ones with their scale bytes).
  for (moecommDataType_t type : {FP8, UE8M0, MXFP8}) {
    SCOPED_TRACE("type " + std::to_string(type));
    DeviceRows q(9, H, type), back(9, H, BF16);
    EXPECT_EQ(moecommQuantizeFp8Device(comm, din.view(), q.view(), nullptr),
              moecommSuccess)
        << moecommCommGetLastError(comm);
    EXPECT_EQ(moecommDequantizeFp8Device(comm, q.view(), back.view(), nullptr),
              moecommSuccess)
        << moecommCommGetLastError(comm);
    Rows wantQ(9, H, type), wantBack(9, H, BF16);
    ASSERT_EQ(moecommQuantizeFp8(&in.rows, &wantQ.rows), moecommSuccess);
    ASSERT_EQ(moecommDequantizeFp8(&wantQ.rows, &wantBack.rows),
              moecommSuccess);
    Rows gotQ = q.toHost();
    EXPECT_TRUE(sameBytes(gotQ.data, wantQ.data));
    EXPECT_EQ(std::memcmp(gotQ.scales.data(), wantQ.scales.data(),
                          wantQ.scales.size() * 4),
              0);
    EXPECT_TRUE(sameBytes(back.toHost().data, wantBack.data));
  }
  // Host pointers are refused with a message naming the argument.
  DeviceRows q(9, H, FP8);
  EXPECT_EQ(moecommQuantizeFp8Device(comm, &in.rows, q.view(), nullptr),
            moecommInvalidArgument);
  EXPECT_NE(std::string(moecommCommGetLastError(comm)).find("host memory"),
            std::string::npos)
      << moecommCommGetLastError(comm);
  EXPECT_EQ(moecommCommDestroy(comm), moecommSuccess);
}

//===--- Routing layout --------------------------------------------------===//

struct LayoutCase {
  int W, G;
  int64_t E, T;
  int K;
  bool faults; ///< bad and repeated ids in some rows
};

TEST(GpuKernels, RoutingLayoutMatchesCpu) {
  MOECOMM_REQUIRE_GPU();
  const LayoutCase cases[] = {
      {1, 1, 8, 17, 3, false},   {4, 2, 32, 100, 8, false},
      {8, 4, 256, 513, 8, true}, {8, 1, 64, 0, 5, false},
      {16, 4, 64, 77, 6, true},  {2, 2, 2, 64, 2, true},
  };
  for (const LayoutCase &c : cases)
    for (moecommDataType_t idxType : {moecommInt32, moecommInt64}) {
      SCOPED_TRACE("W " + std::to_string(c.W) + " G " + std::to_string(c.G) +
                   " E " + std::to_string(c.E) + " T " + std::to_string(c.T) +
                   " K " + std::to_string(c.K) +
                   (idxType == moecommInt32 ? " int32" : " int64"));
      std::mt19937_64 rng(c.W * 1000 + c.T + c.K);
      const int64_t T = c.T, E = c.E, L = E / c.W, N = c.W / c.G;
      const int K = c.K;
      std::vector<int64_t> raw(T * K), clean(T * K);
      std::vector<float> w(T * K);
      int wantFlags = 0;
      for (int64_t t = 0; t < T; ++t)
        for (int k = 0; k < K; ++k) {
          int64_t e = (int64_t)(rng() % (E + 1)) - 1; // -1 .. E-1
          if (c.faults && rng() % 11 == 0)
            e = (rng() % 2) ? E + (int64_t)(rng() % 5) : -2; // bad
          if (c.faults && k > 0 && rng() % 9 == 0)
            e = raw[t * K + (int64_t)(rng() % k)]; // a repeat
          raw[t * K + k] = e;
          w[t * K + k] = (float)(rng() % 64) / 64.0f;
        }
      // The expected cleaning: bad ids and repeats of an earlier slot are
      // masked.
      for (int64_t t = 0; t < T; ++t)
        for (int k = 0; k < K; ++k) {
          const int64_t e = raw[t * K + k];
          bool valid = e >= 0 && e < E;
          if (e < -1 || e >= E)
            wantFlags |= MOECOMM_CAPACITY_BAD_EXPERT;
          for (int j = 0; valid && j < k; ++j)
            if (raw[t * K + j] == e) {
              valid = false;
              wantFlags |= MOECOMM_CAPACITY_DUPLICATE;
            }
          clean[t * K + k] = valid ? e : -1;
        }
      std::vector<int32_t> raw32(raw.begin(), raw.end());
      DeviceArray<int64_t> idx64(raw);
      DeviceArray<int32_t> idx32(raw32);
      DeviceArray<float> dw(w);
      DeviceArray<int32_t> dClean(T * K), dCounts(c.W * T + 1),
          dOffsets(c.W * T + 1), dExperts(E), dFlags(1);
      DeviceArray<float> dWeights(T * K);
      DeviceArray<int64_t> dRankTok(c.W), dNodeTok(N), dPos(T * K);
      size_t tempBytes = 0;
      ASSERT_TRUE(cuda::routingLayoutTempBytes(T, K, E, c.W, tempBytes).ok());
      DeviceArray<uint8_t> temp(std::max<size_t>(tempBytes, 1));
      cuda::RoutingLayoutArgs a;
      a.topkIdx = idxType == moecommInt32 ? (const void *)idx32.data()
                                          : (const void *)idx64.data();
      a.idxType = idxType;
      a.topkWeights = dw.data();
      a.numTokens = T;
      a.topk = K;
      a.numExperts = E;
      a.ranks = c.W;
      a.ranksPerNode = c.G;
      a.cleanIdx = dClean.data();
      a.weights = dWeights.data();
      a.tokenRankCounts = dCounts.data();
      a.tokenRankOffsets = dOffsets.data();
      a.expertCounts = dExperts.data();
      a.rankTokens = dRankTok.data();
      a.nodeTokens = dNodeTok.data();
      a.pairPos = dPos.data();
      a.flags = dFlags.data();
      a.temp = temp.data();
      a.tempBytes = tempBytes;
      Status st = cuda::computeRoutingLayout(a, nullptr);
      ASSERT_TRUE(st.ok()) << st.message;

      // CPU references on the cleaned routing.
      Topology topo;
      topo.ranks = c.W;
      topo.ranksPerNode = c.G;
      topo.numExperts = E;
      RoutingView view;
      view.numTokens = T;
      view.topk = K;
      view.topkIdx = clean.data();
      view.idxType = moecommInt64;
      std::vector<int64_t> pairs = pairCountsOfRank(topo, view);
      std::vector<uint8_t> mask(T * K);
      for (int64_t i = 0; i < T * K; ++i)
        mask[i] = clean[i] >= 0;
      std::vector<int64_t> rankTok(c.W), nodeTok(N);
      summarizeRank(topo, view, mask, rankTok.data(), nodeTok.data());
      std::vector<int32_t> experts(E, 0);
      for (int64_t e : clean)
        if (e >= 0)
          experts[e]++;
      // Positions: the pairs sorted by (rank, token, expert).
      std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>> order;
      for (int64_t t = 0; t < T; ++t)
        for (int k = 0; k < K; ++k)
          if (clean[t * K + k] >= 0)
            order.emplace_back(clean[t * K + k] / L, t, clean[t * K + k],
                               t * K + k);
      std::sort(order.begin(), order.end());
      std::vector<int64_t> pos(T * K, -1);
      for (size_t i = 0; i < order.size(); ++i)
        pos[std::get<3>(order[i])] = (int64_t)i;

      std::vector<int32_t> gotClean = dClean.toHost();
      for (int64_t i = 0; i < T * K; ++i)
        ASSERT_EQ(gotClean[i], clean[i]) << "slot " << i;
      EXPECT_EQ(dWeights.toHost(), w);
      EXPECT_EQ(dExperts.toHost(), experts) << "per-expert counts";
      std::vector<int32_t> off = dOffsets.toHost();
      for (int d = 0; d < c.W; ++d)
        EXPECT_EQ(off[(size_t)(d + 1) * T] - off[(size_t)d * T], pairs[d])
            << "pairs for rank " << d;
      EXPECT_EQ(off[(size_t)c.W * T], (int32_t)order.size()) << "all pairs";
      EXPECT_EQ(dRankTok.toHost(), rankTok) << "tokens per rank";
      EXPECT_EQ(dNodeTok.toHost(), nodeTok) << "tokens per node";
      EXPECT_EQ(dPos.toHost(), pos) << "pair positions";
      EXPECT_EQ(dFlags.toHost()[0], wantFlags);

      // Without faults the positions are Plan.cpp's per_expert send order.
      if (!c.faults && c.W > 1) {
        std::vector<RoutingView> views(c.W, view);
        std::vector<RankPlan> plans;
        ASSERT_EQ(buildPlans(topo, moecommPerExpert, 0, views, plans), "");
        const RowMap &pack = plans[0].dispatch.stages[0].pack;
        ASSERT_EQ(pack.rows(), (int64_t)order.size());
        for (size_t i = 0; i < order.size(); ++i)
          EXPECT_EQ(pack.src[pack.offsets[i]], std::get<1>(order[i]))
              << "plan row " << i;
      }
    }
}

} // namespace

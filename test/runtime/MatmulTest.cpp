//===- MatmulTest.cpp - moecomm_rt_matmul_f32 against a naive GEMM --------===//
//
// The expert GEMM that moecomm-matmul-to-blas emits (moecomm_compiled.h):
// C += A B or C += A B^T through OpenBLAS, on descriptors the way compiled
// code passes them (offsets, rows of a larger buffer), checked against a
// double-precision triple loop within f32 rounding; empty dimensions;
// malformed descriptors recorded as moecommInvalidArgument (and nothing
// computed after them); rank threads calling it at the same time.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"
#include "moecomm/moecomm_compiled.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace moecomm::test;

namespace {

/// A `rows` x `cols` window at (`row0`, `col0`) of a row-major buffer with
/// `ld` floats per row, as MLIR passes a subview of it.
moecommMemRef2D window(std::vector<float> &buffer, int64_t ld, int64_t row0,
                       int64_t col0, int64_t rows, int64_t cols) {
  return moecommMemRef2D{
      buffer.data(), buffer.data(), row0 * ld + col0, {rows, cols}, {ld, 1}};
}

float at(const std::vector<float> &buffer, const moecommMemRef2D &m, int64_t i,
         int64_t j) {
  return buffer[m.offset + i * m.strides[0] + j * m.strides[1]];
}

/// Deterministic values in [-1, 1) that no summation order adds exactly.
std::vector<float> values(size_t n, float phase) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = std::sin(0.37f * static_cast<float>(i) + phase);
  return v;
}

/// Clears this thread's recorded error (binding no communicator is allowed
/// for that; the GEMM needs none).
void clearRecordedError() { moecommCompiledBind(nullptr); }

/// Runs C += A op(B) through the runtime and checks every element of `cBuf`
/// against the naive product: inside C's window within f32 rounding of a
/// K-term sum, outside it unchanged.
void checkGemm(std::vector<float> &aBuf, moecommMemRef2D a,
               std::vector<float> &bBuf, moecommMemRef2D b,
               std::vector<float> &cBuf, moecommMemRef2D c, bool transposeB) {
  std::vector<float> before = cBuf;
  _mlir_ciface_moecomm_rt_matmul_f32(transposeB, &a, &b, &c);
  ASSERT_EQ(moecommCompiledStatus(), moecommSuccess)
      << moecommCompiledLastError();
  int64_t m = a.sizes[0], k = a.sizes[1], n = c.sizes[1];
  std::vector<bool> inside(cBuf.size(), false);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      size_t index = c.offset + i * c.strides[0] + j;
      inside[index] = true;
      double sum = before[index], magnitude = std::fabs(before[index]);
      for (int64_t p = 0; p < k; ++p) {
        double term = static_cast<double>(at(aBuf, a, i, p)) *
                      (transposeB ? at(bBuf, b, j, p) : at(bBuf, b, p, j));
        sum += term;
        magnitude += std::fabs(term);
      }
      // f32 accumulation in any order: within (K + 1) ulps of the terms'
      // magnitude.
      double bound = (k + 1) * 0x1p-23 * magnitude;
      EXPECT_NEAR(cBuf[index], sum, bound) << "C[" << i << "][" << j << "]";
    }
  for (size_t index = 0; index < cBuf.size(); ++index)
    if (!inside[index])
      EXPECT_EQ(cBuf[index], before[index]) << "outside C at " << index;
}

// C += A B and C += A B^T with odd sizes; C starts non-zero.
TEST(Matmul, OddSizesAccumulate) {
  for (bool transposeB : {false, true}) {
    clearRecordedError();
    const int64_t m = 5, k = 13, n = 3;
    auto aBuf = values(m * k, 0), bBuf = values(k * n, 1),
         cBuf = values(m * n, 2);
    moecommMemRef2D b =
        transposeB ? window(bBuf, k, 0, 0, n, k) : window(bBuf, n, 0, 0, k, n);
    checkGemm(aBuf, window(aBuf, k, 0, 0, m, k), bBuf, b, cBuf,
              window(cBuf, n, 0, 0, m, n), transposeB);
  }
}

// A segment of the received rows, one expert's weights inside a stacked
// tensor, and C a window of a wider buffer: offsets and row strides
// (leading dimensions) larger than the rows.
TEST(Matmul, OffsetsAndStridedRows) {
  for (bool transposeB : {false, true}) {
    clearRecordedError();
    const int64_t m = 6, k = 33, n = 17;
    auto aBuf = values(20 * 40, 0), bBuf = values(3 * 40 * 40, 1),
         cBuf = values(10 * 25, 2);
    moecommMemRef2D a = window(aBuf, 40, 4, 3, m, k);
    moecommMemRef2D b = transposeB ? window(bBuf, 40, 40 + 5, 2, n, k)
                                   : window(bBuf, 40, 40 + 5, 2, k, n);
    moecommMemRef2D c = window(cBuf, 25, 2, 4, m, n);
    checkGemm(aBuf, a, bBuf, b, cBuf, c, transposeB);
  }
}

// M = 0 (an expert that received no rows), N = 0, K = 0: nothing changes,
// no error, even without data.
TEST(Matmul, EmptyDimensions) {
  clearRecordedError();
  auto aBuf = values(4 * 3, 0), bBuf = values(3 * 2, 1),
       cBuf = values(4 * 2, 2);
  auto before = cBuf;
  moecommMemRef2D a0{nullptr, nullptr, 0, {0, 3}, {3, 1}};
  moecommMemRef2D c0{nullptr, nullptr, 0, {0, 2}, {2, 1}};
  moecommMemRef2D b = window(bBuf, 2, 0, 0, 3, 2);
  _mlir_ciface_moecomm_rt_matmul_f32(0, &a0, &b, &c0);
  moecommMemRef2D a = window(aBuf, 3, 0, 0, 4, 3);
  moecommMemRef2D bN{nullptr, nullptr, 0, {3, 0}, {0, 1}};
  moecommMemRef2D cN{nullptr, nullptr, 0, {4, 0}, {0, 1}};
  _mlir_ciface_moecomm_rt_matmul_f32(0, &a, &bN, &cN);
  moecommMemRef2D aK{nullptr, nullptr, 0, {4, 0}, {0, 1}};
  moecommMemRef2D bK{nullptr, nullptr, 0, {0, 2}, {2, 1}};
  moecommMemRef2D c = window(cBuf, 2, 0, 0, 4, 2);
  _mlir_ciface_moecomm_rt_matmul_f32(0, &aK, &bK, &c);
  EXPECT_EQ(moecommCompiledStatus(), moecommSuccess)
      << moecommCompiledLastError();
  EXPECT_EQ(cBuf, before);
}

/// Runs one call with operands made by `edit` from a valid 4x3 x 3x2 GEMM
/// and returns the recorded error message (the status must be
/// InvalidArgument and C unchanged).
template <typename Edit> std::string rejected(Edit edit, int32_t trans = 0) {
  clearRecordedError();
  auto aBuf = values(4 * 3, 0), bBuf = values(3 * 2, 1),
       cBuf = values(4 * 2, 2);
  auto before = cBuf;
  moecommMemRef2D a = window(aBuf, 3, 0, 0, 4, 3);
  moecommMemRef2D b = window(bBuf, 2, 0, 0, 3, 2);
  moecommMemRef2D c = window(cBuf, 2, 0, 0, 4, 2);
  moecommMemRef2D *pa = &a, *pb = &b, *pc = &c;
  edit(pa, pb, pc);
  _mlir_ciface_moecomm_rt_matmul_f32(trans, pa, pb, pc);
  EXPECT_EQ(moecommCompiledStatus(), moecommInvalidArgument);
  EXPECT_EQ(cBuf, before);
  return moecommCompiledLastError();
}

TEST(Matmul, MalformedDescriptorsAreInvalidArguments) {
  using R = moecommMemRef2D *&;
  EXPECT_EQ(rejected([](R a, R, R) { a->strides[1] = 2; }),
            "compiled code passed GEMM operand A (sizes [4, 3], strides [3, "
            "2]): its rows are not contiguous (inner stride is not 1)");
  EXPECT_EQ(rejected([](R, R b, R) { b->strides[0] = 1; }),
            "compiled code passed GEMM operand B (sizes [3, 2], strides [1, "
            "1]): its row stride is below the row length or above 2^31 - 1");
  EXPECT_EQ(rejected([](R, R, R c) { c->sizes[0] = -1; }),
            "compiled code passed GEMM operand C (sizes [-1, 2], strides [2, "
            "1]): a size is outside [0, 2^31 - 1]");
  EXPECT_EQ(rejected([](R, R, R c) { c->sizes[1] = int64_t(1) << 31; }),
            "compiled code passed GEMM operand C (sizes [4, 2147483648], "
            "strides [2, 1]): a size is outside [0, 2^31 - 1]");
  EXPECT_EQ(rejected([](R a, R, R) { a->aligned = nullptr; }),
            "compiled code passed GEMM operand A (sizes [4, 3], strides [3, "
            "1]): it has elements but no data");
  EXPECT_EQ(rejected([](R, R, R c) { c->offset = -1; }),
            "compiled code passed GEMM operand C (sizes [4, 2], strides [2, "
            "1]): its offset is negative");
  EXPECT_EQ(rejected([](R, R b, R) { b = nullptr; }),
            "compiled code passed no descriptor for GEMM operand B");
  EXPECT_EQ(rejected([](R, R, R c) { c->sizes[1] = 1; }),
            "compiled code passed a GEMM of mismatched shapes: C [4][1] += A "
            "[4][3] x B with B [3][2]");
  // B [3][2] read as [N][K] = [3][2] does not fit A's K = 3.
  EXPECT_EQ(rejected([](R, R, R) {}, 1),
            "compiled code passed a GEMM of mismatched shapes: C [4][2] += A "
            "[4][3] x B^T with B [3][2]");
  EXPECT_EQ(rejected([](R, R, R) {}, 2),
            "compiled code passed GEMM transposeB 2 (0 or 1)");
}

// After a recorded error the thread's compiled calls do nothing, this one
// included; the first message stays.
TEST(Matmul, NothingAfterARecordedError) {
  std::string first = rejected([](moecommMemRef2D *&a, moecommMemRef2D *&,
                                  moecommMemRef2D *&) { a->strides[1] = 2; });
  auto aBuf = values(2 * 2, 0), bBuf = values(2 * 2, 1),
       cBuf = values(2 * 2, 2);
  auto before = cBuf;
  moecommMemRef2D a = window(aBuf, 2, 0, 0, 2, 2),
                  b = window(bBuf, 2, 0, 0, 2, 2),
                  c = window(cBuf, 2, 0, 0, 2, 2);
  _mlir_ciface_moecomm_rt_matmul_f32(0, &a, &b, &c);
  EXPECT_EQ(cBuf, before);
  EXPECT_EQ(moecommCompiledStatus(), moecommInvalidArgument);
  EXPECT_EQ(moecommCompiledLastError(), first);
}

// Rank threads call it at the same time (one BLAS thread each), each on its
// own operands, large enough for OpenBLAS's blocked kernels.
TEST(Matmul, ConcurrentRankThreads) {
  runOnThreads(4, 2, [](moecommComm_t comm, int rank) {
    ASSERT_EQ(moecommCompiledBind(comm), moecommSuccess);
    const int64_t m = 64 + rank, k = 96, n = 80;
    auto aBuf = values(m * k, rank), bBuf = values(n * k, rank + 1.0f),
         cBuf = values(m * n, rank + 2.0f);
    bool transposeB = rank % 2 == 1;
    moecommMemRef2D b =
        transposeB ? window(bBuf, k, 0, 0, n, k) : window(bBuf, n, 0, 0, k, n);
    checkGemm(aBuf, window(aBuf, k, 0, 0, m, k), bBuf, b, cBuf,
              window(cBuf, n, 0, 0, m, n), transposeB);
  });
}

} // namespace

//===- CompiledDeviceGpuTest.cpp - The device form on a CUDA device -------===//
//
// The layer of test/runtime/CompiledDeviceTest.cpp (runCompiledDevice: a
// dispatch + combine made as a cuda-target graph makes it) on the CUDA
// device of a single-rank nccl communicator, on a non-default stream:
// cudaMallocAsync'd buffers, the collectives on the stream, recv weights
// through the copy primitive. Checked against the oracle like the host
// device's run, and the combine bit-identical to the runtime's CPU result.
// Also the cuBLAS GEMM against OpenBLAS's. Skipped without a GPU.
//
//===----------------------------------------------------------------------===//
#include "CompiledDeviceRun.h"
#include "GpuTestUtil.h"

#include "moecomm/moecomm_compiled.h"

#include <gtest/gtest.h>

using namespace moecomm;
using namespace moecomm::test;

namespace {

class CompiledDeviceGpu : public NcclSingleRankTest {};

TEST_F(CompiledDeviceGpu, DispatchCombineMatchesTheOracle) {
  forEveryStrategy(f32Spec(1, 1, 12), [&](const Expected &exp, int32_t strategy,
                                          const std::vector<RankRun> &host) {
    checkCompiledDeviceRun(exp, 0,
                           runCompiledDevice(comm_, exp, 0, strategy, stream_),
                           host[0].combineW);
  });
}

// C += A B^T on cuBLAS (FP32 math) equals OpenBLAS's result on small
// integers (exact in f32 either way).
TEST_F(CompiledDeviceGpu, GemmOnCublas) {
  ASSERT_EQ(moecommCompiledBindDevice(comm_, stream_), moecommSuccess)
      << moecommCompiledLastError();
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {1, 0, 1, 0, 1, 0},
                     c = {10, 20, 30, 40};
  void *da = nullptr, *db = nullptr, *dc = nullptr;
  ASSERT_EQ(moecommCompiledDeviceAlloc(24, &da), moecommSuccess);
  ASSERT_EQ(moecommCompiledDeviceAlloc(24, &db), moecommSuccess);
  ASSERT_EQ(moecommCompiledDeviceAlloc(16, &dc), moecommSuccess);
  moecommCompiledDeviceCopy(da, a.data(), 24);
  moecommCompiledDeviceCopy(db, b.data(), 24);
  moecommCompiledDeviceCopy(dc, c.data(), 16);
  moecommMemRef2D aRef{da, da, 0, {2, 3}, {3, 1}},
      bRef{db, db, 0, {2, 3}, {3, 1}}, cRef{dc, dc, 0, {2, 2}, {2, 1}};
  _mlir_ciface_moecomm_rt_matmul_f32(1, &aRef, &bRef, &cRef);
  // [2][3] x [3][2] without the transpose: B viewed as [3][2].
  moecommMemRef2D b32{db, db, 0, {3, 2}, {2, 1}};
  moecommMemRef2D c2{dc, dc, 0, {2, 2}, {2, 1}};
  _mlir_ciface_moecomm_rt_matmul_f32(0, &aRef, &b32, &c2);
  ASSERT_EQ(moecommCompiledDeviceCopy(c.data(), dc, 16), moecommSuccess);
  // A B^T = [4 2; 10 5], A B' (B' = [1 0; 1 0; 1 0]) = [6 0; 15 0].
  EXPECT_EQ(c, (std::vector<float>{20, 22, 55, 45}));
  EXPECT_EQ(moecommCompiledDeviceSynchronize(), moecommSuccess);
  EXPECT_EQ(moecommCompiledStatus(), moecommSuccess)
      << moecommCompiledLastError();
  for (void *p : {da, db, dc})
    EXPECT_EQ(moecommCompiledFree(p), moecommSuccess);
}

} // namespace

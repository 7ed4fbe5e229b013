//===- NcclAvailabilityTest.cpp - The nccl entry points in every build ----===//
//
// Built with and without the GPU backend, run with and without a GPU; what
// is checked depends on which of the three situations this is:
//  - built without CUDA/NCCL: every moecomm_nccl.h call says so
//    (moecommUnsupported, "built without CUDA/NCCL");
//  - built with them, no usable device: creation is moecommUnsupported with
//    "no CUDA device: ..." (never an abort);
//  - a device: a device ordinal that does not exist is InvalidArgument.
// Calls on a CPU communicator are refused in every build.
//
//===----------------------------------------------------------------------===//
#include "moecomm/moecomm.h"
#include "moecomm/moecomm_nccl.h"

#include <gtest/gtest.h>

#include <string>

#ifdef MOECOMM_HAVE_NCCL
#include <cuda_runtime_api.h>
#endif

namespace {

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

#ifdef MOECOMM_HAVE_NCCL
bool haveDevice() {
  int n = 0;
  bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  (void)cudaGetLastError();
  return ok;
}
#endif

TEST(NcclAvailability, CreationReportsWhatIsMissing) {
  moecommComm_t comm = reinterpret_cast<moecommComm_t>(0x1);
#ifndef MOECOMM_HAVE_NCCL
  EXPECT_EQ(moecommCommInitNcclSingle(&comm, 0), moecommUnsupported);
  EXPECT_TRUE(
      contains(moecommCommGetLastError(nullptr), "built without CUDA/NCCL"))
      << moecommCommGetLastError(nullptr);
  EXPECT_EQ(comm, nullptr);
#else
  if (!haveDevice()) {
    EXPECT_EQ(moecommCommInitNcclSingle(&comm, 0), moecommUnsupported);
    EXPECT_TRUE(
        contains(moecommCommGetLastError(nullptr), "rank 0: no CUDA device"))
        << moecommCommGetLastError(nullptr);
    EXPECT_EQ(comm, nullptr);
  } else {
    EXPECT_EQ(moecommCommInitNcclSingle(&comm, 100000), moecommInvalidArgument);
    EXPECT_EQ(std::string(moecommCommGetLastError(nullptr))
                  .rfind("rank 0: CUDA device 100000 does not exist", 0),
              0u)
        << moecommCommGetLastError(nullptr);
    EXPECT_EQ(comm, nullptr);
    EXPECT_EQ(moecommCommInitNcclSingle(&comm, -5), moecommInvalidArgument);
  }
#endif
  EXPECT_EQ(moecommCommInitNcclSingle(nullptr, 0), moecommInvalidArgument);
}

TEST(NcclAvailability, CapacityCallsOnACpuCommunicator) {
  moecommThreadGroup_t g = nullptr;
  ASSERT_EQ(moecommThreadGroupCreate(1, 1, &g), moecommSuccess);
  moecommComm_t c = nullptr;
  ASSERT_EQ(moecommCommInitThreadRank(&c, g, 0), moecommSuccess);
  moecommCapacityDesc_t d{};
  d.numTokens = 1;
  d.topk = 1;
  d.numExperts = 1;
  d.capacity = 1;
  d.hidden = 1;
  d.idxType = moecommInt64;
  d.dataType = moecommFloat32;
  d.wireType = moecommFloat32;
  moecommCapacityPlan_t plan = reinterpret_cast<moecommCapacityPlan_t>(0x1);
#ifdef MOECOMM_HAVE_NCCL
  EXPECT_EQ(moecommCapacityPlanCreate(c, &d, &plan), moecommInvalidArgument);
  EXPECT_EQ(std::string(moecommCommGetLastError(c)),
            "rank 0: capacity plans need a communicator of backend nccl");
#else
  EXPECT_EQ(moecommCapacityPlanCreate(c, &d, &plan), moecommUnsupported);
  EXPECT_TRUE(contains(moecommCommGetLastError(c), "built without CUDA/NCCL"));
#endif
  EXPECT_EQ(plan, nullptr);
  EXPECT_EQ(moecommCapacityDispatch(nullptr, nullptr, nullptr, nullptr, nullptr,
                                    nullptr),
            moecommInvalidArgument);
  EXPECT_EQ(std::string(moecommCommGetLastError(nullptr)), "plan is NULL");
  // Streams stay refused on the CPU backends.
  int64_t counts[1] = {0};
  float buf[1] = {0};
  moecommRows_t rows{buf, nullptr, 0, 1, moecommFloat32};
  EXPECT_EQ(moecommAllToAll(c, &rows, counts, &rows, counts,
                            reinterpret_cast<moecommStream_t>(0x1)),
            moecommInvalidArgument);
  EXPECT_EQ(moecommCommDestroy(c), moecommSuccess);
  EXPECT_EQ(moecommThreadGroupDestroy(g), moecommSuccess);
}

} // namespace

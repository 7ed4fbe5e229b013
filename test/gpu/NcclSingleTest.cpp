//===- NcclSingleTest.cpp - The nccl backend with one rank on one GPU -----===//
//
// The W = 1 path end to end through the C API on a communicator of backend
// nccl (moecommCommInitNcclSingle): layout from host and from device
// routing, one-shot / staged / start-wait dispatch and combine with device
// rows on a non-default stream, checked by the runtime tests' oracles
// (checkRank: bit-exact against Reference.h). Also the self all_to_all
// through ncclSend / ncclRecv, out-of-order waits, and the errors of device
// calls (host pointers, wrong backend).
//
//===----------------------------------------------------------------------===//
#include "GpuTestUtil.h"

#include "moecomm/moecomm_nccl.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace moecomm;
using namespace moecomm::test;

namespace {

constexpr moecommDataType_t F32 = moecommFloat32, BF16 = moecommBfloat16,
                            FP8 = moecommFloat8E4M3,
                            UE8M0 = moecommFloat8E4M3UE8M0,
                            MXFP8 = moecommMxfp8;

/// A single-rank nccl communicator and a stream, for one test.
class NcclSingle : public NcclSingleRankTest {};

CaseSpec single(int64_t E, int K, int64_t H, moecommDataType_t data,
                moecommDataType_t wire, RoutingKind rk, int64_t T,
                int64_t capacity = 0) {
  const uint64_t seed = E * 3 + K * 5 + H + T;
  return CaseSpec{1, 1, E, K, H, data, wire, rk, T, capacity, true, seed};
}

TEST_F(NcclSingle, Queries) {
  moecommBackend_t b;
  int rank = -1, size = -1, g = -1, dev = -1, current = -2;
  EXPECT_EQ(moecommCommBackend(comm_, &b), moecommSuccess);
  EXPECT_EQ(b, moecommBackendNccl);
  EXPECT_EQ(moecommCommRank(comm_, &rank), moecommSuccess);
  EXPECT_EQ(moecommCommSize(comm_, &size), moecommSuccess);
  EXPECT_EQ(moecommCommRanksPerNode(comm_, &g), moecommSuccess);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(size, 1);
  EXPECT_EQ(g, 1);
  EXPECT_EQ(moecommCommCudaDevice(comm_, &dev), moecommSuccess);
  cudaGetDevice(&current);
  EXPECT_EQ(dev, current);
  int64_t v[2] = {3, 4};
  EXPECT_EQ(moecommAllReduceSum(comm_, v, 2), moecommSuccess);
  EXPECT_EQ(v[0], 3);
  EXPECT_EQ(moecommBarrier(comm_), moecommSuccess);
}

TEST_F(NcclSingle, OraclesHoldForEveryStrategy) {
  using RK = RoutingKind;
  // Expert segments padded to `align` rows (empty rows of the unpack).
  auto alignedTo = [](CaseSpec c, int64_t align) {
    c.align = align;
    return c;
  };
  // Replicated experts (docs/runtime.md): the choice is made on the host
  // from device routing and a device placement, the plan uploaded.
  auto placed = [](CaseSpec c, moecommReplicaChoice_t choice) {
    c.slotExperts = {0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 7};
    c.choice = choice;
    return c;
  };
  const CaseSpec cells[] = {
      single(4, 1, 1, F32, F32, RK::Uniform, 5),
      single(8, 3, 300, BF16, FP8, RK::UniformMasked, 7),
      single(16, 5, 129, BF16, FP8, RK::Skewed, 33),
      single(64, 8, 7168, BF16, BF16, RK::Uniform, 9),
      single(64, 8, 7168, BF16, FP8, RK::Uniform, 12),
      single(12, 6, 24, F32, F32, RK::OneExpert, 10, 7),
      single(8, 2, 24, BF16, BF16, RK::AllMasked, 6),
      single(8, 2, 24, BF16, FP8, RK::Uniform, 0),
      alignedTo(single(8, 3, 300, BF16, FP8, RK::UniformMasked, 7), 16),
      alignedTo(single(12, 6, 24, F32, F32, RK::OneExpert, 10, 7), 128),
      // The E8M0 wires (device quantization in their formats), H not a
      // multiple of 32 or 128.
      single(8, 3, 300, BF16, UE8M0, RK::UniformMasked, 7),
      single(16, 5, 129, F32, MXFP8, RK::Skewed, 33),
      single(8, 2, 24, BF16, MXFP8, RK::OneExpert, 0),
      placed(single(8, 3, 300, BF16, FP8, RK::UniformMasked, 7),
             moecommReplicaLocality),
      placed(single(8, 2, 24, F32, F32, RK::OneExpert, 9, 5),
             moecommReplicaLoadOnly),
  };
  for (const CaseSpec &cs : cells)
    for (moecommStrategy_t s :
         {moecommPerExpert, moecommFlat, moecommHierarchical, moecommAuto})
      for (bool deviceRouting : {false, true}) {
        SCOPED_TRACE(cs.name() + " strategy " + std::to_string(s) +
                     (deviceRouting ? " device routing" : " host routing"));
        Expected exp = computeExpected(makeProblem(cs));
        RankRun run = runRankDevice(comm_, exp, s, 0, stream_, deviceRouting);
        checkRank(exp, s, 0, run);
      }
}

TEST_F(NcclSingle, SelfAllToAllGoesThroughNccl) {
  const int64_t H = 130; // two FP8 blocks, the last partial
  const int64_t n = 5;
  Rows send(n, H, FP8);
  for (int64_t r = 0; r < n; ++r) {
    std::memset(&send.data[r * H], (int)(17 + r), H);
    send.scales[r * 2] = (float)r;
    send.scales[r * 2 + 1] = 0.5f * (float)r;
  }
  DeviceRows ds = DeviceRows::from(send), dr(n, H, FP8);
  int64_t counts[1] = {n};
  moecommCommResetTraffic(comm_);
  EXPECT_EQ(
      moecommAllToAll(comm_, ds.view(), counts, dr.view(), counts, stream_),
      moecommSuccess)
      << lastError();
  Rows got = dr.toHost();
  EXPECT_TRUE(sameBytes(got.data, send.data));
  EXPECT_EQ(std::memcmp(got.scales.data(), send.scales.data(), n * 2 * 4), 0);
  moecommTraffic_t t;
  moecommCommGetTraffic(comm_, 0, &t);
  EXPECT_EQ(t.bytes[moecommDirectionAllToAll][moecommScopeGlobal][0], 0u)
      << "a copy to self is not traffic";
  // Counts that do not match the rows: an error before anything moves.
  int64_t wrong[1] = {n + 1};
  EXPECT_EQ(moecommAllToAll(comm_, ds.view(), wrong, dr.view(), wrong, stream_),
            moecommInvalidArgument);
}

TEST_F(NcclSingle, RequestsWaitedInReverseOrder) {
  CaseSpec cs = single(32, 4, 256, BF16, FP8, RoutingKind::Uniform, 64);
  Expected exp = computeExpected(makeProblem(cs));
  const ref::Problem &p = exp.problem;
  moecommLayoutDesc_t d = descFor(p, 0, moecommPerExpert);
  moecommLayout_t l = nullptr;
  ASSERT_EQ(moecommLayoutCreate(comm_, &d, &l), moecommSuccess) << lastError();
  moecommLayoutInfo_t info{};
  moecommLayoutGetInfo(l, &info);
  DeviceRows x = DeviceRows::from(Rows::fromValues(exp.x[0], p.hidden, BF16));
  Rows yh = Rows::fromValues(exp.y[0], p.hidden, BF16);
  DeviceRows y = DeviceRows::from(yh);
  DeviceRows r1(info.recvRows, p.hidden, BF16),
      r2(info.recvRows, p.hidden, BF16);
  DeviceRows o1(p.routing[0].numTokens, p.hidden, BF16);
  moecommRequest_t q[3] = {};
  EXPECT_EQ(
      moecommDispatchStart(comm_, l, x.view(), FP8, r1.view(), stream_, &q[0]),
      moecommSuccess);
  EXPECT_EQ(
      moecommCombineStart(comm_, l, y.view(), 1, o1.view(), stream_, &q[1]),
      moecommSuccess);
  EXPECT_EQ(
      moecommDispatchStart(comm_, l, x.view(), FP8, r2.view(), stream_, &q[2]),
      moecommSuccess);
  // Destroying the communicator with requests outstanding is refused.
  EXPECT_EQ(moecommCommDestroy(comm_), moecommInvalidArgument);
  for (int i = 2; i >= 0; --i)
    EXPECT_EQ(moecommWait(q[i]), moecommSuccess);
  EXPECT_TRUE(sameBits(r1.values(), exp.dispatch[0]));
  EXPECT_TRUE(sameBits(r2.values(), exp.dispatch[0]));
  EXPECT_TRUE(sameBits(o1.values(), exp.combineW[0]));
  EXPECT_EQ(moecommLayoutDestroy(l), moecommSuccess);
}

TEST_F(NcclSingle, HostPointersAndBadArgumentsAreErrors) {
  CaseSpec cs = single(8, 2, 16, F32, F32, RoutingKind::Uniform, 4);
  Expected exp = computeExpected(makeProblem(cs));
  const ref::Problem &p = exp.problem;
  moecommLayoutDesc_t d = descFor(p, 0, moecommFlat);
  moecommLayout_t l = nullptr;
  ASSERT_EQ(moecommLayoutCreate(comm_, &d, &l), moecommSuccess) << lastError();
  moecommLayoutInfo_t info{};
  moecommLayoutGetInfo(l, &info);
  Rows hostX = Rows::fromValues(exp.x[0], p.hidden, F32);
  DeviceRows x = DeviceRows::from(hostX);
  DeviceRows recv(info.recvRows, p.hidden, F32);
  EXPECT_EQ(moecommDispatch(comm_, l, hostX.view(), F32, recv.view(), stream_),
            moecommInvalidArgument);
  EXPECT_EQ(lastError(), "rank 0: x is host memory; the nccl backend needs "
                         "device pointers");
  Rows hostRecv(info.recvRows, p.hidden, F32);
  EXPECT_EQ(moecommDispatch(comm_, l, x.view(), F32, hostRecv.view(), stream_),
            moecommInvalidArgument);
  EXPECT_EQ(lastError(), "rank 0: recv is host memory; the nccl backend "
                         "needs device pointers");
  // A bad expert id in device routing: the same message as on the CPU.
  std::vector<int64_t> idx = p.routing[0].topkIdx;
  idx[3] = 99;
  DeviceArray<int64_t> didx(idx);
  moecommLayoutDesc_t bad = d;
  bad.topkIdx = didx.data();
  moecommLayout_t l2 = nullptr;
  EXPECT_EQ(moecommLayoutCreate(comm_, &bad, &l2), moecommInvalidArgument);
  EXPECT_EQ(lastError(), "rank 0 token 1 slot 1: expert id 99 out of range "
                         "[-1, 8)");
  EXPECT_EQ(l2, nullptr);
  // Still usable afterwards.
  EXPECT_EQ(moecommDispatch(comm_, l, x.view(), F32, recv.view(), stream_),
            moecommSuccess)
      << lastError();
  EXPECT_TRUE(sameBits(recv.values(), exp.dispatch[0]));
  EXPECT_EQ(moecommLayoutDestroy(l), moecommSuccess);
}

TEST(NcclSingleErrors, DeviceCallsOnACpuCommunicator) {
  // Needs no GPU: a threads communicator refuses the device calls.
  moecommThreadGroup_t g = nullptr;
  ASSERT_EQ(moecommThreadGroupCreate(1, 1, &g), moecommSuccess);
  moecommComm_t c = nullptr;
  ASSERT_EQ(moecommCommInitThreadRank(&c, g, 0), moecommSuccess);
  int dev = 0;
  EXPECT_EQ(moecommCommCudaDevice(c, &dev), moecommInvalidArgument);
  EXPECT_EQ(std::string(moecommCommGetLastError(c)),
            "the communicator is not of backend nccl");
  Rows a(1, 4, F32), b(1, 4, FP8);
  EXPECT_EQ(moecommQuantizeFp8Device(c, a.view(), b.view(), nullptr),
            moecommInvalidArgument);
  EXPECT_EQ(std::string(moecommCommGetLastError(c)),
            "rank 0: the communicator is not of backend nccl");
  EXPECT_EQ(moecommCommDestroy(c), moecommSuccess);
  EXPECT_EQ(moecommThreadGroupDestroy(g), moecommSuccess);
}

} // namespace
